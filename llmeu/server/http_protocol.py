"""uvicorn's httptools protocol with the request head, its time and the connections bounded.

httptools takes a request head of any size, and uvicorn's
`h11_max_incomplete_event_size` applies to h11 only, so `BoundedHttpToolsProtocol`
answers a head over `MAX_HEAD_BYTES` with a 431 (a 414 for a request line
alone that long) before the app sees it. uvicorn bounds neither the time a
head takes nor the connections held open: a head must be complete within
`head_timeout` of the connection's start (or of its first byte, on a kept-alive
connection) — a 408 once part of it came, a silent close for a connection that
never said anything — and the `ConnectionGuard` caps connections per process
and per client address. A request uvicorn's parser cannot read (NUL or CR in a
header, obs-fold) is a 400 in the OpenAI error shape, as every refusal here.
uvicorn takes the protocol class as `Config(http=...)`; `protocol_factory`
binds it to the guard and to the trusted proxies.

Behind trusted proxies (`--trusted-proxy`), the client a request comes from
is the one `llmeu.protocol.forwarded` reads from the header the proxy writes; it
replaces the peer in the ASGI scope's `client`, which is all the app reads
(the failed-authentication limit among others), and the guard counts the
connection for it while the request runs. With `--proxy-protocol`, every
connection must come from a trusted peer (any other is closed at once, before
a byte is read) and begin with a PROXY header (`llmeu.protocol.proxy_header`;
a connection whose first bytes are not one is closed); the address it names
replaces the peer for the whole connection, and when that address is itself a
trusted proxy's, each request's forwarding header is read as above. Without
trusted proxies nothing of this runs: no header is looked at.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from llmeu.api.http.asgi import HANGUP_EXTENSION, HangupHook
from llmeu.protocol.error_shape import encode_error
from llmeu.protocol.forwarded import TrustedProxies
from llmeu.protocol.proxy_header import read_proxy_header
from llmeu.server.connection_guard import ConnectionGuard
from llmeu.server.request_cycle import Http10Cycle, OneWriteCycle

MAX_HEAD_BYTES = 64 * 1024
_LINGER_SECONDS = 5.0
_REFUSED_LINGER_SECONDS = 1.0  # a connection refused for want of room gives it back soon


def protocol_factory(
    guard: ConnectionGuard, proxies: TrustedProxies | None = None, proxy_protocol: bool = False
) -> Callable[..., BoundedHttpToolsProtocol]:
    """The protocol class for uvicorn's `Config(http=...)`, every connection under `guard`,
    the client's address read behind `proxies` (with PROXY headers when `proxy_protocol`)."""
    if proxy_protocol and proxies is None:
        raise ValueError("the PROXY protocol is accepted from trusted proxies only")
    return partial(
        BoundedHttpToolsProtocol, guard=guard, proxies=proxies, proxy_protocol=proxy_protocol
    )


