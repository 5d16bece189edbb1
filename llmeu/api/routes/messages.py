"""POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API, inside the policy.

parse → route → call → record → respond, on the lifecycle every surface
shares. The request is translated into the canonical `ChatRequest`
(`llmeu.protocol.messages_codec`), so any endpoint serves it: an
OpenAI-compatible upstream, the local model, or an `anthropic` endpoint that
speaks this wire natively. Streams are written by `MessagesFrames`
(`llmeu.protocol.messages_stream`). A whole message is assembled from the
upstream's stream too, so that thinking with its signature and tool use come
back as the same blocks streamed or not.

The key comes in `x-api-key` (Anthropic's SDKs) or `Authorization: Bearer`;
errors have Anthropic's shape and statuses (`AnthropicErrors`).
`anthropic-version` is accepted whatever it says (none is allowed), and the
`anthropic-beta` features are ignored: the trace lists them (`ignored_features`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from llmeu.api.accounting import streamed_counts, tokens_for_characters
from llmeu.api.asgi import Request
from llmeu.api.bodies import decode_body
from llmeu.api.error_responses import Routing
from llmeu.api.inference import Calls
from llmeu.api.lifecycle import Call
from llmeu.calls.hangup import Hangup
from llmeu.calls.output import StreamOutput, Usage
from llmeu.calls.request import ChatRequest, RoutingRequest, end_user
from llmeu.errors import ApiError, InvalidRequest, UpstreamError
from llmeu.personal.chat_text import chat_parts, rewritten
from llmeu.personal.rules import RestrictTo
from llmeu.personal.scan import screen
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth
from llmeu.protocol.messages_codec import check_state, to_chat_request
from llmeu.protocol.messages_reply import MessageAssembler, error_body, message_id
from llmeu.protocol.messages_request import (
    MessagesRequest,
    ignored_fields,
    messages_request_decoder,
    prompt_texts,
)
from llmeu.protocol.messages_stream import MessagesFrames
from llmeu.providers.base import ChatStream, Provider
from llmeu.routing.catalog import Capability, Endpoint
from llmeu.routing.policy import restricted

ROUTE = "/v1/messages"
_CHAT = frozenset({Capability.CHAT})
_CHAT_TOOLS = frozenset({Capability.CHAT, Capability.TOOLS})
log = logging.getLogger("llmeu.api")


class AnthropicErrors:
    """`{"type": "error", "error": {type, message}}` with Anthropic's statuses: 529
    (`overloaded_error`) only where the upstream said it was overloaded."""

    def status(self, error: ApiError) -> int:
        if isinstance(error, UpstreamError) and error.upstream_status == 529:
            return 529
        return error.status

    def body(self, error: ApiError, routing: Routing | None) -> bytes:
        return error_body(error, self.status(error), routing)


ANTHROPIC_ERRORS = AnthropicErrors()


def api_key(request: Request) -> str | None:
    """`x-api-key: <key>` as Anthropic's clients send it, else `Authorization: Bearer`."""
    key = request.header(b"x-api-key")
    if key:
        return f"Bearer {key}"
    return request.header(b"authorization")


async def handle_messages(calls: Calls, request: Request) -> None:
    async with calls.open(request, ROUTE, shape=ANTHROPIC_ERRORS, credentials=api_key) as call:
        wire = parse_messages(await call.body(), count_only=False)
        chat = to_chat_request(wire)
        prompt_tokens = estimate_prompt(wire)
        call.requested(
            wire.model,
            stream=bool(wire.stream),
            texts=prompt_texts(wire),
            prompt=chat.messages,
            prompt_tokens=lambda: prompt_tokens,
            subject=end_user(chat.user),
            max_output_tokens=wire.max_tokens if isinstance(wire.max_tokens, int) else None,
        )
        _note_ignored(call, request, wire)
        # The policy's personal-data rules, as on chat completions: a masked prompt goes
        # upstream and into the trace; answers get the values back (streams: the lifecycle).
        screening = call.screen(lambda: chat_parts(chat))
        if screening is not None and screening.masking is not None:
            chat = rewritten(chat, screening.masked)
            call.keep_prompt(chat.messages)
        await call.admit()
        call.route(wire.model, _CHAT_TOOLS if chat.tools else _CHAT, chat.llmeu)
        if wire.stream:
            await _stream(call, chat, prompt_tokens)
        else:
            await _complete(call, chat, prompt_tokens)


