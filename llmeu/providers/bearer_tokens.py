"""OAuth2 bearer tokens for upstreams that take them (Vertex AI, Azure OpenAI with Entra ID).

A token is fetched once and shared by every call until shortly before it
expires; concurrent calls wait for one refresh instead of starting their own.
The libraries that fetch tokens (google-auth, azure-identity) block, so a
fetch runs in a worker thread. An upstream that answers 401 has revoked or
expired the token early: the call invalidates it and tries once more with a
fresh one. Tokens never appear in messages: a failed fetch says what failed,
not with what.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from llmeu.calls.hangup import Hangup
from llmeu.errors import UpstreamError
from llmeu.providers.transport import Response
from llmeu.providers.upstream_http import Headers, HttpUpstream

REFRESH_MARGIN = 300.0
"""Seconds before its expiry that a token is replaced: no call starts with a token that
could expire on the way."""

Fetch = Callable[[], tuple[str, float]]
"""Blocking: a new token and the Unix time it expires; its failures leave as `UpstreamError`
(retryable: another endpoint may hold other credentials) naming what failed, never a secret."""


class TokenSource:
    __slots__ = ("_expires", "_fetch", "_lock", "_token", "fetches")

    def __init__(self, fetch: Fetch):
        self._fetch = fetch
        self._token = ""
        self._expires = 0.0
        self._lock = asyncio.Lock()
        self.fetches = 0

    async def token(self) -> str:
        if self._fresh():
            return self._token
        async with self._lock:
            if not self._fresh():
                self._token, self._expires = await asyncio.to_thread(self._fetch)
                self.fetches += 1
            return self._token

    def invalidate(self, token: str) -> None:
        """The upstream refused `token`: the next call fetches a new one."""
        if token == self._token:
            self._expires = 0.0

    def _fresh(self) -> bool:
        return bool(self._token) and self._expires - REFRESH_MARGIN > time.time()


async def post_with_token(
    http: HttpUpstream,
    tokens: TokenSource,
    path: str,
    body: bytes,
    headers: Headers,
    hangup: Hangup,
) -> Response:
    """POST with `Authorization: Bearer`; a 401 invalidates the token and retries once."""
    for attempt in (1, 2):
        token = await tokens.token()
        auth = (b"authorization", b"Bearer " + token.encode())
        try:
            return await http.post(path, body, [*headers, auth], hangup)
        except UpstreamError as error:
            if error.upstream_status != 401 or attempt == 2:
                raise
            tokens.invalidate(token)
    raise AssertionError("unreachable")  # pragma: no cover
