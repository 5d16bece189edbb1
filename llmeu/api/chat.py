"""POST /v1/chat/completions: parse → route → call → record → respond."""

from __future__ import annotations

import asyncio

from msgspec import UNSET

from llmeu.api.bodies import decode_body
from llmeu.api.calls import (
    Call,
    durable,
    estimate_prompt_tokens,
    estimate_tokens,
    open_call,
)
from llmeu.api.chat_stream import stream_chat
from llmeu.api.dispatch import abandoned, reach, refuse, route
from llmeu.api.gateway import Gateway
from llmeu.api.http import JSON_HEADERS, Request, send_response
from llmeu.errors import ApiError, InvalidRequest
from llmeu.ledger.records import CallStatus
from llmeu.protocol.wire import (
    MAX_NESTING,
    AssistantOutput,
    ChatCompletion,
    ChatCompletionRequest,
    Choice,
    ResponseFormat,
    Usage,
    chat_request_decoder,
    encoder,
    nesting_depth,
    text_of,
)
from llmeu.providers.base import Completion, Provider
from llmeu.routing.catalog import Capability

_CHAT = frozenset({Capability.CHAT})
_CHAT_TOOLS = frozenset({Capability.CHAT, Capability.TOOLS})


async def handle_chat(gw: Gateway, request: Request) -> None:
    key = await gw.keys.authenticate(request.header(b"authorization"))
    call = open_call(gw, key, "chat.completions", request)
    try:
        chat = parse_chat(await request.body(gw.settings.max_body_bytes))
        call.record.request_model = chat.model
        call.record.stream = bool(chat.stream)
        call.sensitive.extend(text_of(m) for m in chat.messages)
        await call.admit(lambda: estimate_prompt_tokens(chat))
        route(call, request, chat.model, _CHAT_TOOLS if chat.tools else _CHAT, chat.llmeu)
    except ApiError as error:
        await refuse(call, request, error)
        return
    except asyncio.CancelledError:
        abandoned(call)
        raise
    if chat.stream:
        await stream_chat(call, chat, request)
    else:
        await complete_chat(call, chat, request)


def parse_chat(body: bytes) -> ChatCompletionRequest:
    chat = decode_body(chat_request_decoder.decode, body)
    _check_nesting(chat)
    if isinstance(chat.n, int) and chat.n > 1:
        raise InvalidRequest("n > 1 is not supported: llmeu returns one choice per call", param="n")
    if chat.logprobs:
        raise InvalidRequest("logprobs are not supported by llmeu", param="logprobs")
    if chat.stream_options not in (UNSET, None) and not chat.stream:
        raise InvalidRequest(
            "stream_options is only allowed when stream is true", param="stream_options"
        )
    return chat


def _check_nesting(chat: ChatCompletionRequest) -> None:
    """Free-form JSON (tool parameters, a JSON schema) may nest `MAX_NESTING` levels."""
    free_form: list[tuple[str, object]] = [
        (f"tools[{i}].function.parameters", tool.function.parameters)
        for i, tool in enumerate(chat.tools or ())
    ]
    if isinstance(chat.response_format, ResponseFormat):
        free_form.append(("response_format.json_schema", chat.response_format.json_schema))
    for param, value in free_form:
        if nesting_depth(value) > MAX_NESTING:
            raise InvalidRequest(
                f"Invalid request: nested more than {MAX_NESTING} levels deep", param=param
            )


async def complete_chat(call: Call, chat: ChatCompletionRequest, request: Request) -> None:
    async def ask(provider: Provider) -> Completion:
        return await provider.complete_chat(chat)

    reached = await reach(call, request, ask, hangup_input=lambda: estimate_prompt_tokens(chat))
    if reached is None:
        return
    endpoint, completion = reached
    usage = completion.usage
    message = completion.message
    if usage is not None:
        call.account(usage.prompt_tokens, usage.completion_tokens, False)
    else:
        produced = (message.content or "") + "".join(
            t.function.name + t.function.arguments for t in message.tool_calls or ()
        )
        call.account(estimate_prompt_tokens(chat), estimate_tokens(produced), True)
    record = call.record
    call.store_content(chat.messages, message.content or "")
    record.finish_reason = completion.finish_reason
    assert record.input_tokens is not None and record.output_tokens is not None
    body = ChatCompletion(
        id="chatcmpl-" + record.trace_id[4:],
        created=int(record.received_at),
        model=endpoint.model,
        choices=[
            Choice(
                index=0,
                message=AssistantOutput(
                    role="assistant",
                    content=message.content,
                    refusal=message.refusal,
                    tool_calls=message.tool_calls,
                ),
                finish_reason=completion.finish_reason,
            )
        ],
        usage=Usage(
            record.input_tokens, record.output_tokens, record.input_tokens + record.output_tokens
        ),
        llmeu=call.routing_block(),
    )
    await durable(call.gw, call.finish(CallStatus.COMPLETED))
    await send_response(
        request.send, 200, encoder.encode(body), call.response_headers(JSON_HEADERS)
    )