class _Refused(Exception):
    """Stops the parser inside one of its callbacks; uvicorn then calls `send_400_response`."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing request heads over `MAX_HEAD_BYTES`.

    The parser reports the request line and each header once complete, and
    those are counted exactly; a line that never ends is caught by counting
    the bytes received while the head is still incomplete. Either way the
    client gets an OpenAI-shaped error and the connection is closed — once the
    client has read it: closing a socket with unread input sends a reset,
    which can destroy the answer before it is read, so the gateway ends its
    side first and drops what still arrives until the client closes (at most
    `_LINGER_SECONDS`).
    """

    def __init__(
        self,
        *args: Any,
        guard: ConnectionGuard | None = None,
        proxies: TrustedProxies | None = None,
        proxy_protocol: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._guard = guard
        self._proxies = proxies
        self._forwarded = False  # the peer is a trusted proxy: each request names its client
        # The start of a PROXY header while one is awaited, else None.
        self._proxy_header: bytearray | None = bytearray() if proxy_protocol else None
        self._head_timer: asyncio.TimerHandle | None = None
        self._in_head = True
        self._head_bytes = 0  # request line and headers the parser reported
        self._head_received = 0  # bytes received while the head was incomplete
        self._message_ended = False
        self._refusal: Callable[[], None] | None = None
        self._refused = False
        self._linger: asyncio.TimerHandle | None = None

    @property
    def idle(self) -> bool:
        """No request on this connection: no byte of a head yet, none being answered."""
        return (
            self._in_head
            and self._head_received == 0
            and (self.cycle is None or self.cycle.response_complete)
        )

    def close_idle(self) -> None:
        self._cancel_head_timer()
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        client: str | None = self.client[0] if self.client else ""
        if self._proxies is not None and self._proxies.trusts(client or ""):
            client = None  # known once the PROXY header or a request's head names it
            self._forwarded = self._proxy_header is None
        elif self._proxy_header is not None:  # a PROXY header only from a trusted peer
            self._close_without_header()
            return
        if self._guard is not None:
            refusal = self._guard.admit(self, client)
            if refusal is not None:
                self._refuse_connection(refusal)
                return
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._proxy_header is not None:
            data = self._read_proxy_header(data)
            if not data:
                return
        if self._in_head and self._head_received == 0 and self._head_timer is None:
            self._arm_head_timer()  # the first byte of a head on a kept-alive connection
        self._message_ended = False
        super().data_received(data)
        # With a message ended in this read, part of `data` was not head: not counted.
        if self._in_head and not self._message_ended and not self._refused:
            self._head_received += len(data)
            if self._head_received > MAX_HEAD_BYTES:
                self._refuse_head(431, "request headers")

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger is not None:
            self._linger.cancel()
        self._cancel_head_timer()
        if self._guard is not None:
            self._guard.release(self)
        open_cycles = [c for c in (self.cycle, *(c for c, _ in self.pipeline)) if c is not None]
        super().connection_lost(exc)
        for cycle in open_cycles:  # the calls still answering learn of the hang-up now
            hook = _hangup_hook(cycle)
            if hook is not None and not cycle.response_complete:
                hook.lost()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._head_bytes += len(url)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refusal = partial(self._refuse_head, 414, "request URL")
            raise _Refused
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refusal = partial(self._refuse_head, 431, "request headers")
            raise _Refused
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._forwarded:
            self._forward_client()
        self._in_head = False
        self._head_received = 0
        self._cancel_head_timer()
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is None or cycle.scope is not self.scope:
            return  # refused or answered without the app
        # Created by uvicorn a moment ago, its task not yet run: nothing was sent, the app
        # has not seen the scope.
        extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
        extensions[HANGUP_EXTENSION] = HangupHook()
        if type(cycle) is RequestResponseCycle:
            http10 = self.scope.get("http_version") == "1.0"
            cycle.__class__ = Http10Cycle if http10 else OneWriteCycle

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
        self._message_ended = True

    def on_response_complete(self) -> None:
        queued = bool(self.pipeline)  # a pipelined request starts now, already counted
        super().on_response_complete()
        if self._forwarded and not queued and self._guard is not None:
            self._guard.attribute(self, None)  # idle again: counted for no client

    def _read_proxy_header(self, data: bytes) -> bytes:
        """What follows the PROXY header once it is whole (b"" until then); the address it
        names becomes the connection's client."""
        assert self._proxy_header is not None and self._proxies is not None
        self._proxy_header += data
        try:
            header = read_proxy_header(bytes(self._proxy_header))
        except ValueError:  # the specification: close, do not guess
            self._close_without_header()
            return b""
        if header is None:
            return b""
        rest = bytes(self._proxy_header[header.length :])
        self._proxy_header = None
        if header.source is not None:
            self.client = header.source
        address = self.client[0] if self.client else ""
        if self._proxies.trusts(address):
            self._forwarded = True
        elif self._guard is not None and not self._guard.attribute(self, address):
            self._refuse_connection(429)
            return b""
        return rest

    def _close_without_header(self) -> None:
        self._refused = True
        self._cancel_head_timer()
        if self._guard is not None:
            self._guard.refused_proxy_protocol += 1
        self.transport.close()

    def _forward_client(self) -> None:
        """The client the forwarding header names replaces the peer; the guard counts the
        connection for it until the answer ends (refused over its cap)."""
        assert self._proxies is not None and self.client is not None
        peer = self.client[0]
        client, trusted = self._proxies.resolve(peer, self.headers)
        if client != peer:
            self.scope["client"] = (client, 0)  # no port: the header does not say one
        counted = None if trusted else client
        if self._guard is not None and not self._guard.attribute(self, counted):
            self._refusal = partial(self._refuse_connection, 429)
            raise _Refused

    def send_400_response(self, msg: str) -> None:
        if self._refusal is not None:
            self._refusal()
            return
        self._refuse(
            400,
            "the request is not valid HTTP/1.1 (a control character or a folded line in a "
            "header, or a malformed request line)",
            "invalid_http_request",
        )

    def _refuse_head(self, status: int, what: str) -> None:
        self._refuse(
            status,
            f"{what} too large: the request head may be at most {MAX_HEAD_BYTES} bytes",
            "request_header_fields_too_large" if status == 431 else "request_uri_too_long",
        )

    def _refuse_connection(self, status: int) -> None:
        if status == 429:
            message = "too many open connections from this address; close some and retry"
            self._refuse(429, message, "too_many_connections", "rate_limit_error", retry=True)
        else:
            message = "the gateway holds as many connections as it can; retry shortly"
            self._refuse(503, message, "server_busy", "api_error", retry=True)

    def _arm_head_timer(self) -> None:
        timeout = self._guard.limits.head_timeout if self._guard is not None else 0.0
        if timeout > 0:
            self._head_timer = self.loop.call_later(timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._refused or self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm_head_timer()  # a pipelined head waits for the answer before it
            return
        assert self._guard is not None
        self._guard.head_timeouts += 1
        if self._head_received == 0:
            self.transport.close()  # never said anything: nobody to answer
            return
        self._refuse(
            408,
            f"the request head did not arrive within {self._guard.limits.head_timeout:g} s",
            "request_timeout",
        )

    def _refuse(
        self,
        status: int,
        message: str,
        code: str,
        type_: str = "invalid_request_error",
        *,
        retry: bool = False,
    ) -> None:
        """Answer `status` with an OpenAI-shaped error and close the connection."""
        self._refused = True
        self._cancel_head_timer()
        body = encode_error(message, type_, code=code)
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "content-type: application/json\r\n"
            + ("retry-after: 1\r\n" if retry else "")
            + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode("latin-1") + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
            linger = _REFUSED_LINGER_SECONDS if status in (429, 503) else _LINGER_SECONDS
            self._linger = self.loop.call_later(linger, self.transport.close)
        else:
            self.transport.close()


def _hangup_hook(cycle: RequestResponseCycle) -> HangupHook | None:
    extensions: dict[str, Any] = cycle.scope.get("extensions") or {}
    hook = extensions.get(HANGUP_EXTENSION)
    return hook if isinstance(hook, HangupHook) else None
