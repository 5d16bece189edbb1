"""One MCP tool call, from its key to its trace: what `/mcp` does with a `tools/call`.

    async with calls.tool_call(request, key, name, ...) as call:     # the trace
        server, tool, arguments = await call.govern(arguments)      # policy, data, limits
        result = await call.run(server, tool, arguments, meta)       # the server, its result
        await call.respond(result)                                   # durable, then answered

The same guarantees as a model call, on the same parts (`TraceRecorder`,
`Accounting`, the key's policy): exactly one trace per call with the same
statuses (`route: /mcp`, the server and tool, bytes each way, what the
personal-data scan found, the policy that admitted it), the key's limits
(a tool call is a request in its requests per minute), and a hang-up that
closes the connection to the server at once. The order of the governance
step differs in one place: the tool is resolved before its arguments are
screened, so that a call of a tool the caller may not see is refused
without a word about its arguments (`llmeu.api.services.mcp_upstreams`), and
a `restrict` hit is decided against the one server the tool lives on.

Progress notifications of the server go to the client as they come: the
answer becomes a stream (`text/event-stream`) at the first one, else it is
one JSON object. Once the stream has begun, an error is its last event.

A tool call a model call makes itself (a hosted `mcp` tool of a Responses or
Messages request, `llmeu.api.call.hosted_mcp`) is the same call with
`answers=False`: its trace is written as any other, and what the client
would have been told is kept in `failure` for the model's next turn instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from llmeu import __version__
from llmeu.api.call.accounting import Accounting, CallCeiling
from llmeu.api.call.context import CallContext
from llmeu.api.call.settlement import shutting_down
from llmeu.api.call.tool_content import ResultScreen, combined, masked_arguments, screen_arguments
from llmeu.api.call.trace import TraceRecorder
from llmeu.api.http.asgi import JSON_HEADERS, SSE_HEADERS, DisconnectWatch, Headers, Request
from llmeu.api.http.error_responses import ErrorShape, as_api_error, error_headers
from llmeu.api.services.mcp_upstreams import Tool
from llmeu.api.services.policies import PolicyBook
from llmeu.calls.hangup import Hangup
from llmeu.calls.record import CallStatus
from llmeu.errors import (
    ApiError,
    ClientDisconnected,
    PermissionDenied,
    ServiceUnavailable,
    ToolServerError,
    UpstreamError,
)
from llmeu.ledger.api_keys import ApiKey
from llmeu.personal.scan import Screening
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth
from llmeu.protocol.mcp_wire import (
    RECEIPT_META,
    SERVER_INFO_META,
    TRACE_ID_META,
    RequestId,
    notification_message,
    result_message,
    sse_event,
)
from llmeu.routing.policy import Policy, restricted
from llmeu.routing.tool_servers import ToolServer

ROUTE = "/mcp"
SERVER_INFO = {"name": "llmeu", "version": __version__}


def tool_policy(policies: PolicyBook, key: ApiKey, request: Request) -> Policy:
    """The effective policy of an MCP request: the key's, narrowed by the key's own patterns
    of tool servers and tools, then by the `x-llmeu-policy` header."""
    header = request.header(b"x-llmeu-policy")
    return policies.effective_for_tools(
        key.policy_id, key.allow_mcp_servers, key.allow_tools, header
    )


class ToolCall:
    __slots__ = ("_accounting", "_answers", "_context", "_key", "_modern", "_opened", "_policy",
                 "_rules", "_sent", "_shape", "_streaming", "_upstream", "_wants_receipt",
                 "_watch", "failure", "hangup", "kept", "name", "request", "request_id",
                 "trace")  # fmt: skip

    def __init__(
        self,
        context: CallContext,
        request: Request,
        key: ApiKey,
        *,
        name: str,
        request_id: RequestId,
        shape: ErrorShape,
        modern: bool,
        answers: bool = True,
    ):
        self._context = context
        self._answers = answers
        self.failure: ApiError | None = None
        """Why a call that does not answer (`answers=False`) failed."""
        self.kept: dict[str, Any] | None = None
        """The result as the trace keeps it: masked, with placeholders, never a value."""
        self.request = request
        self._key = key
        self.name = name
        self.request_id = request_id
        self._shape = shape
        self._modern = modern
        self.hangup = Hangup()
        self._watch = DisconnectWatch(request.receive, self.hangup, request.hangup_hook)
        self._accounting = Accounting(context.limits, key, context.teams)
        self._policy: Policy | None = None
        key_policy = context.policies.get(key.policy_id)
        self._rules = key_policy.personal_data if key_policy is not None else None
        self._sent: Screening | None = None
        self._upstream = False  # the server was asked: an error now fails the call
        self._streaming = False
        self._wants_receipt = False
        self._opened = 0.0
        self.trace: TraceRecorder

    async def __aenter__(self) -> ToolCall:
        context = self._context
        if not context.accepting:
            raise ServiceUnavailable("the gateway is shutting down", code="shutting_down")
        if context.ledger.full:
            raise ServiceUnavailable(
                "the ledger cannot record calls right now; refusing new calls rather than serve "
                "calls it cannot record",
                code="ledger_unavailable",
            )
        self._opened = time.perf_counter()
        self.trace = TraceRecorder(
            context.ledger, context.observers, key_id=self._key.key_id, route=ROUTE,
            instance_id=context.instance_id, headers=self.request.headers,
            keep_metadata=context.keep_metadata,
        )  # fmt: skip
        self.trace.record.policy_id = self._key.policy_id
        self.trace.requested(self.name, stream=False, texts=())
        task = asyncio.current_task()
        if task is not None:
            context.inflight[self.trace.trace_id] = task
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._watch.stop()
        try:
            if exc is None:
                return False
            if not self.trace.open:  # recorded already: a late hang-up changes nothing
                return isinstance(exc, ClientDisconnected)
            if isinstance(exc, ClientDisconnected):
                await self._finish(CallStatus.CANCELLED, http_status=499)
                return self._answers  # a model call's hang-up is its own to settle
            if isinstance(exc, asyncio.CancelledError):  # the server ended the request
                await self._fail(shutting_down(), CallStatus.INTERRUPTED)
                return False
            if not isinstance(exc, Exception):
                return False
            error = as_api_error(exc)
            # Refused: by policy or limits, or before the server was asked for anything it
            # could fail at (its tool list failing is the server's failure).
            asked = self._upstream or isinstance(exc, UpstreamError)
            refused = not asked or isinstance(exc, PermissionDenied)
            await self._fail(error, CallStatus.REJECTED if refused else CallStatus.FAILED)
            return True
        finally:
            self._context.inflight.pop(self.trace.trace_id, None)

    def received(self, body: bytes) -> None:
        """The request body as received: its digest goes into the receipt."""
        self.trace.received_body(body)

    async def govern(
        self, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> tuple[ToolServer, Tool, dict[str, Any]]:
        """The effective policy (the key's, narrowed by the `x-llmeu-policy` header and the
        key's own patterns), the tool it admits, the arguments screened (and masked where
        the policy masks), the key's limits. Returns what goes to the server."""
        context = self._context
        policy = self._policy = tool_policy(context.policies, self._key, self.request)
        self.trace.governed_by(policy)
        self._wants_receipt = meta.get(RECEIPT_META) is True
        server, tool = await context.tool_servers.resolve(self.name, policy, self.hangup)
        self.trace.tool_routed(server, tool["name"])
        if self._rules is not None:
            arguments = self._screened(arguments, server, policy)
        await self._accounting.admit(lambda: 0, CallCeiling(0, ()), policy.limits_fail)
        return server, tool, arguments

    def _screened(
        self, arguments: dict[str, Any], server: ToolServer, policy: Policy
    ) -> dict[str, Any]:
        assert self._rules is not None
        screening = screen_arguments(arguments, self._rules, policy.policy_id)
        self._sent = screening
        self.trace.personal_data(combined(screening))
        if screening.refusal is not None:
            raise screening.refusal
        if screening.restrict:
            excluded = restricted(policy, self._rules.restrict).exclusion(server)
            if excluded is not None:
                raise PermissionDenied(
                    f"personal data in the arguments restricts where the call may go, and tool "
                    f"server {server.server_id} is not admitted there: {excluded[1]}",
                    code="personal_data_restricted",
                )
        return arguments if screening.masking is None else masked_arguments(arguments, screening)

    async def run(
        self, server: ToolServer, tool: Tool, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> dict[str, Any]:
        """Call the server; the result as the caller is to get it (screened, restored)."""
        self._upstream = True
        self.trace.begin()
        self._watch.start()
        token = meta.get("progressToken")
        relay = self._progress_relay(token) if token is not None else None
        attempt = self.trace.tool_attempt_started(server)
        try:
            outcome = await self._context.tool_servers.call(
                server, tool, arguments, meta, self.hangup, relay, self._key.key_id
            )
        except UpstreamError as error:
            self.trace.attempt_failed(attempt, error)
            raise
        except (ClientDisconnected, asyncio.CancelledError):
            self.trace.attempt_cancelled(attempt)
            raise
        finally:
            self._watch.stop()
        self.trace.tool_attempt_served(attempt, outcome.sent, outcome.received)
        if outcome.error is not None:
            raise ToolServerError(
                outcome.error.message, rpc_code=outcome.error.code, data=outcome.error.data
            )
        result = kept = outcome.result or {}
        if self._rules is not None:  # the scan walks the result: it must not nest too deeply
            if nesting_depth(result) > MAX_NESTING:
                raise UpstreamError(f"tool server {server.server_id} answered JSON nested too "
                                    "deeply to be scanned for personal data")  # fmt: skip
            result, kept = self._screened_result(result)
        self.kept = kept
        self.trace.keep_content(arguments, encoder.encode(kept).decode())
        if result.get("isError") is True:
            self.trace.finish_reason("tool_error")
        return result

    def _screened_result(self, result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The result as the caller gets it, and as the trace keeps it (placeholders)."""
        assert self._rules is not None and self._policy is not None
        screen = ResultScreen(self._sent.masking if self._sent is not None else None)
        screen.run(result, self._rules, self._policy.policy_id)
        self.trace.personal_data(combined(self._sent, screen.screening))
        if screen.screening.refusal is not None:
            raise screen.screening.refusal
        return screen.result(result), screen.result(result, restored=False)

    def _progress_relay(self, token: object) -> Callable[[dict[str, Any]], Any]:
        """Progress of the server's, to the client under its own token; the answer becomes a
        stream at the first. A progress message is text the server wrote: under personal-data
        rules it is left out rather than passed unscanned."""

        async def relay(params: dict[str, Any]) -> None:
            forwarded = {k: v for k, v in params.items() if k != "message" or self._rules is None}
            forwarded["progressToken"] = token
            await self._stream(notification_message("notifications/progress", forwarded))

        return relay

    async def _stream(self, payload: bytes) -> None:
        if not self._streaming:
            self._streaming = True
            await self.request.start(200, self._headers(SSE_HEADERS))
        await self.request.write(sse_event(payload))

    async def respond(self, result: dict[str, Any]) -> None:
        """The result, sent once the call's trace is durable."""
        await self._finish(CallStatus.COMPLETED, http_status=200)
        meta = dict(result.get("_meta") or {})
        meta.pop(SERVER_INFO_META, None)
        meta[TRACE_ID_META] = self.trace.trace_id
        if self._modern:
            meta[SERVER_INFO_META] = SERVER_INFO
        receipt = None
        if self._wants_receipt:
            receipt = meta[RECEIPT_META] = self._context.receipts.of_record(self.trace.record)
        answer = {**result, "_meta": meta}
        if self._modern:
            answer["resultType"] = "complete"
        else:
            answer.pop("resultType", None)
        body = result_message(self.request_id, answer)
        if self._streaming:
            await self.request.write(sse_event(body), more=False)
            return
        headers = self._headers(JSON_HEADERS)
        if receipt is not None:
            headers.append((b"x-llmeu-receipt", receipt.encode()))
        await self.request.respond(200, body, headers)

    async def complete(self) -> None:
        """A call that does not answer (`answers=False`) succeeded: its trace, durable."""
        await self._finish(CallStatus.COMPLETED, http_status=200)

    def _headers(self, headers: Headers) -> Headers:
        return [*headers, (b"x-llmeu-trace-id", self.trace.trace_id.encode())]

    async def _finish(self, status: CallStatus, error: ApiError | None = None,
                      http_status: int | None = None) -> None:  # fmt: skip
        self._accounting.settle(self.trace.record)
        future = self.trace.finish(status, error=error, http_status=http_status)
        self._context.inflight.pop(self.trace.trace_id, None)
        await self.trace.durable(future)

    async def _fail(self, error: ApiError, status: CallStatus) -> None:
        """A refused or failed call: its trace, then its error (the stream's last event once a
        stream has begun)."""
        if isinstance(error, UpstreamError) and self.trace.record.mcp_server is not None:
            server = self._context.tool_servers.catalog.get(self.trace.record.mcp_server)
            if server is not None:
                error.message = self._context.tool_servers.redacted(server, error)
        status_code = 200 if self._streaming else self._shape.status(error)
        await self._finish(status, error, http_status=status_code)
        if not self._answers:
            self.failure = error
            return
        body = self._shape.body(error, {"trace_id": self.trace.trace_id})
        if self._streaming:
            await self.request.write(sse_event(body), more=False)
        elif not self.request.response_started:
            headers = error_headers(error, self.trace.trace_id)
            await self.request.respond(status_code, body, headers)
