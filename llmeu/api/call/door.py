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
from llmeu.api.http.asgi import Request
from llmeu.api.http.error_responses import OPENAI_ERRORS, ErrorShape


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
