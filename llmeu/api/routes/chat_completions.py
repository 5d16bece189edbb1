"""POST /v1/chat/completions: parse → govern → (cache) → call → respond.

The body decodes straight into the canonical `ChatRequest`; streams are
written by `ChatFrames` (`llmeu.protocol.chat_stream`), byte-exact to
docs/design.md §2; the lifecycle does the rest.
"""

from __future__ import annotations

from llmeu.api.call import asks
from llmeu.api.call.accounting import completed_counts, estimate_prompt_tokens
from llmeu.api.call.door import Calls
from llmeu.api.call.governance import chat_intent
from llmeu.api.call.lifecycle import Call
from llmeu.api.http.asgi import Request
from llmeu.api.http.bodies import decode_body
from llmeu.cache.lookups import chat_cacheable
from llmeu.calls.output import AssistantOutput
from llmeu.calls.request import ChatRequest, ResponseFormat, end_user
from llmeu.errors import InvalidRequest
from llmeu.personal.chat_text import restored_tool_calls
from llmeu.protocol.chat_stream import ChatFrames
from llmeu.protocol.chat_wire import (
    ChatCompletion,
    Choice,
    accepted_chat,
    chat_request_decoder,
    ignored_fields,
    legacy_answer,
    legacy_functions,
)
from llmeu.protocol.json_codec import MAX_NESTING, encoder, nesting_depth
from llmeu.routing.catalog import Endpoint


async def handle_chat(calls: Calls, request: Request) -> None:
    async with calls.open(request, "chat.completions") as call:
        chat = parse_chat(await call.body())
        if ignored := ignored_fields(chat):
            call.ignored(", ".join(ignored))
        intent = chat_intent(
            chat, stream=bool(chat.stream), subject=end_user(chat.user, chat.metadata)
        )
        chat = await call.govern(intent)
        await call.consult_cache(lambda: chat_cacheable(chat))
        if chat.stream:
            await stream_chat(call, chat)
        else:
            await complete_chat(call, chat)


def parse_chat(body: bytes) -> ChatRequest:
    chat = decode_body(chat_request_decoder.decode, body)
    _check_nesting(chat)
    return accepted_chat(chat)


def _check_nesting(chat: ChatRequest) -> None:
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


async def stream_chat(call: Call, chat: ChatRequest) -> None:
    include_usage = bool(chat.stream_options and chat.stream_options.include_usage)

    def frames(endpoint: Endpoint) -> ChatFrames:
        created = int(call.trace.record.received_at)
        return ChatFrames(
            completion_id(call.trace_id),
            created,
            endpoint.model,
            include_usage=include_usage,
            legacy_functions=legacy_functions(chat),
        )

    await call.stream(asks.chat_stream(chat), frames)


async def complete_chat(call: Call, chat: ChatRequest) -> None:
    endpoint, completion = await call.complete(asks.chat_answer(chat))
    message = completion.message
    call.counted(completed_counts(completion.usage, message, lambda: estimate_prompt_tokens(chat)))
    call.reported(completion.usage)
    call.keep_content(message.content or "")
    call.finish_reason(completion.finish_reason)
    choice = Choice(
        index=0,
        message=AssistantOutput(
            role="assistant",
            content=_restored(call, message.content),
            refusal=_restored(call, message.refusal),
            tool_calls=restored_tool_calls(message.tool_calls, call.restore, call.restore_json),
        ),
        finish_reason=completion.finish_reason,
    )
    body = ChatCompletion(
        id=completion_id(call.trace_id),
        created=int(call.trace.record.received_at),
        model=endpoint.model,
        choices=[legacy_answer(choice) if legacy_functions(chat) else choice],
        usage=call.usage(),
        llmeu=call.routing_block(),
    )
    await call.respond(encoder.encode(body))


def _restored(call: Call, text: str | None) -> str | None:
    return call.restore(text) if text else text


def completion_id(trace_id: str) -> str:
    """`chatcmpl-` and the trace id's own digits: one id links the answer and its trace."""
    return "chatcmpl-" + trace_id[4:]
