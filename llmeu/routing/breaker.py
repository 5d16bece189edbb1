"""Endpoint health: a circuit breaker per endpoint, driven by attempt outcomes.

After `failure_threshold` consecutive retryable failures the circuit opens and
the router stops sending to the endpoint. After `cooldown` seconds one call is
let through as a probe (half-open): success closes the circuit, failure opens
it for another cooldown. Time is passed in, so the logic is pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmeu.routing.router import Health


@dataclass(slots=True)
class _State:
    failures: int = 0
    opened_at: float | None = None
    probe_started: float | None = None


class CircuitBreaker:
    def __init__(self, *, failure_threshold: int = 5, cooldown: float = 15.0):
        self.failure_threshold = failure_threshold
        self.cooldown = cooldown
        self._states: dict[str, _State] = {}

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

    def attempt_started(self, endpoint_id: str, now: float) -> None:
        """A call is going to a half-open endpoint: others wait for its outcome."""
        if self.health(endpoint_id, now) is Health.PROBING:
            self._states[endpoint_id].probe_started = now

    def succeeded(self, endpoint_id: str) -> None:
        if endpoint_id in self._states:
            del self._states[endpoint_id]

    def failed(self, endpoint_id: str, now: float) -> None:
        state = self._states.setdefault(endpoint_id, _State())
        state.failures += 1
        state.probe_started = None
        if state.opened_at is not None or state.failures >= self.failure_threshold:
            state.opened_at = now

    def known(self, endpoint_id: str) -> bool:
        """Whether the endpoint has any failure on record."""
        return endpoint_id in self._states

    def adopt(self, endpoint_id: str, failures: int, opened_at: float | None) -> None:
        """Take the state another process recorded (shared health); keeps a probe in flight."""
        if failures <= 0 and opened_at is None:
            self._states.pop(endpoint_id, None)
            return
        state = self._states.setdefault(endpoint_id, _State())
        state.failures = failures
        state.opened_at = opened_at

    def describe(self, endpoint_id: str, now: float) -> dict[str, object]:
        state = self._states.get(endpoint_id, _State())
        return {
            "state": {Health.HEALTHY: "closed", Health.PROBING: "half_open", Health.OPEN: "open"}[
                self.health(endpoint_id, now)
            ],
            "consecutive_failures": state.failures,
        }