def parse_messages(body: bytes, *, count_only: bool) -> MessagesRequest:
    wire = decode_body(messages_request_decoder.decode, body)
    if not count_only and wire.max_tokens is UNSET:
        raise InvalidRequest("max_tokens: Field required", param="max_tokens")
    if not count_only:
        check_state(wire)
    for i, tool in enumerate(wire.tools or ()):
        if nesting_depth(tool.input_schema) > MAX_NESTING:
            raise InvalidRequest(
                f"Invalid request: nested more than {MAX_NESTING} levels deep",
                param=f"tools[{i}].input_schema",
            )
    return wire


def estimate_prompt(wire: MessagesRequest, *, shift: int = 0) -> int:
    """The gateway's estimate of the prompt: its texts and tool definitions at ~4 characters a
    token, 3 per message; `shift` characters more (a masking's placeholders for values)."""
    tools = encoder.encode(wire.tools).decode() if wire.tools else ""
    characters = sum(map(len, prompt_texts(wire))) + len(tools) + shift
    return tokens_for_characters(characters) + 3 * len(wire.messages)


def _note_ignored(call: Call, request: Request, wire: MessagesRequest) -> None:
    """The fields accepted without effect and the beta features (Anthropic's own: none is
    applied here): the trace lists them."""
    ignored = ", ".join(ignored_fields(wire))
    betas = request.header(b"anthropic-beta")
    if betas:
        ignored += f"{'; ' if ignored else ''}anthropic-beta: {betas}"
    if ignored:
        call.trace.ignored(ignored)


async def _stream(call: Call, chat: ChatRequest, prompt_tokens: int) -> None:
    opened: list[ChatStream] = []

    async def open_stream(provider: Provider, hangup: Hangup) -> ChatStream:
        stream = await provider.stream_chat(chat, hangup)
        opened.append(stream)
        return stream

    def frames(endpoint: Endpoint) -> MessagesFrames:
        """`message_start` says the upstream's own input count where it is known by the first
        delta, else the gateway's estimate (`message_delta` has the final counts)."""
        known = opened[-1].input_tokens if opened else None
        input_tokens = known if known is not None else prompt_tokens
        return MessagesFrames(message_id(call.trace_id), endpoint.model, input_tokens)

    await call.stream(open_stream, frames)


class _Collected:
    """A whole answer gathered from an upstream's stream."""

    __slots__ = ("assembler", "finish_reason", "output", "usage")

    def __init__(self) -> None:
        self.assembler = MessageAssembler()
        self.output = StreamOutput()
        self.finish_reason: str | None = None
        self.usage: Usage | None = None


async def _complete(call: Call, chat: ChatRequest, prompt_tokens: int) -> None:
    async def ask(provider: Provider, hangup: Hangup) -> _Collected:
        collected = _Collected()
        stream = await provider.stream_chat(chat, hangup)
        try:
            while (delta := await stream.next_delta()) is not None:
                collected.assembler.add(delta)
                collected.output.add(delta)
        finally:
            await stream.aclose()
        collected.finish_reason = stream.finish_reason or "stop"
        collected.usage = stream.usage
        return collected

    endpoint, got = await call.complete(ask)
    call.counted(streamed_counts(got.usage, got.output, lambda: prompt_tokens))
    call.reported(got.usage)
    call.keep_content(got.output.stored())
    call.finish_reason(got.finish_reason)
    usage = with_cache(call.usage(), got.usage)
    body = got.assembler.message(
        call.trace_id, endpoint.model, got.finish_reason, usage, call.routing_block()
    )
    body["content"] = [_restored_block(block, call.restore) for block in body["content"]]
    await call.respond(encoder.encode(body))


