"""The issuer as the gateway knows it: its discovery document and its signing keys.

Both are fetched with the gateway's own HTTP client (`llmeu.providers.transport`)
on first use, not at start, so a gateway starts while its issuer is down (API
keys keep working; sign-in answers 503 `issuer_unavailable` until it is back).
The discovery document is kept for `METADATA_TTL_SECONDS`; the key set until a
token names a `kid` it lacks, which fetches it again, at most once per
`REFETCH_INTERVAL_SECONDS`, so tokens with made-up `kid`s cannot make the gateway
hammer the issuer. The document's `issuer` must be the configured one exactly
(OpenID Connect Discovery §4.3).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

from llmeu.errors import AuthenticationFailed, ServiceUnavailable
from llmeu.providers.transport import HttpClient, Origin, TransportError

METADATA_TTL_SECONDS = 3600.0
REFETCH_INTERVAL_SECONDS = 10.0
_TIMEOUT = 10.0
_LIMIT = 1 << 20


def unavailable(why: str) -> ServiceUnavailable:
    return ServiceUnavailable(
        f"the sign-in issuer is unavailable: {why}", code="issuer_unavailable"
    )


class Issuer:
    def __init__(self, url: str, http: HttpClient):
        self.url = url
        self._http = http
        self._metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self._jwks: dict[str, Any] | None = None
        self.last_keys_fetch = 0.0
        """When the key set was last fetched (`time.monotonic()`)."""
        self._turn = asyncio.Lock()

    async def metadata(self) -> dict[str, Any]:
        async with self._turn:
            if (
                self._metadata is None
                or time.monotonic() - self._metadata_at > METADATA_TTL_SECONDS
            ):
                url = self.url.rstrip("/") + "/.well-known/openid-configuration"
                document = await self._get(url)
                if document.get("issuer") != self.url:
                    raise unavailable(
                        f"its discovery document names issuer {document.get('issuer')!r}, "
                        f"not {self.url!r}"
                    )
                for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                    if not isinstance(document.get(name), str):
                        raise unavailable(f"its discovery document has no `{name}`")
                self._metadata, self._metadata_at = document, time.monotonic()
            return self._metadata

    async def jwks(self, *, refresh: bool = False) -> dict[str, Any]:
        """The key set; `refresh` (a token named an unknown `kid`) fetches it again unless it
        was fetched within the last `REFETCH_INTERVAL_SECONDS`."""
        metadata = await self.metadata()
        async with self._turn:
            stale = refresh and time.monotonic() - self.last_keys_fetch > REFETCH_INTERVAL_SECONDS
            if self._jwks is None or stale:
                self._jwks = await self._get(metadata["jwks_uri"])
                self.last_keys_fetch = time.monotonic()
            return self._jwks

    async def token(
        self, form: dict[str, str], headers: list[tuple[bytes, bytes]]
    ) -> dict[str, Any]:
        """POST the token request; the JSON answer, or 401 naming the issuer's error."""
        endpoint = (await self.metadata())["token_endpoint"]
        body = urlencode(form).encode()
        head = [(b"content-type", b"application/x-www-form-urlencoded"), *headers]
        status, answer = await self._exchange(endpoint, b"POST", head, body)
        if status != 200:
            reason = answer.get("error_description") or answer.get("error") or f"HTTP {status}"
            raise AuthenticationFailed(
                f"the issuer refused the authorization code: {reason}", code="sign_in_failed"
            )
        return answer

    async def _get(self, url: str) -> dict[str, Any]:
        status, answer = await self._exchange(url, b"GET", [], b"")
        if status != 200:
            raise unavailable(f"GET {url} answered HTTP {status}")
        return answer

    async def _exchange(
        self, url: str, method: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        parts = urlsplit(url)
        try:
            origin = Origin.parse(f"{parts.scheme}://{parts.netloc}")
        except ValueError as error:
            raise unavailable(str(error)) from None
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = [(b"accept", b"application/json"), *headers]
        try:
            response = await self._http.request(
                origin, method, path, head, body,
                connect_timeout=_TIMEOUT, response_timeout=_TIMEOUT,
            )  # fmt: skip
            try:
                raw = await response.read(_TIMEOUT, _LIMIT)
            except BaseException:
                response.abort()
                raise
            response.release()
        except TransportError as error:
            raise unavailable(f"{method.decode()} {url}: {error}") from None
        try:
            answer = json.loads(raw)
        except ValueError:
            raise unavailable(f"{method.decode()} {url} did not answer JSON") from None
        if not isinstance(answer, dict):
            raise unavailable(f"{method.decode()} {url} did not answer a JSON object")
        return response.status, answer
