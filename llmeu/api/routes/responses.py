"""The Responses API: `POST /v1/responses` over every upstream, and the stored
responses (`GET`/`DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`).

parse → route → call → record → respond: the body decodes into a
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
the call is answered, nothing is kept, and the response says `store: false`.
A stored response is its key's alone: another key's id is as unknown (404)
as a missing or expired one. `previous_response_id` continues a stored
conversation under the policy of the new call, which must itself store
content (a 400 otherwise: it could keep nothing of the continuation).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET

from llmeu.api.accounting import completed_counts, estimate_prompt_tokens
from llmeu.api.asgi import Request
from llmeu.api.bodies import decode_body
from llmeu.api.inference import Calls
from llmeu.api.lifecycle import Call
from llmeu.api.routes.chat_completions import output_cap
from llmeu.calls.hangup import Hangup
from llmeu.calls.output import (
    AssistantOutput,
    Completion,
    Delta,
    StreamOutput,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.calls.request import ChatRequest, Message, text_of
from llmeu.errors import InvalidRequest, NotFound
from llmeu.ledger.retention import subject_digest
from llmeu.ledger.stored_responses import StoredResponse, StoredResponses
from llmeu.personal.chat_text import chat_parts, restored_tool_calls, rewritten
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth
from llmeu.protocol.responses_input import input_item_list, input_messages
from llmeu.protocol.responses_object import (
    ResponseObject,
    final_status,
    output_items,
    response_id,
    response_shell,
    response_usage,
)
from llmeu.protocol.responses_stream import ResponsesEvents
from llmeu.protocol.responses_upstream import native_body
from llmeu.protocol.responses_wire import (
    ResponsesRequest,
    check_request,
    ignored_fields,
    to_chat,
)
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.responses_native import NativeAnswer, native
from llmeu.routing.catalog import Capability, Endpoint

_CHAT = frozenset({Capability.CHAT})
_CHAT_TOOLS = frozenset({Capability.CHAT, Capability.TOOLS})
_decoder = msgspec.json.Decoder(ResponsesRequest)
_conversation_decoder = msgspec.json.Decoder(list[Message])


async def handle_responses(calls: Calls, stored: StoredResponses, request: Request) -> None:
    async with calls.open(request, "responses") as call:
        req = parse_responses(await call.body())
        history = await _history(stored, req, call.key_id)
        chat = to_chat(req, history, stream=bool(req.stream))
        call.requested(
            chat.model,
            stream=bool(req.stream),
            texts=[text_of(m) for m in chat.messages],
            prompt=chat.messages,
            prompt_tokens=lambda: estimate_prompt_tokens(chat),
            subject=req.end_user,
            max_output_tokens=output_cap(chat),
        )
        # The policy's personal-data rules see the whole conversation the upstream gets,
        # stored turns included; a masked prompt is what the trace keeps.
        screening = call.screen(lambda: chat_parts(chat))
        if screening is not None and screening.masking is not None:
            chat = rewritten(chat, screening.masked)
            call.keep_prompt(chat.messages)
        await call.admit()
        call.route(chat.model, _CHAT_TOOLS if chat.tools else _CHAT, chat.llmeu)
        keep = _Keeper(stored, call, req, history)
        if isinstance(req.previous_response_id, str) and not keep.seconds:
            raise InvalidRequest(
                f"policy {call.trace.record.policy_id} stores no content, so no conversation "
                "can be continued under it",
                param="previous_response_id",
            )
        if req.stream:
            await _stream(call, req, chat, keep)
        else:
            await _complete(call, req, chat, keep)


def parse_responses(body: bytes) -> ResponsesRequest:
    req = decode_body(_decoder.decode, body)
    for param, value in (("tools", req.tools), ("input", req.input), ("text", req.text)):
        if nesting_depth(value) > MAX_NESTING:
            raise InvalidRequest(
                f"Invalid request: nested more than {MAX_NESTING} levels deep", param=param
            )
    check_request(req)
    return req


def _note_ignored(call: Call, req: ResponsesRequest, *, native: bool) -> None:
    """The fields this attempt serves without effect (a native upstream takes more of them)."""
    if ignored := ignored_fields(req, native=native):
        call.trace.ignored(", ".join(ignored))


async def _history(stored: StoredResponses, req: ResponsesRequest, key_id: str) -> list[Message]:
    previous = req.previous_response_id
    if not isinstance(previous, str):
        return []
    found = await stored.get(previous, key_id, time.time())
    if found is None:
        raise NotFound(
            f"no stored response {previous!r}: it does not exist, expired, or was stored by "
            "another key",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    return _conversation_decoder.decode(found.conversation)


class _Keeper:
    """What `store` keeps of one call, when its effective policy allows it."""

    def __init__(
        self, stored: StoredResponses, call: Call, req: ResponsesRequest, history: list[Message]
    ) -> None:
        policy = call.trace.policy
        wanted = req.store is not False
        self.seconds = policy.store_content.seconds if policy is not None else 0
        self.store = wanted and self.seconds > 0
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
        subject = req.end_user
        now = time.time()
        await self._stored.save(
            StoredResponse(
                response_id=response.id,
                key_id=self._call.key_id,
                subject_sha256=subject_digest(subject) if subject else None,
                created_at=now,
                expires_at=now + self.seconds,
                response=encoder.encode(response).decode(),
                input_items=json.dumps(input_item_list(req.input, response.id)),
                conversation=encoder.encode(conversation).decode(),
            )
        )


def _shell(call: Call, req: ResponsesRequest, endpoint: Endpoint, store: bool) -> ResponseObject:
    return response_shell(
        req,
        response_id=response_id(call.trace_id),
        created_at=int(call.trace.record.received_at),
        model=endpoint.model,
        store=store,
    )


async def _stream(call: Call, req: ResponsesRequest, chat: ChatRequest, keep: _Keeper) -> None:
    async def open_stream(provider: Provider, hangup: Hangup) -> ChatStream:
        responses = native(provider)
        _note_ignored(call, req, native=responses is not None)
        if responses is not None:
            return await responses.stream(
                native_body(req, chat, responses.model, stream=True), hangup
            )
        return await provider.stream_chat(chat, hangup)

    events: list[ResponsesEvents] = []

    def frames(endpoint: Endpoint) -> ResponsesEvents:
        events.append(ResponsesEvents(_shell(call, req, endpoint, keep.store)))
        return events[0]

    async def completing(finish_reason: str, usage: Usage) -> None:
        if keep.store:
            await keep.keep(events[0].response(finish_reason, usage, call.routing_block()))

    await call.stream(open_stream, frames, completing)


async def _complete(call: Call, req: ResponsesRequest, chat: ChatRequest, keep: _Keeper) -> None:
    async def ask(provider: Provider, hangup: Hangup) -> Completion | NativeAnswer:
        responses = native(provider)
        _note_ignored(call, req, native=responses is not None)
        if responses is not None:
            body = native_body(req, chat, responses.model, stream=False)
            return await responses.complete(body, hangup)
        return await provider.complete_chat(chat, hangup)

    endpoint, completion = await call.complete(ask)
    if isinstance(completion, NativeAnswer):
        await _respond_native(call, req, chat, keep, endpoint, completion)
        return
    message = completion.message
    message = msgspec.structs.replace(
        message,
        content=call.restore(message.content) if message.content else message.content,
        refusal=call.restore(message.refusal) if message.refusal else message.refusal,
        tool_calls=restored_tool_calls(message.tool_calls, call.restore),
    )
    call.counted(completed_counts(completion.usage, message, lambda: estimate_prompt_tokens(chat)))
    call.keep_content(message.content or "")
    call.finish_reason(completion.finish_reason)
    shell = _shell(call, req, endpoint, keep.store)
    status, details = final_status(completion.finish_reason)
    usage = call.usage()
    tool_calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    response = msgspec.structs.replace(
        shell,
        status=status,
        incomplete_details=details,
        output=output_items(shell.id, message.content, message.refusal, tool_calls),
        usage=response_usage(usage.prompt_tokens, usage.completion_tokens),
        llmeu=call.routing_block(),
    )
    await keep.keep(response)
    await call.respond(encoder.encode(response))


async def _respond_native(
    call: Call,
    req: ResponsesRequest,
    chat: ChatRequest,
    keep: _Keeper,
    endpoint: Endpoint,
    answer: NativeAnswer,
) -> None:
    """A whole native answer, built by the stream encoder from its deltas: the same items,
    ids and restored text as the streamed answer."""
    events = ResponsesEvents(_shell(call, req, endpoint, keep.store))
    produced = StreamOutput()
    for delta in answer.deltas:
        delta = _restored(delta, call.restore)
        produced.add(delta)
        events.delta(delta)
    tool_calls = produced.tool_calls()
    message = AssistantOutput("assistant", produced.content or None, produced.refusal,
                              tool_calls or UNSET)  # fmt: skip
    call.counted(completed_counts(answer.usage, message, lambda: estimate_prompt_tokens(chat)))
    call.reported(answer.usage)
    call.keep_content(produced.stored())
    call.finish_reason(answer.finish_reason)
    response = events.response(answer.finish_reason, call.usage(), call.routing_block())
    await keep.keep(response)
    await call.respond(encoder.encode(response))


def _restored(delta: Delta, restore: Callable[[str], str]) -> Delta:
    """A whole answer's delta with the values of a masking put back (each is whole: no
    placeholder is split across them)."""
    changes: dict[str, Any] = {
        name: restore(text)
        for name in ("content", "refusal", "reasoning_content")
        if isinstance(text := getattr(delta, name), str) and text
    }
    if isinstance(delta.tool_calls, list):
        changes["tool_calls"] = [
            msgspec.structs.replace(
                call, function=msgspec.structs.replace(call.function,
                                                      arguments=restore(call.function.arguments))
            )
            if isinstance(call.function, ToolCallFunctionDelta)
            and isinstance(call.function.arguments, str)
            else call
            for call in delta.tool_calls
        ]  # fmt: skip
    return msgspec.structs.replace(delta, **changes) if changes else delta


async def _stored_response(
    calls: Calls, stored: StoredResponses, request: Request, ident: str
) -> tuple[StoredResponse, str]:
    key = await calls.keys.authenticate(request.header(b"authorization"))
    found = await stored.get(ident, key.key_id, time.time())
    if found is None:
        raise NotFound(
            f"no stored response {ident!r}", param="response_id", code="response_not_found"
        )
    return found, key.key_id


async def handle_get_response(
    calls: Calls, stored: StoredResponses, request: Request, ident: str
) -> None:
    if request.query.get("stream", "").lower() in ("true", "1"):
        raise InvalidRequest("a stored response is not streamed again", param="stream")
    found, _ = await _stored_response(calls, stored, request, ident)
    await request.respond(200, found.response.encode())


async def handle_delete_response(
    calls: Calls, stored: StoredResponses, request: Request, ident: str
) -> None:
    found, key_id = await _stored_response(calls, stored, request, ident)
    await stored.delete(found.response_id, key_id, time.time())
    body = {"id": found.response_id, "object": "response", "deleted": True}
    await request.respond(200, encoder.encode(body))


async def handle_input_items(
    calls: Calls, stored: StoredResponses, request: Request, ident: str
) -> None:
    """The input items of a stored response, newest first unless `order=asc`; `limit`
    (1 to 100, default 20) and `after` (an item id) page through them."""
    query = request.query
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest("order is asc or desc", param="order")
    limit_text = query.get("limit", "20")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= 100:
        raise InvalidRequest("limit is a whole number from 1 to 100", param="limit")
    found, _ = await _stored_response(calls, stored, request, ident)
    items: list[dict[str, Any]] = json.loads(found.input_items)
    if order == "desc":
        items.reverse()
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") for item in items]
        if after not in ids:
            raise InvalidRequest(f"no input item {after!r} in this response", param="after")
        items = items[ids.index(after) + 1 :]
    page = items[: int(limit_text)]
    body = {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > len(page),
    }
    await request.respond(200, encoder.encode(body))
