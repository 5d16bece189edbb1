"""The Responses API: `POST /v1/responses` over every upstream (the stored responses'
own routes are `llmeu.api.routes.responses_stored`).

parse → govern → call → respond: the body decodes into a
`ResponsesRequest` and becomes the `ChatRequest` every provider serves
(`llmeu.protocol.responses_wire`); a stream is written by `ResponsesEvents`
(`llmeu.protocol.responses_stream`); the lifecycle does the rest — the same
policy, fallback, limits, trace and hang-up as chat completions. An attempt
on an endpoint that declares the `responses` capability passes the request
through to its own Responses API instead (`llmeu.providers.responses_native`):
same route plan, same encoder, so the caller cannot tell the two apart but by
what the upstream could do (reasoning items with their `encrypted_content`).

`store` (OpenAI's default: true) keeps a response only when the effective
policy's `store_content` is longer than zero, and for that long; otherwise
the call is answered, nothing is kept, the response says `store: false`, and
an `x-llmeu-notice` header names the policy and its `store_content` as the
reason (so does a 404 for a response that such a policy could not have kept).
A stored response is its key's alone: another key's id is as unknown (404)
as a missing or expired one. `previous_response_id` continues a stored
conversation under the policy of the new call, which must itself store
content (a 400 otherwise: it could keep nothing of the continuation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET

from llmeu.api.call import asks, hosted_mcp
from llmeu.api.call.accounting import completed_counts, estimate_prompt_tokens
from llmeu.api.call.door import Calls
from llmeu.api.call.governance import Intent, chat_intent
from llmeu.api.call.lifecycle import Call
from llmeu.api.http.asgi import Request
from llmeu.api.http.bodies import decode_body
from llmeu.api.services.response_store import ResponseStore, keeps_nothing
from llmeu.cache.lookups import chat_cacheable
from llmeu.calls.hosted_tools import HostedTool
from llmeu.calls.output import (
    AssistantOutput,
    Delta,
    DeltaAnswer,
    StreamOutput,
    ToolCallCustomDelta,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.calls.request import ChatRequest, Message
from llmeu.errors import InvalidRequest, NotFound
from llmeu.personal.chat_text import restored_tool_calls
from llmeu.personal.responses_text import responses_parts, responses_rewritten
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth
from llmeu.protocol.responses_input import input_item_list, input_messages
from llmeu.protocol.responses_object import (
    Namespaced,
    ResponseObject,
    final_status,
    output_items,
    response_id,
    response_shell,
    response_usage,
)
from llmeu.protocol.responses_stream import ResponsesEvents
from llmeu.protocol.responses_tools import chat_tools
from llmeu.protocol.responses_upstream import native_body
from llmeu.protocol.responses_wire import (
    ResponsesRequest,
    check_request,
    ignored_fields,
    to_chat,
)
from llmeu.routing.catalog import Endpoint
from llmeu.routing.endpoint_kinds import responses_native

_decoder = msgspec.json.Decoder(ResponsesRequest)


async def handle_responses(calls: Calls, stored: ResponseStore, request: Request) -> None:
    async with calls.open(request, "responses") as call:
        req = parse_responses(await call.body())
        hosted, others = hosted_mcp.from_responses(req.tools)
        req = msgspec.structs.replace(req, tools=others or UNSET) if hosted else req
        history = await _history(stored, req, call, calls)
        tools = chat_tools(req.tools)
        chat = to_chat(req, history, stream=bool(req.stream), tools=tools)
        mcp = None
        if hosted:  # hosted `mcp` tools: only catalogued servers the policy admits
            hosted_mcp.refuse_streams(bool(req.stream))
            mcp = await hosted_mcp.admit(calls.context, call, hosted)
            chat = hosted_mcp.offered(chat, mcp)
        # The policy's personal-data rules see all the upstream gets, the whole conversation
        # (stored turns included) and every setting; a masked prompt is what the trace keeps,
        # and what a native endpoint gets (`sent`) is masked as the chat request is.
        sent, chat = await call.govern(_intent(req, chat, tools.hosted))
        if mcp is None:
            # What a native upstream reads besides the chat it maps onto changes its answer.
            extras = (sent.reasoning, sent.text, sent.truncation, sent.include)
            await call.consult_cache(lambda: chat_cacheable(chat, extras))
        keep = _Keeper(stored, call, req, history)
        if isinstance(req.previous_response_id, str) and not keep.seconds:
            raise InvalidRequest(
                f"policy {call.trace.record.policy_id} stores no content, so no conversation "
                "can be continued under it",
                param="previous_response_id",
            )
        served = _Served(call, req, sent, chat, tools.namespaced)
        if mcp is not None:
            endpoint, got, _ = await hosted_mcp.answer(
                calls.context, call, chat, mcp, estimate_prompt_tokens(chat)
            )
            items = hosted_mcp.responses_items(call.trace_id[4:], mcp)
            await _respond_native(served, keep, endpoint, got, leading=items)
        elif req.stream:
            await _stream(served, keep)
        else:
            await _complete(served, keep)


Sent = tuple[ResponsesRequest, ChatRequest]
"""What goes upstream: the request as a native endpoint gets it, and as chat completions."""


def _intent(req: ResponsesRequest, chat: ChatRequest, hosted: list[HostedTool]) -> Intent[Sent]:
    """The chat request's intent, but screened and masked together with every setting of the
    Responses request that a native endpoint is sent; its hosted tools go only to an endpoint
    that takes Responses calls natively."""
    asked = chat_intent(chat, stream=bool(req.stream), subject=req.end_user)
    return Intent(
        model=asked.model,
        prompt=(req, chat),
        parts=lambda sent: responses_parts(*sent),
        masked=lambda sent, screening: responses_rewritten(*sent, screening.masked),
        kept=lambda sent: sent[1].messages,
        needs=asked.needs,
        narrowing=asked.narrowing,
        stream=asked.stream,
        texts=asked.texts,
        prompt_tokens=lambda sent: estimate_prompt_tokens(sent[1]),
        subject=asked.subject,
        max_output_tokens=asked.max_output_tokens,
        hosted=lambda _: hosted,  # their options go upstream in `sent`, screened with it
        runs_hosted=responses_native,
    )


def parse_responses(body: bytes) -> ResponsesRequest:
    req = decode_body(_decoder.decode, body)
    for param, value in (("tools", req.tools), ("input", req.input), ("text", req.text)):
        if nesting_depth(value) > MAX_NESTING:
            raise InvalidRequest(
                f"Invalid request: nested more than {MAX_NESTING} levels deep", param=param
            )
    check_request(req)
    return req


def _noted(call: Call, req: ResponsesRequest) -> Callable[[bool], None]:
    """Per attempt, the fields it serves without effect (a native upstream takes more of
    them): the serving attempt's list is the one the trace keeps."""

    def note(native: bool) -> None:
        call.ignored(", ".join(ignored_fields(req, native=native)), kind="fields")

    return note


