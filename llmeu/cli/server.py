"""uvicorn's server with the gateway's graceful shutdown in front of its own.

On SIGTERM (or SIGINT) uvicorn stops listening, asks idle keep-alive
connections to close, waits up to `timeout_graceful_shutdown` for the rest
and then *cancels* the request tasks still running: a stream cut that way
ends without a word to the client. The gateway drains first instead: it
stops listening and refuses new calls at once, lets the calls in flight run
for up to `grace` seconds, then ends each one itself — a stream with the
error frame of DESIGN §2 (code `gateway_shutdown`, no `[DONE]`), a call not
yet answered with a 503 — and records it `interrupted` with what it produced.
uvicorn's own shutdown then finds nothing left to cancel, the lifespan
flushes the ledger, and the process exits 0.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import uvicorn

from llmeu.api.gateway import Gateway


class GatewayServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, gateway: Gateway, grace: float):
        super().__init__(config)
        self.gateway = gateway
        self.grace = grace

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        await self.gateway.drain(self.grace)
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            # uvicorn raises the caught signal again once serving ended, so that the
            # process dies of it; the gateway has finished its work by then and
            # exits with status 0 instead.
            self._captured_signals.clear()
