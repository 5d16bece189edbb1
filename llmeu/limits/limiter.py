"""The one interface of per-key limits, and what its implementations share.

A call is admitted before any upstream is contacted and settled when its
trace is final:

    admission = await limiter.admit(quota, prompt_tokens, output_tokens=most_output,
                                    reserve_eur=most_cost,
                                    limits_fail=key_policy.limits_fail)  # or RateLimited
    ...
    limiter.settle(admission, tokens_used, cost_eur)

Requests per minute and tokens per minute are sliding windows of 60 s: a call
counts from the moment it is admitted, with its estimated tokens reserved until
it settles with the tokens it really used (input + output). A call is admitted
when its prompt fits in what is left of the minute, and reserves its prompt
and the most it may produce (`output_tokens`), up to all that is left: calls
admitted together cannot use the minute's tokens many times over, while calls
made one after another are admitted as their prompts fit. The budget is the
key's total spend in EUR since it was created, and an admitted call's
estimated cost counts in it until the
call settles with its real cost: a key whose spend and reservations reach its
budget is refused, so calls admitted together cannot spend it many times over.
The spend can still end above the budget by at most what the calls admitted
last cost beyond their estimates, and by the estimated cost of the one call
admitted just under the budget.

A team's limits are a second quota (`scope="team"`) the call of a key in it is
admitted under after its key's: the team's requests and tokens per minute over
all its keys, and its budget, whose spend is that of one calendar month (UTC,
`period`: its spend is kept apart per month, `spend_id`). A call its team
refuses gives back what its key's admission held (`release`).

When the limits cannot be checked (Redis does not answer), a limited call is
admitted unchecked or refused with `LimitsUnavailable`, as its key's policy
says (`limits_fail`); `state` tells operators which and how often.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from llmeu.errors import RateLimited
from llmeu.routing.policy import LimitsFail

WINDOW_SECONDS = 60.0
# A spent budget does not come back by waiting; the header still tells clients
# not to retry at once.
BUDGET_RETRY_AFTER = 3600.0
REDIS_TIMEOUT = 0.25
"""Seconds a call waits at most on Redis: a healthy one answers in well under a millisecond."""

SpendSource = Callable[[], Awaitable[Mapping[str, float]]]
"""The spend of every key according to the ledger (EUR), read when a limiter needs it."""


@dataclass(frozen=True, slots=True)
class Quota:
    """The limits of one API key, or of one team over all its keys; None means unlimited."""

    key_id: str
    """The key's id, or the team's (`scope`): whose windows these are."""
    rpm: int | None = None
    tpm: int | None = None
    budget_eur: float | None = None
    scope: str = "key"
    period: str = ""
    """The calendar month (`2026-12`) a team's budget is spent in; "": since the key began."""

    @property
    def unlimited(self) -> bool:
        return self.rpm is None and self.tpm is None and self.budget_eur is None

    @property
    def spend_id(self) -> str:
        """Whose spend the budget is checked against: the key's, or the team's this month."""
        return f"{self.key_id}@{self.period}" if self.period else self.key_id

    @property
    def subject(self) -> str:
        return f"{self.scope} {self.key_id}"


def calendar_month(now: float) -> tuple[str, float]:
    """The UTC calendar month `now` falls in: its label (`2026-12`) and first instant."""
    moment = datetime.fromtimestamp(now, UTC)
    return f"{moment.year:04d}-{moment.month:02d}", datetime(
        moment.year, moment.month, 1, tzinfo=UTC
    ).timestamp()


@dataclass(slots=True)
class Admission:
    """One admitted call: what it holds in the windows until it settles."""

    quota: Quota
    ticket: str
    reserved_tokens: int
    entry: list[float] | None = None  # the in-memory limiter's window entry
    reserved_eur: float = 0.0  # counted against the budget until the call settles
    hold: str = ""  # the Redis limiter's record of `reserved_eur`


@dataclass(slots=True)
class LimitsState:
    """What operators see of a limiter (`/healthz`, `/readyz`, `/metrics`)."""

    degraded: bool = False  # the limits store is skipped until a probe finds it answering
    degraded_since: float | None = None  # time.monotonic() when it stopped answering
    unchecked_admitted: int = 0  # limited calls admitted unchecked (limits_fail: open)
    unchecked_refused: int = 0  # limited calls refused unchecked (limits_fail: closed)

    @property
    def status(self) -> str:
        return "degraded" if self.degraded else "ok"


class Limiter(ABC):
    """Admits calls under their key's quota; settles what they really used."""

    def __init__(self) -> None:
        self.state = LimitsState()

    @abstractmethod
    async def start(self, spend: SpendSource) -> None:
        """Connect, and learn how to read the ledger's spend per key."""

    @abstractmethod
    async def admit(
        self,
        quota: Quota,
        tokens: int,
        *,
        output_tokens: int = 0,
        reserve_eur: float = 0.0,
        limits_fail: LimitsFail = LimitsFail.OPEN,
    ) -> Admission:
        """Count the call in, reserving `tokens` (the prompt's) and up to `output_tokens`
        more, and (against a budget) `reserve_eur`; raises `RateLimited` (with its retry
        delay) when over a limit.

        `limits_fail` is the key's policy's: what the call gets when its limits
        cannot be checked — admitted unchecked (`open`) or `LimitsUnavailable`.
        """

    @abstractmethod
    def settle(self, admission: Admission, tokens: int, cost_eur: float | None) -> None:
        """The call is over: replace its reservations with `tokens` and its cost."""

    @abstractmethod
    async def release(self, admission: Admission) -> None:
        """The call was refused after all (by its team's limits): take back all it held, as
        if it had never been admitted."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Finish pending writes and disconnect."""


def requests_exceeded(quota: Quota, retry_after: float) -> RateLimited:
    return RateLimited(
        f"Rate limit reached for {quota.subject}: {quota.rpm} requests per minute. "
        f"Retry after {math.ceil(retry_after)} s.",
        retry_after=retry_after,
    )


def tokens_reserved(quota: Quota, used: float, tokens: int, output_tokens: int) -> int:
    """What an admitted call holds in the tokens-per-minute window: its prompt, and as
    much of its possible output as the minute has left (`used` before it)."""
    if quota.tpm is None:
        return tokens
    return tokens + max(0, min(output_tokens, int(quota.tpm - used) - tokens))


def tokens_exceeded(quota: Quota, tokens: int, retry_after: float) -> RateLimited:
    if quota.tpm is not None and tokens > quota.tpm:
        return RateLimited(
            f"Request too large for {quota.subject}: about {tokens} tokens, more than its "
            f"limit of {quota.tpm} tokens per minute.",
            retry_after=retry_after,
            code="request_too_large",
        )
    return RateLimited(
        f"Rate limit reached for {quota.subject}: {quota.tpm} tokens per minute. "
        f"Retry after {math.ceil(retry_after)} s.",
        retry_after=retry_after,
    )


def budget_exceeded(quota: Quota, spent: float) -> RateLimited:
    month = f" in {quota.period}" if quota.period else ""
    return RateLimited(
        f"Budget exhausted for {quota.subject}{month}: spent {spent:.6f} EUR of "
        f"{quota.budget_eur:g} EUR.",
        retry_after=BUDGET_RETRY_AFTER,
        code="insufficient_quota",
    )
