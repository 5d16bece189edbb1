"""The MCP tool servers a gateway reaches: the catalog, a client of each, their tools, health.

Built once by the gateway (and again on a reload). Which servers a call may
reach is the effective policy's decision (`Policy.exclusion`, the predicate
table of endpoints); which of their tools, `Policy.admits_tool`. A server is
asked nothing until a caller whose policy admits it lists or calls its tools:
a server no policy in use admits receives no request at all.

A server's tool list is kept: a client's `tools/list` asks the server again
once the list is older than the server says it stays fresh (`ttlMs`, else a
minute); a `tools/call` trusts a list up to five minutes old, and asks again
only when the tool is not in it. A tool that is not in the list, on a server
the policy does not admit, or that the policy's `allow_tools` leaves out, is
the same `Unknown tool` error: the caller learns nothing of what exists
beyond its policy.

Each server has its circuit in the gateway's breaker (as `mcp:<server_id>`,
beside the endpoints'): consecutive failures open it, and calls to it are
then refused at once until a probe succeeds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llmeu.calls.hangup import Hangup
from llmeu.credentials import redact_credentials
from llmeu.errors import ApiError, ProtocolError, UpstreamError, UpstreamUnavailable
from llmeu.protocol.mcp_wire import INVALID_PARAMS
from llmeu.providers.mcp_client import Progress, ToolOutcome, ToolServerClient
from llmeu.providers.transport import HttpClient
from llmeu.routing.breaker import CircuitBreaker, failure_kind
from llmeu.routing.policy import Policy
from llmeu.routing.router import Health
from llmeu.routing.tool_servers import (
    ToolCatalog,
    ToolServer,
    missing_tool_credentials,
    split_tool_name,
)

log = logging.getLogger("llmeu.mcp")

LIST_FRESH = 60.0
"""Seconds a tool list is fresh when its server does not say (`ttlMs`)."""
CALL_TRUSTS = 300.0
"""Seconds a `tools/call` trusts a kept tool list without asking the server again."""
_RECHECK = 1.0

Tool = dict[str, Any]


def unknown_tool(name: str) -> ProtocolError:
    """The one answer to a tool that is not there, not admitted or not allowed."""
    return ProtocolError(f"Unknown tool: {name}", rpc_code=INVALID_PARAMS)


def breaker_id(server: ToolServer) -> str:
    return f"mcp:{server.server_id}"


@dataclass(slots=True)
class _Listing:
    tools: dict[str, Tool]
    fetched: float
    fresh_for: float


class ToolServers:
    def __init__(
        self,
        catalog: ToolCatalog,
        http: HttpClient,
        environ: Mapping[str, str],
        breaker: CircuitBreaker,
    ):
        self.catalog = catalog
        self.breaker = breaker
        self.unavailable = missing_tool_credentials(catalog, environ)
        """Server id → why it cannot be called (a credential variable is unset)."""
        self.clients = {
            s.server_id: ToolServerClient(s, http, environ)
            for s in catalog.servers
            if s.server_id not in self.unavailable
        }
        self._listings: dict[str, _Listing] = {}
        self._listing: dict[str, asyncio.Future[_Listing]] = {}

    def reachable(self, policy: Policy) -> list[ToolServer]:
        """The servers `policy` admits and the gateway can call."""
        return [s for s in self.catalog.servers if s.server_id in self.clients and policy.admits(s)]

    async def tools_for(self, policy: Policy, hangup: Hangup) -> list[tuple[ToolServer, Tool]]:
        """Every tool `policy` admits, server by server; a server that cannot list its tools
        now is left out (and logged) rather than fail the whole list."""
        now = time.monotonic()
        servers = [s for s in self.reachable(policy) if not self._open(s, now)]
        listings = await asyncio.gather(
            *(self._listed(s, hangup, max_age=None) for s in servers), return_exceptions=True
        )
        tools: list[tuple[ToolServer, Tool]] = []
        for server, listing in zip(servers, listings, strict=True):
            if isinstance(listing, BaseException):
                if not isinstance(listing, Exception):
                    raise listing
                hangup.check()
                log.warning("tool server %s left out of a tool list: %s", server.server_id,
                            self.redacted(server, listing))  # fmt: skip
                continue
            tools.extend(
                (server, tool)
                for name, tool in listing.tools.items()
                if policy.admits_tool(server.exposed(name))
            )
        return tools

    async def tools_of(self, server: ToolServer, policy: Policy, hangup: Hangup) -> list[Tool]:
        """The tools of one server `policy` admits (and admits the server: the caller checks);
        `Unknown` errors of the server propagate."""
        self._refuse_if_open(server)
        listing = await self._listed(server, hangup, max_age=None)
        return [t for n, t in listing.tools.items() if policy.admits_tool(server.exposed(n))]

    async def resolve(self, name: str, policy: Policy, hangup: Hangup) -> tuple[ToolServer, Tool]:
        """The server and tool an exposed name stands for, if `policy` lets the call through;
        else the `Unknown tool` error (see the module docstring)."""
        parts = split_tool_name(name)
        server = self.catalog.get(parts[0]) if parts is not None else None
        if parts is None or server is None or server.server_id not in self.clients:
            raise unknown_tool(name)
        if policy.exclusion(server) is not None or not policy.admits_tool(name):
            raise unknown_tool(name)
        self._refuse_if_open(server)
        listing = await self._listed(server, hangup, max_age=CALL_TRUSTS)
        tool = listing.tools.get(parts[1])
        if tool is None and time.monotonic() - listing.fetched >= _RECHECK:
            listing = await self._listed(server, hangup, max_age=0.0)
            tool = listing.tools.get(parts[1])
        if tool is None:
            raise unknown_tool(name)
        return server, tool

    async def call(
        self,
        server: ToolServer,
        tool: Tool,
        arguments: dict[str, Any],
        meta: Mapping[str, Any],
        hangup: Hangup,
        progress: Progress | None,
        key_id: str,
    ) -> ToolOutcome:
        """Call the tool; the server's health learns how it went."""
        self._refuse_if_open(server)
        self.breaker.attempt_started(breaker_id(server), time.monotonic(), key_id=key_id)
        try:
            outcome = await self.clients[server.server_id].call_tool(
                tool, arguments, meta, hangup, progress
            )
        except UpstreamError as error:
            error.message = self.redacted(server, error)
            error.args = (error.message,)
            if error.retryable:
                kind = failure_kind(error)
                self.breaker.failed(breaker_id(server), time.monotonic(), kind=kind, key_id=key_id)
            raise
        self.breaker.succeeded(breaker_id(server))
        return outcome

    def redacted(self, server: ToolServer, error: Exception) -> str:
        """An error's text without the server's credentials (`llmeu.credentials`)."""
        client = self.clients.get(server.server_id)
        text = error.message if isinstance(error, ApiError) else str(error)
        return redact_credentials(text, client.secrets if client is not None else ())

    def health(self, server: ToolServer) -> dict[str, Any]:
        return self.breaker.describe(breaker_id(server), time.monotonic())

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.aclose()

    def _open(self, server: ToolServer, now: float) -> bool:
        return self.breaker.health(breaker_id(server), now) is Health.OPEN

    def _refuse_if_open(self, server: ToolServer) -> None:
        if self._open(server, time.monotonic()):
            raise UpstreamUnavailable(
                f"tool server {server.server_id} is failing: its circuit is open until a probe "
                "succeeds", code="circuit_open",
            )  # fmt: skip

    async def _listed(self, server: ToolServer, hangup: Hangup, max_age: float | None) -> _Listing:
        """The server's kept tool list, asked again when older than `max_age` (None: than the
        server says it stays fresh). Callers asking at once share one request."""
        kept = self._listings.get(server.server_id)
        if kept is not None:
            age = time.monotonic() - kept.fetched
            if age < (kept.fresh_for if max_age is None else max_age):
                return kept
        loop = asyncio.get_running_loop()
        pending = self._listing.get(server.server_id)
        if pending is None:
            pending = loop.create_task(self._fetch(server))
            self._listing[server.server_id] = pending
            pending.add_done_callback(lambda task: self._fetched(server, task))
        gone: asyncio.Future[None] = loop.create_future()

        def hung_up(_: BaseException) -> None:
            if not gone.done():
                gone.set_result(None)

        hangup.bind(hung_up)
        try:
            await asyncio.wait((pending, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            hangup.unbind(hung_up)
            gone.cancel()
        hangup.check()
        return pending.result()

    def _fetched(self, server: ToolServer, task: asyncio.Future[_Listing]) -> None:
        """The shared request is over; its failure is each waiter's to raise (and is marked
        seen here, for when every waiter has gone)."""
        self._listing.pop(server.server_id, None)
        if not task.cancelled():
            task.exception()

    async def _fetch(self, server: ToolServer) -> _Listing:
        listed = await self.clients[server.server_id].list_tools(Hangup())
        for name, problem in listed.left_out:
            log.warning("tool server %s: tool %r left out: %s", server.server_id, name, problem)
        fresh_for = LIST_FRESH if listed.ttl is None else listed.ttl
        listing = _Listing({t["name"]: t for t in listed.tools}, time.monotonic(), fresh_for)
        self._listings[server.server_id] = listing
        return listing


class InFlight:
    """The tool calls running, by (key, session, request id): how a handshake-era client's
    `notifications/cancelled` finds the call it cancels (never another key's)."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[tuple[str, str, object], Hangup] = {}

    def add(self, scope: tuple[str, str], request_id: object, hangup: Hangup) -> None:
        self._calls[(*scope, request_id)] = hangup

    def remove(self, scope: tuple[str, str], request_id: object) -> None:
        self._calls.pop((*scope, request_id), None)

    def cancel(self, scope: tuple[str, str], request_id: object) -> bool:
        hangup = self._calls.get((*scope, request_id))
        if hangup is None:
            return False
        hangup.fire()
        return True