def _restored_block(block: dict[str, Any], restore: Callable[[str], str]) -> dict[str, Any]:
    """A content block of a whole answer with what a masking took out put back: its text,
    and every string in a tool call's input (thinking is left as signed)."""
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return {**block, "text": restore(block["text"])}
    if block.get("type") == "tool_use":
        return {**block, "input": _restored_value(block.get("input"), restore)}
    return block


def _restored_value(value: Any, restore: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return restore(value)
    if isinstance(value, dict):
        return {k: _restored_value(v, restore) for k, v in value.items()}
    if isinstance(value, list):
        return [_restored_value(v, restore) for v in value]
    return value


def with_cache(usage: Usage, reported: Usage | None) -> Usage:
    """The call's counts, with the cache's share where the upstream reported one."""
    if reported is None:
        return usage
    usage.cache_creation_input_tokens = reported.cache_creation_input_tokens
    usage.cache_read_input_tokens = reported.cache_read_input_tokens
    return usage


async def handle_count_tokens(calls: Calls, request: Request) -> None:
    """The prompt's input tokens: with the routed model's own tokenizer where the gateway has
    it (the local model), else as an endpoint inside the policy counts them (an `anthropic`
    endpoint), else the gateway's estimate, which says `"estimated": true`.

    The key's policy's personal-data rules apply as on `/v1/messages`: a `block` hit is the
    same 403 `personal_data_detected`, a `restrict` hit narrows the endpoints that may count
    (none left: the usual 403 with reasons), and with `mask` hits the count is the masked
    prompt's — placeholders such as `[IBAN_1]` in place of the values, as an upstream would
    receive it — so a counting endpoint never sees a value. Counting is not a call: it leaves
    no trace and no usage, a refused count included (nothing reached an upstream, and the
    refusal tells the client which detector and where)."""
    key = await calls.keys.authenticate(api_key(request))
    wire = parse_messages(await request.body(calls.max_body_bytes), count_only=True)
    chat = to_chat_request(wire)
    chat, restrict, shift = _screened(calls, key.policy_id, chat)
    narrowing = chat.llmeu if isinstance(chat.llmeu, RoutingRequest) else None
    policy = calls.policies.effective(key.policy_id, narrowing, request.header(b"x-llmeu-policy"))
    if restrict is not None:
        policy = restricted(policy, restrict)
    upstreams = calls.upstreams
    plan = upstreams.plan(wire.model, _CHAT_TOOLS if chat.tools else _CHAT, policy)
    body: dict[str, Any] = {}
    for endpoint in plan.candidates:
        try:
            counted = await upstreams.provider(endpoint).count_tokens(chat, Hangup())
        except UpstreamError as error:
            # Its message may quote the prompt: the log says only who failed and how.
            log.info("count_tokens on %s failed (%s)", endpoint.endpoint_id, error.code)
            continue
        if counted is not None:
            body = {"input_tokens": counted, "llmeu": {"endpoint_id": endpoint.endpoint_id}}
            break
    else:
        body = {"input_tokens": estimate_prompt(wire, shift=shift), "estimated": True}
    await request.respond(200, encoder.encode(body))


def _screened(
    calls: Calls, policy_id: str, chat: ChatRequest
) -> tuple[ChatRequest, RestrictTo | None, int]:
    """The request to count under the key's policy's personal-data rules (masked where they
    mask), where a `restrict` hit narrows the route to, and how many characters the masking
    added (negative: removed); a `block` hit or a failed scan is raised."""
    policy = calls.policies.get(policy_id)
    if policy is None or policy.personal_data is None:
        return chat, None, 0
    rules = policy.personal_data
    parts, unscanned = chat_parts(chat)
    screening = screen(parts, unscanned, rules, policy.policy_id)
    if screening.refusal is not None:
        raise screening.refusal
    shift = sum(len(screening.masked(path, text)) - len(text) for path, text in parts)
    if screening.masking is not None:
        chat = rewritten(chat, screening.masked)
    return chat, rules.restrict if screening.restrict else None, shift
