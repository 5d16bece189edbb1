"""The door every inference call comes through.

`Calls` is built once by the gateway and handed to each inference route;
`Calls.open` starts one call (`llmeu.api.call.lifecycle.Call`) on the
gateway's `CallContext`. While the gateway stops, the door refuses new calls
and waits for those in flight to record how they ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from llmeu.api.call.context import CallContext
from llmeu.api.call.governance import Governance
from llmeu.api.call.lifecycle import Call
from llmeu.api.call.tool_call import ToolCall, tool_policy
from llmeu.api.http.asgi import Request
from llmeu.api.http.error_responses import OPENAI_ERRORS, ErrorShape
from llmeu.ledger.api_keys import ApiKey
from llmeu.protocol.mcp_wire import RequestId
from llmeu.routing.policy import Policy

Caller = ApiKey
"""The key a request that is not (yet) a call is authenticated as: a value the routes hand
back to the door (`key`, `tool_policy`, `tool_call`), never look into."""


class Calls:
    """One per gateway."""

    __slots__ = ("context", "governance")

    def __init__(self, context: CallContext):
        self.context = context
        self.governance = Governance(context.policies)
        """For what is not a call but is governed like one (`count_tokens`)."""

    def open(
        self,
        request: Request,
        route: str,
        *,
        shape: ErrorShape = OPENAI_ERRORS,
        credentials: Callable[[Request], str | None] | None = None,
    ) -> Call:
        """A call on `request`, entered with `async with`; `credentials` finds the API key
        (default: the `Authorization` header)."""
        return Call(self.context, self.governance, request, route, shape, credentials)

    async def key(self, request: Request) -> Caller:
        """The key of a request that is not (yet) a call: an MCP message (`Authorization`)."""
        return await self.context.keys.authenticate(
            request.header(b"authorization"), request.client
        )

    def tool_policy(self, request: Request, key: ApiKey) -> Policy:
        """The policy an MCP request of `key`'s is governed by (`tool_call.tool_policy`)."""
        return tool_policy(self.context.policies, key, request)

    def tool_call(
        self,
        request: Request,
        key: ApiKey,
        name: str,
        request_id: RequestId,
        *,
        shape: ErrorShape,
        modern: bool,
    ) -> ToolCall:
        """An MCP `tools/call` of `key`'s (`llmeu.api.call.tool_call`), entered with
        `async with`."""
        return ToolCall(self.context, request, key, name=name, request_id=request_id,
                        shape=shape, modern=modern)  # fmt: skip

    @property
    def accepting(self) -> bool:
        return self.context.accepting

    def stop_accepting(self) -> None:
        self.context.accepting = False

    async def settle_inflight(self, timeout: float) -> None:
        """Wait (at most `timeout`) for the calls in flight to record how they ended."""
        inflight = self.context.inflight
        if inflight:
            await asyncio.wait(set(inflight.values()), timeout=timeout)
