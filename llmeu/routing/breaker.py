"""Endpoint health: a circuit breaker per endpoint, driven by attempt outcomes.

After `failure_threshold` consecutive failures that say the endpoint is sick,
the circuit opens and the router stops sending to the endpoint. After
`cooldown` seconds one call is let through as a probe (half-open): success
closes the circuit, failure opens it for another cooldown. Time is passed in,
so the logic is pure.

Which failures count. The streak is the failures since the endpoint's last
success (a success from any key ends it). A failure counts at once when no
request could have caused it:

- `CONNECTION`, `TIMEOUT`: the endpoint did not answer, or not in time;
- `REFUSED` (upstream 401/403/404): our credentials or model, the same for all.

A 5xx (`SERVER_ERROR`) or an upstream 429 (`RATE_LIMITED`) may instead be the
upstream choking on one tenant's requests or volume. Those count only once
the streak is corroborated: its failures come from at least two keys, or the
one key they come from is the only key that called the endpoint in the last
`caller_window` seconds. So one tenant sending requests an upstream answers
with 500 cannot close the endpoint for everyone else, while a gateway with a
single tenant (or a single application key) still stops hammering an endpoint
that answers only 5xx: when nobody else calls, that key's evidence is all
there is, and opening the circuit holds back only the key that produced it.

A failure reported without a kind or a key (`UNCLASSIFIED`, `key_id=None`)
counts at once, as every retryable failure did before kinds existed. The keys
whose calls are in the streak when the circuit opens are kept, and shown by
`describe(..., keys=True)` — to the admin only: key ids are tenant data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from llmeu.errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable
from llmeu.routing.router import Health

CALLER_WINDOW = 60.0
"""Seconds a key counts as calling an endpoint after its last attempt there."""


class FailureKind(StrEnum):
    CONNECTION = "connection"
    TIMEOUT = "timeout"
    REFUSED = "refused"
    SERVER_ERROR = "server_error"
    RATE_LIMITED = "rate_limited"
    UNCLASSIFIED = "unclassified"

    @property
    def needs_corroboration(self) -> bool:
        """Whether one key's requests alone could have caused it."""
        return self in (FailureKind.SERVER_ERROR, FailureKind.RATE_LIMITED)


def failure_kind(error: UpstreamError) -> FailureKind:
    """What a retryable upstream failure says about the endpoint."""
    status = error.upstream_status
    if isinstance(error, UpstreamTimeout):
        return FailureKind.TIMEOUT
    if status is None:
        return (
            FailureKind.CONNECTION
            if isinstance(error, UpstreamUnavailable)
            else FailureKind.UNCLASSIFIED
        )
    if status == 429:
        return FailureKind.RATE_LIMITED
    if status >= 500:
        return FailureKind.SERVER_ERROR
    return FailureKind.REFUSED


@dataclass(slots=True)
class _State:
    failures: int = 0  # in the streak, counted or not
    counted: int = 0  # of which count whoever caused them
    suspect: int = 0  # of which count only once corroborated
    keys: set[str] = field(default_factory=set)
    opened_at: float | None = None
    opened_by: tuple[str, ...] = ()
    probe_started: float | None = None


class CircuitBreaker:
    def __init__(
        self,
        *,
        failure_threshold: int = 5,
        cooldown: float = 15.0,
        caller_window: float = CALLER_WINDOW,
    ):
        self.failure_threshold = failure_threshold
        self.cooldown = cooldown
        self.caller_window = caller_window
        self._states: dict[str, _State] = {}
        self._callers: dict[str, dict[str, float]] = {}  # endpoint → key → last attempt

    def health(self, endpoint_id: str, now: float) -> Health:
        state = self._states.get(endpoint_id)
        if state is None or state.opened_at is None:
            return Health.HEALTHY
        probing = state.probe_started is not None and now - state.probe_started < self.cooldown
        if now - state.opened_at >= self.cooldown and not probing:
            return Health.PROBING
        return Health.OPEN

    def snapshot(self, now: float) -> dict[str, Health]:
        """Health of every endpoint that is not plainly healthy."""
        snapshot: dict[str, Health] = {}
        for endpoint_id in self._states:
            health = self.health(endpoint_id, now)
            if health is not Health.HEALTHY:
                snapshot[endpoint_id] = health
        return snapshot

    def attempt_started(self, endpoint_id: str, now: float, *, key_id: str | None = None) -> None:
        """A call is going to the endpoint: remember its key as a caller; if the
        endpoint is half-open, others wait for this probe's outcome."""
        if key_id is not None:
            self._callers.setdefault(endpoint_id, {})[key_id] = now
        if self.health(endpoint_id, now) is Health.PROBING:
            self._states[endpoint_id].probe_started = now

    def succeeded(self, endpoint_id: str) -> None:
        if endpoint_id in self._states:
            del self._states[endpoint_id]

    def failed(
        self,
        endpoint_id: str,
        now: float,
        *,
        kind: FailureKind = FailureKind.UNCLASSIFIED,
        key_id: str | None = None,
    ) -> None:
        """Record a retryable failure of the endpoint; `kind` and `key_id` decide
        whether it counts (see the module's docstring)."""
        state = self._states.setdefault(endpoint_id, _State())
        state.failures += 1
        state.probe_started = None
        if key_id is not None:
            state.keys.add(key_id)
        if kind.needs_corroboration and key_id is not None:
            state.suspect += 1
        else:
            state.counted += 1
        if state.opened_at is None:
            if self._counted(endpoint_id, state, now) < self.failure_threshold:
                return
            state.opened_by = tuple(sorted(state.keys))
        state.opened_at = now

    def _counted(self, endpoint_id: str, state: _State, now: float) -> int:
        if state.suspect and self._corroborated(endpoint_id, state.keys, now):
            return state.counted + state.suspect
        return state.counted

    def _corroborated(self, endpoint_id: str, keys: set[str], now: float) -> bool:
        if len(keys) >= 2:
            return True
        callers = self._callers.get(endpoint_id, {})
        horizon = now - self.caller_window
        for key_id, seen in list(callers.items()):
            if seen < horizon:
                del callers[key_id]
        return not callers.keys() - keys

    def known(self, endpoint_id: str) -> bool:
        """Whether the endpoint has any failure on record."""
        return endpoint_id in self._states

    def adopt(
        self,
        endpoint_id: str,
        failures: int,
        opened_at: float | None,
        opened_by: tuple[str, ...] = (),
    ) -> None:
        """Take the state another process recorded (shared health); keeps a probe in flight."""
        if failures <= 0 and opened_at is None:
            self._states.pop(endpoint_id, None)
            return
        state = self._states.setdefault(endpoint_id, _State())
        state.failures = failures
        state.opened_at = opened_at
        if opened_at is not None:
            state.opened_by = opened_by

    def describe(self, endpoint_id: str, now: float, *, keys: bool = False) -> dict[str, object]:
        """The endpoint's health for the platform API; with `keys`, the key ids of the
        failing streak and of the calls that opened the circuit (the admin's view)."""
        state = self._states.get(endpoint_id, _State())
        health = self.health(endpoint_id, now)
        described: dict[str, object] = {
            "state": {Health.HEALTHY: "closed", Health.PROBING: "half_open", Health.OPEN: "open"}[
                health
            ],
            "consecutive_failures": state.failures,
        }
        if keys:
            described["failing_keys"] = sorted(state.keys)
            described["opened_by"] = list(state.opened_by) if state.opened_at is not None else []
        return described