async def _history(
    stored: ResponseStore, req: ResponsesRequest, call: Call, calls: Calls
) -> list[Message]:
    previous = req.previous_response_id
    if not isinstance(previous, str):
        return []
    found = await stored.conversation(previous, call.key.key_id)
    if found is None:
        why = keeps_nothing(calls.context.policies.get(call.key.policy_id))
        raise NotFound(
            f"no stored response {previous!r}: it does not exist, expired, or was stored by "
            "another key" + (f"; {why}" if why else ""),
            param="previous_response_id",
            code="previous_response_not_found",
        )
    return found


class _Keeper:
    """What `store` keeps of one call, when its effective policy allows it."""

    def __init__(
        self, stored: ResponseStore, call: Call, req: ResponsesRequest, history: list[Message]
    ) -> None:
        policy = call.trace.policy
        wanted = req.store is not False
        self.seconds = policy.store_content.seconds if policy is not None else 0
        self.store = wanted and self.seconds > 0
        why = keeps_nothing(policy)
        if wanted and why is not None:
            call.notice(f"store: {why}")
        self._stored = stored
        self._call = call
        self._req = req
        self._history = history

    async def keep(self, response: ResponseObject) -> None:
        if not self.store:
            return
        req = self._req
        conversation = [
            *self._history,
            *input_messages(req.input),
            *input_messages(response.output),
        ]
        await self._stored.keep(
            response_id=response.id,
            response=response,
            key_id=self._call.key.key_id,
            subject=req.end_user,
            seconds=self.seconds,
            input_items=input_item_list(req.input, response.id),
            conversation=conversation,
        )


class _Served:
    """What serving one call needs besides its request: the call, the request as a native
    endpoint gets it (`sent`) and as chat completions, and its namespaced tools."""

    __slots__ = ("call", "chat", "namespaced", "req", "sent")

    def __init__(
        self,
        call: Call,
        req: ResponsesRequest,
        sent: ResponsesRequest,
        chat: ChatRequest,
        namespaced: Namespaced,
    ) -> None:
        self.call, self.req, self.sent, self.chat = call, req, sent, chat
        self.namespaced = namespaced

    def shell(self, endpoint: Endpoint, store: bool) -> ResponseObject:
        call = self.call
        return response_shell(
            self.req,
            response_id=response_id(call.trace_id),
            created_at=int(call.trace.record.received_at),
            model=endpoint.model,
            store=store,
            hosted=self.hosted(endpoint),
        )

    def hosted(self, endpoint: Endpoint) -> list[str]:
        """Where the hosted tools `endpoint` gets are in the request."""
        return [tool.param for tool in self.call.tools.passed(endpoint)]

    def native_body(self, endpoint: Endpoint, model: str, stream: bool) -> bytes:
        """The body for an endpoint that speaks the Responses API itself: the request as
        screened (masked where the policy masks), with the hosted tools it gets."""
        return native_body(self.sent, self.chat, model, stream=stream,
                           namespaced=self.namespaced, hosted=self.hosted(endpoint))  # fmt: skip


