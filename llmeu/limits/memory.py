"""Limits of one gateway process, exact, in memory.

Each key has one window: a deque of `[admitted_at, tokens]` entries of the
last 60 s. Its length is the request count, the sum of its tokens the token
count; settling a call rewrites its entry's tokens in place. The spend per key
(and per team and month) starts from the ledger at start-up and grows with every
settled call; a month that begins later starts from nothing.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Callable

from llmeu.limits.limiter import (
    WINDOW_SECONDS,
    Admission,
    Limiter,
    Quota,
    SpendSource,
    budget_exceeded,
    requests_exceeded,
    tokens_exceeded,
    tokens_reserved,
)
from llmeu.routing.policy import LimitsFail


class _Window:
    __slots__ = ("entries", "tokens")

    def __init__(self) -> None:
        self.entries: deque[list[float]] = deque()
        self.tokens = 0.0

    def prune(self, now: float) -> None:
        horizon = now - WINDOW_SECONDS
        entries = self.entries
        while entries and entries[0][0] <= horizon:
            self.tokens -= entries.popleft()[1]

    def wait_for_tokens(self, tokens: int, limit: int, now: float) -> float:
        """Seconds until `tokens` more fit under `limit` as older entries expire."""
        excess = self.tokens + tokens - limit
        for admitted_at, amount in self.entries:
            excess -= amount
            if excess <= 0:
                return admitted_at + WINDOW_SECONDS - now
        return WINDOW_SECONDS


class MemoryLimiter(Limiter):
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self._clock = clock
        self._windows: dict[str, _Window] = {}
        self._spent: dict[str, float] = {}

    async def start(self, spend: SpendSource) -> None:
        self._spent = dict(await spend())

    async def admit(
        self,
        quota: Quota,
        tokens: int,
        *,
        output_tokens: int = 0,
        reserve_eur: float = 0.0,
        limits_fail: LimitsFail = LimitsFail.OPEN,
    ) -> Admission:
        """In memory the limits can always be checked: `limits_fail` never applies."""
        admission = Admission(quota, "", tokens)
        if quota.unlimited:
            return admission
        if quota.budget_eur is not None:
            spent = self._spent.get(quota.spend_id, 0.0)
            if spent >= quota.budget_eur:
                raise budget_exceeded(quota, spent)
        if quota.rpm is None and quota.tpm is None:
            self._reserve(admission, reserve_eur)
            return admission
        now = self._clock()
        window = self._windows.get(quota.key_id)
        if window is None:
            window = self._windows[quota.key_id] = _Window()
        window.prune(now)
        if quota.rpm is not None and len(window.entries) >= quota.rpm:
            raise requests_exceeded(quota, window.entries[0][0] + WINDOW_SECONDS - now)
        if quota.tpm is not None and window.tokens + tokens > quota.tpm:
            if tokens > quota.tpm:
                raise tokens_exceeded(quota, tokens, WINDOW_SECONDS)
            raise tokens_exceeded(quota, tokens, window.wait_for_tokens(tokens, quota.tpm, now))
        held = tokens_reserved(quota, window.tokens, tokens, output_tokens)
        admission.reserved_tokens = held
        entry = [now, float(held)]
        window.entries.append(entry)
        window.tokens += held
        admission.entry = entry
        admission.ticket = secrets.token_hex(8)
        self._reserve(admission, reserve_eur)
        return admission

    def _reserve(self, admission: Admission, reserve_eur: float) -> None:
        quota = admission.quota
        if quota.budget_eur is not None and reserve_eur > 0:
            spend_id = quota.spend_id
            self._spent[spend_id] = self._spent.get(spend_id, 0.0) + reserve_eur
            admission.reserved_eur = reserve_eur

    def settle(self, admission: Admission, tokens: int, cost_eur: float | None) -> None:
        quota = admission.quota
        charge = (cost_eur or 0.0) - admission.reserved_eur
        admission.reserved_eur = 0.0
        if charge:
            self._spent[quota.spend_id] = self._spent.get(quota.spend_id, 0.0) + charge
        entry = admission.entry
        if entry is None:
            return
        admission.entry = None
        window = self._windows.get(quota.key_id)
        if window is not None and window.entries and entry[0] >= window.entries[0][0]:
            window.tokens += tokens - entry[1]
            entry[1] = float(tokens)

    async def release(self, admission: Admission) -> None:
        quota = admission.quota
        if admission.reserved_eur:
            self._spent[quota.spend_id] -= admission.reserved_eur
            admission.reserved_eur = 0.0
        entry, admission.entry = admission.entry, None
        window = self._windows.get(quota.key_id)
        if entry is not None and window is not None:
            for i, held in enumerate(window.entries):
                if held is entry:
                    del window.entries[i]
                    window.tokens -= entry[1]
                    break

    def spent(self, spend_id: str) -> float:
        return self._spent.get(spend_id, 0.0)
