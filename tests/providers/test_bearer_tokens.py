"""Bearer tokens: fetched once and shared, replaced before they expire, dropped when refused."""

from __future__ import annotations

import asyncio
import threading
import time

from llmeu.providers.bearer_tokens import REFRESH_MARGIN, TokenSource


class Issuer:
    """A blocking token fetch (as google-auth's and azure-identity's are) that counts calls."""

    def __init__(self, lifetime: float):
        self.lifetime = lifetime
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> tuple[str, float]:
        time.sleep(0.05)  # concurrent callers overlap with a fetch in progress
        with self.lock:
            self.calls += 1
            return f"token-{self.calls}", time.time() + self.lifetime


async def test_concurrent_calls_share_one_fetch() -> None:
    issuer = Issuer(3600)
    tokens = TokenSource(issuer)
    got = await asyncio.gather(*(tokens.token() for _ in range(20)))
    assert set(got) == {"token-1"} and issuer.calls == 1
    assert await tokens.token() == "token-1" and issuer.calls == 1


async def test_a_token_close_to_expiry_is_replaced() -> None:
    issuer = Issuer(REFRESH_MARGIN - 1)  # already inside the margin when it arrives
    tokens = TokenSource(issuer)
    assert await tokens.token() == "token-1"
    assert await tokens.token() == "token-2"


async def test_a_refused_token_is_fetched_again_once() -> None:
    issuer = Issuer(3600)
    tokens = TokenSource(issuer)
    first = await tokens.token()
    tokens.invalidate("some-older-token")  # not the current one: nothing happens
    assert await tokens.token() == first
    tokens.invalidate(first)
    assert await tokens.token() == "token-2"
    assert await tokens.token() == "token-2"
