"""Failed authentications, counted per client address.

A request with an unknown key id costs a database lookup (the key may have
been created by another gateway process). Each client address has a bucket of
`burst` failures, refilled at `per_second`; once it is empty, a key this
process does not already hold is refused with a 429 without asking the
database, until the bucket refills. Keys the process holds are still checked
as always — in memory — so a tenant behind the same address as an attacker
keeps working, and a revocation still applies at once.

The same buckets (`AddressBuckets`) bound other work one address can make the
gateway do, with limits of their own: sign-ins started (`llmeu.api.services.sso`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from llmeu.errors import RateLimited

_MAX_ADDRESSES = 10_000


@dataclass(frozen=True, slots=True)
class FailureLimits:
    burst: int = 20
    per_second: float = 2.0


class AddressBuckets:
    """Token buckets of one process, one per client address: `burst` tokens, refilled at
    `per_second`; at most `_MAX_ADDRESSES` addresses are held."""

    __slots__ = ("_buckets", "limits")

    def __init__(self, limits: FailureLimits | None = None):
        self.limits = limits or FailureLimits()
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, at)

    def allows(self, address: str) -> bool:
        """Whether `address` has a token left."""
        return self._tokens(address, time.monotonic()) >= 1.0

    def retry_after(self, address: str) -> int:
        """Whole seconds until `address` has a token again (0 when it has one)."""
        tokens = self._tokens(address, time.monotonic())
        return 0 if tokens >= 1.0 else math.ceil((1.0 - tokens) / self.limits.per_second)

    def spend(self, address: str) -> None:
        now = time.monotonic()
        tokens = self._tokens(address, now)
        if address not in self._buckets and len(self._buckets) >= _MAX_ADDRESSES:
            self._forget_full(now)
        self._buckets[address] = (max(0.0, tokens - 1.0), now)

    def _tokens(self, address: str, now: float) -> float:
        limits = self.limits
        bucket = self._buckets.get(address)
        if bucket is None:
            return float(limits.burst)
        tokens, at = bucket
        return min(float(limits.burst), tokens + (now - at) * limits.per_second)

    def _forget_full(self, now: float) -> None:
        """Drop the buckets that refilled (they hold nothing); all of them if none did."""
        full = [a for a in self._buckets if self._tokens(a, now) >= self.limits.burst]
        for address in full or list(self._buckets):
            del self._buckets[address]


class AuthFailures(AddressBuckets):
    """The failure buckets of one process: a token is spent by each failure."""

    __slots__ = ()

    def check(self, address: str) -> None:
        """429 while `address` has spent its failures."""
        if wait := self.retry_after(address):
            raise RateLimited(
                "too many failed authentications from this address; retry later",
                retry_after=wait,
                code="too_many_failed_authentications",
            )

    def failed(self, address: str) -> None:
        self.spend(address)
