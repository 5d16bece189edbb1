"""POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API, inside the policy.

parse → route → call → record → respond, on the lifecycle every surface
shares. The request is translated into the canonical `ChatRequest`
(`llmeu.protocol.messages_codec`), so any endpoint serves it: an
OpenAI-compatible upstream, the local model, or an `anthropic` endpoint that
speaks this wire natively. Streams are written by `MessagesFrames`
(`llmeu.protocol.messages_stream`). A whole message is assembled from the
upstream's stream too, so that thinking with its signature and tool use come
back as the same blocks streamed or not. Server tools go, whole, only to an
endpoint that speaks this wire and runs them, where the policy allows them
(the governance step decides; `Call.tools`).

The key comes in `x-api-key` (Anthropic's SDKs) or `Authorization: Bearer`;
errors have Anthropic's shape and statuses (`AnthropicErrors`).
`anthropic-version` is accepted whatever it says (none is allowed), and the
`anthropic-beta` features are ignored: the trace lists them (`ignored_features`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from llmeu.api.call import asks, hosted_mcp
from llmeu.api.call.accounting import streamed_counts, tokens_for_characters
from llmeu.api.call.door import Calls
from llmeu.api.call.governance import chat_intent, with_hosted
from llmeu.api.call.lifecycle import Call
from llmeu.api.http.asgi import Request
from llmeu.api.http.bodies import decode_body
from llmeu.api.http.error_responses import Routing
from llmeu.cache.lookups import chat_cacheable
from llmeu.calls.output import DeltaAnswer, StreamOutput, Usage
from llmeu.calls.request import ChatRequest, end_user
from llmeu.errors import ApiError, InvalidRequest, UpstreamError
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth
from llmeu.protocol.messages_codec import check_state, server_tools, to_chat_request
from llmeu.protocol.messages_reply import MessageAssembler, error_body, message_id
from llmeu.protocol.messages_request import (
    MessagesRequest,
    ignored_fields,
    messages_request_decoder,
    prompt_texts,
)
from llmeu.protocol.messages_stream import MessagesFrames
from llmeu.routing.catalog import Endpoint
from llmeu.routing.endpoint_kinds import messages_native

ROUTE = "/v1/messages"


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
        prompt_tokens = estimate_prompt(wire)
        _note_ignored(call, request, wire)
        # The policy's personal-data rules, as on chat completions: a masked prompt goes
        # upstream and into the trace; answers get the values back (streams: the lifecycle).
        chat = to_chat_request(wire)
        tools = None
        if isinstance(wire.mcp_servers, list):  # only catalogued servers the policy admits
            hosted_mcp.refuse_streams(bool(wire.stream))
            tools = await hosted_mcp.admit(
                calls.context, call, hosted_mcp.from_messages(wire.mcp_servers)
            )
            chat = hosted_mcp.offered(chat, tools)
        intent = chat_intent(
            chat,
            model=wire.model,
            stream=bool(wire.stream),
            subject=end_user(chat.user),
            texts=prompt_texts(wire),
            prompt_tokens=lambda _: prompt_tokens,
        )
        chat, _ = await call.govern(with_hosted(intent, server_tools(wire), messages_native))
        if tools is not None:
            got = await hosted_mcp.answer(calls.context, call, chat, tools, prompt_tokens)
            blocks = hosted_mcp.messages_blocks(call.trace_id[4:], tools)
            await _answer(call, *got, leading=blocks)
            return
        await call.consult_cache(lambda: chat_cacheable(chat))
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
        if nesting_depth(tool) > MAX_NESTING:
            raise InvalidRequest(
                f"Invalid request: nested more than {MAX_NESTING} levels deep",
                param=f"tools[{i}]",
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
        call.ignored(ignored)


async def _stream(call: Call, chat: ChatRequest, prompt_tokens: int) -> None:
    def frames(endpoint: Endpoint) -> MessagesFrames:
        """`message_start` says the upstream's own input count where it is known by the first
        delta, else the gateway's estimate (`message_delta` has the final counts)."""
        known = call.upstream_input_tokens
        input_tokens = known if known is not None else prompt_tokens
        return MessagesFrames(message_id(call.trace_id), endpoint.model, input_tokens)

    await call.stream(asks.messages_stream(chat, call.tools.passed), frames)


async def _complete(call: Call, chat: ChatRequest, prompt_tokens: int) -> None:
    """A whole message, assembled from the upstream's stream like a streamed one."""
    endpoint, got = await call.complete(asks.gathered_answer(chat, call.tools.passed))
    output = StreamOutput()
    for delta in got.deltas:
        output.add(delta)
    call.counted(streamed_counts(got.usage, output, lambda: prompt_tokens))
    await _answer(call, endpoint, got, output)


async def _answer(
    call: Call,
    endpoint: Endpoint,
    got: DeltaAnswer,
    output: StreamOutput,
    *,
    leading: list[dict[str, Any]] | None = None,
) -> None:
    """The message of a counted answer; `leading` blocks first (hosted MCP tools' calls)."""
    assembler = MessageAssembler()
    for delta in got.deltas:
        assembler.add(delta)
    call.reported(got.usage)
    call.keep_content(output.stored())
    call.finish_reason(got.finish_reason)
    usage = with_cache(call.usage(), got.usage)
    body = assembler.message(
        call.trace_id, endpoint.model, got.finish_reason, usage, call.routing_block()
    )
    body["content"] = [
        *(leading or ()),
        *(_restored_block(block, call.restore) for block in body["content"]),
    ]
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