async def _stream(served: _Served, keep: _Keeper) -> None:
    call = served.call
    events: list[ResponsesEvents] = []

    def frames(endpoint: Endpoint) -> ResponsesEvents:
        events.append(ResponsesEvents(served.shell(endpoint, keep.store), served.namespaced))
        return events[0]

    async def completing(finish_reason: str, usage: Usage) -> None:
        if keep.store:
            await keep.keep(events[0].response(finish_reason, usage, call.routing_block()))

    ask = asks.responses_stream(served.chat, served.native_body, _noted(call, served.req))
    await call.stream(ask, frames, completing)


async def _complete(served: _Served, keep: _Keeper) -> None:
    call, chat = served.call, served.chat
    ask = asks.responses_answer(chat, served.native_body, _noted(call, served.req))
    endpoint, completion = await call.complete(ask)
    if isinstance(completion, DeltaAnswer):
        await _respond_native(served, keep, endpoint, completion)
        return
    message = completion.message
    message = msgspec.structs.replace(
        message,
        content=call.restore(message.content) if message.content else message.content,
        refusal=call.restore(message.refusal) if message.refusal else message.refusal,
        tool_calls=restored_tool_calls(message.tool_calls, call.restore, call.restore_json),
    )
    call.counted(completed_counts(completion.usage, message, lambda: estimate_prompt_tokens(chat)))
    call.reported(completion.usage)
    call.keep_content(message.content or "")
    call.finish_reason(completion.finish_reason)
    shell = served.shell(endpoint, keep.store)
    status, details = final_status(completion.finish_reason)
    usage = call.usage()
    tool_calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    output = output_items(shell.id, message.content, message.refusal, tool_calls,
                          served.namespaced)  # fmt: skip
    response = msgspec.structs.replace(
        shell,
        status=status,
        incomplete_details=details,
        output=output,
        usage=response_usage(usage.prompt_tokens, usage.completion_tokens),
        llmeu=call.routing_block(),
    )
    await keep.keep(response)
    await call.respond(encoder.encode(response))


async def _respond_native(
    served: _Served,
    keep: _Keeper,
    endpoint: Endpoint,
    answer: DeltaAnswer,
    *,
    leading: list[dict[str, Any]] | None = None,
) -> None:
    """A whole native answer, built by the stream encoder from its deltas: the same items,
    ids and restored text as the streamed answer. `leading` items come first (the hosted MCP
    tools' calls, whose rounds were counted already)."""
    call = served.call
    events = ResponsesEvents(served.shell(endpoint, keep.store), served.namespaced)
    produced = StreamOutput()
    for delta in answer.deltas:
        delta = _restored(delta, call.restore, call.restore_json)
        produced.add(delta)
        events.delta(delta)
    tool_calls = produced.tool_calls()
    message = AssistantOutput("assistant", produced.content or None, produced.refusal,
                              tool_calls or UNSET)  # fmt: skip
    if leading is None:
        prompt = lambda: estimate_prompt_tokens(served.chat)  # noqa: E731
        call.counted(completed_counts(answer.usage, message, prompt))
    call.reported(answer.usage)
    call.keep_content(produced.stored())
    call.finish_reason(answer.finish_reason)
    response = events.response(answer.finish_reason, call.usage(), call.routing_block())
    if leading:
        response = msgspec.structs.replace(response, output=[*leading, *response.output])
    await keep.keep(response)
    await call.respond(encoder.encode(response))


def _restored(
    delta: Delta, restore: Callable[[str], str], restore_json: Callable[[str], str]
) -> Delta:
    """A whole answer's delta with the values of a masking put back (each is whole: no
    placeholder is split across them)."""
    changes: dict[str, Any] = {
        name: restore(text)
        for name in ("content", "refusal", "reasoning_content")
        if isinstance(text := getattr(delta, name), str) and text
    }
    if isinstance(delta.tool_calls, list):
        changes["tool_calls"] = [
            _restored_call(call, restore, restore_json) for call in delta.tool_calls
        ]
    return msgspec.structs.replace(delta, **changes) if changes else delta


def _restored_call(
    call: ToolCallDelta, restore: Callable[[str], str], restore_json: Callable[[str], str]
) -> ToolCallDelta:
    """The call's custom input restored as text, its function arguments as JSON."""
    replace = msgspec.structs.replace
    custom, function = call.custom, call.function
    if isinstance(custom, ToolCallCustomDelta) and isinstance(custom.input, str):
        return replace(call, custom=replace(custom, input=restore(custom.input)))
    if isinstance(function, ToolCallFunctionDelta) and isinstance(function.arguments, str):
        arguments = restore_json(function.arguments)
        return replace(call, function=replace(function, arguments=arguments))
    return call
