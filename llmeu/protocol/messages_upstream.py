"""The canonical request as Anthropic's Messages API takes it, and its message read back.

For every upstream that speaks Anthropic's wire (the `anthropic` kind, Claude
on other clouds): system messages become `system`, tool results become
`tool_result` blocks of a user turn, consecutive turns of one role are merged
(Anthropic wants them alternating), an earlier turn's thinking goes back
with its signature, and `max_tokens` (required there) is the caller's, else
the endpoint's default. Prompt-cache breakpoints (`cache_control`) on text
parts, tool results and tools go along; with one in the system prompt, the
system prompt goes as blocks. Streamed answers are read by
`llmeu.protocol.messages_stream.MessagesEventDecoder`.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from llmeu.calls.output import AssistantOutput, Completion, Usage
from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    DeveloperMessage,
    FilePart,
    ImagePart,
    Message,
    RedactedThinkingBlock,
    ResponseFormat,
    SystemMessage,
    TextPart,
    Thinking,
    ThinkingBlock,
    ToolMessage,
    text_of,
)
from llmeu.calls.tools import AnyToolCall, CacheControl, FunctionCall, ToolCall, ToolChoiceFunction
from llmeu.protocol.messages_codec import FINISH_REASONS
from llmeu.protocol.messages_stream import usage_of

DEFAULT_MAX_TOKENS = 4096
"""`max_tokens` when neither the caller nor the endpoint set one (Anthropic requires it)."""


def anthropic_request(
    chat: ChatRequest, model: str, *, stream: bool, default_max_tokens: int | None
) -> dict[str, Any]:
    """The body of `POST /v1/messages` for `chat`, run on `model`."""
    system: list[SystemMessage | DeveloperMessage] = []
    turns: list[dict[str, Any]] = []
    for message in chat.messages:
        if isinstance(message, SystemMessage | DeveloperMessage):
            system.append(message)
            continue
        role, blocks = _blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    body: dict[str, Any] = {
        "model": model,
        "messages": turns,
        "max_tokens": chat.max_completion_tokens
        or chat.max_tokens
        or default_max_tokens
        or DEFAULT_MAX_TOKENS,
    }
    if system:
        body["system"] = _system(system)
    if stream:
        body["stream"] = True
    if isinstance(chat.temperature, float | int):
        body["temperature"] = min(float(chat.temperature), 1.0)  # Anthropic's range is 0 to 1
    for name in ("top_p", "top_k"):
        value = getattr(chat, name)
        if isinstance(value, float | int):
            body[name] = value
    stop = chat.stop
    if isinstance(stop, str):
        body["stop_sequences"] = [stop]
    elif isinstance(stop, list) and stop:
        body["stop_sequences"] = stop
    if isinstance(chat.user, str):
        body["metadata"] = {"user_id": chat.user}
    if isinstance(chat.thinking, Thinking):
        body["thinking"] = msgspec.to_builtins(chat.thinking)
    response_format = chat.response_format
    if isinstance(response_format, ResponseFormat) and response_format.type == "json_schema":
        schema = (response_format.json_schema or {}).get("schema")
        if isinstance(schema, dict):  # Anthropic's structured output
            body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    body.update(_tools(chat))
    return body


def _system(messages: list[SystemMessage | DeveloperMessage]) -> str | list[dict[str, Any]]:
    """One text, or its blocks where one is a cache breakpoint."""
    parts = [p for m in messages if isinstance(m.content, list) for p in m.content]
    if not any(isinstance(p.cache_control, CacheControl) for p in parts):
        return "\n\n".join(text_of(m) for m in messages)
    blocks: list[dict[str, Any]] = []
    for message in messages:
        content = message.content
        for part in [TextPart(content)] if isinstance(content, str) else content:
            blocks.append(_text_block(part))
    return blocks


def _text_block(part: TextPart) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": part.text}
    return _marked(block, part.cache_control)


def _marked(block: dict[str, Any], mark: CacheControl | UnsetType) -> dict[str, Any]:
    if isinstance(mark, CacheControl):
        block["cache_control"] = msgspec.to_builtins(mark)
    return block


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, ToolMessage):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": text_of(message),
        }
        if isinstance(message.is_error, bool):
            block["is_error"] = message.is_error
        if isinstance(message.content, list):
            for marked in message.content:
                _marked(block, marked.cache_control)
        return "user", [block]
    if isinstance(message, AssistantMessage):
        return "assistant", _assistant_blocks(message)
    content = message.content
    if isinstance(content, str) or content is None:
        return "user", [{"type": "text", "text": content or ""}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            blocks.append(_text_block(part))
        elif isinstance(part, ImagePart):
            blocks.append({"type": "image", "source": _source(part.image_url.url)})
        elif isinstance(part, FilePart) and isinstance(part.file.file_data, str):
            blocks.append({"type": "document", "source": _source(part.file.file_data)})
    return "user", blocks


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for step in message.thinking_blocks or ():
        if isinstance(step, ThinkingBlock):
            blocks.append(
                {"type": "thinking", "thinking": step.thinking, "signature": step.signature or ""}
            )
        elif isinstance(step, RedactedThinkingBlock):
            blocks.append({"type": "redacted_thinking", "data": step.data})
    text = text_of(message)
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.tool_calls or ():
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.function.name,
             "input": _arguments(call.function.arguments)}
        )  # fmt: skip
    return blocks


def _source(url: str) -> dict[str, str]:
    """A `data:` URL as a base64 source, any other URL as a URL source."""
    if url.startswith("data:") and ";base64," in url:
        media_type, _, data = url[5:].partition(";base64,")
        return {"type": "base64", "media_type": media_type, "data": data}
    return {"type": "url", "url": url}


def _arguments(arguments: str) -> Any:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def _tools(chat: ChatRequest) -> dict[str, Any]:
    if not chat.tools:
        return {}
    tools = []
    for tool in chat.tools:
        function = tool.function
        entry: dict[str, Any] = {"name": function.name}
        if isinstance(function.description, str):
            entry["description"] = function.description
        parameters = function.parameters
        entry["input_schema"] = parameters if isinstance(parameters, dict) else {"type": "object"}
        tools.append(_marked(entry, tool.cache_control))
    choice: dict[str, Any] | None = None
    if chat.tool_choice == "auto":
        choice = {"type": "auto"}
    elif chat.tool_choice == "required":
        choice = {"type": "any"}
    elif chat.tool_choice == "none":
        choice = {"type": "none"}
    elif isinstance(chat.tool_choice, ToolChoiceFunction):
        choice = {"type": "tool", "name": chat.tool_choice.function.name}
    if chat.parallel_tool_calls is False:
        choice = {**(choice or {"type": "auto"}), "disable_parallel_tool_use": True}
    return {"tools": tools, **({"tool_choice": choice} if choice else {})}


class _Block(Struct, omit_defaults=True):
    type: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: Any = None


class _UsageIn(Struct, omit_defaults=True):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class _MessageIn(Struct):
    content: list[_Block]
    stop_reason: str | None = None
    usage: _UsageIn | None = None


message_decoder = msgspec.json.Decoder(_MessageIn)


def completion_of(raw: bytes) -> Completion:
    """Anthropic's `message` as a canonical completion (raises msgspec's errors)."""
    message = message_decoder.decode(raw)
    text = "".join(b.text for b in message.content if b.type == "text")
    calls: list[AnyToolCall] = [
        ToolCall(b.id, FunctionCall(b.name, json.dumps(b.input or {})))
        for b in message.content
        if b.type == "tool_use"
    ]
    output = AssistantOutput(
        role="assistant", content=text if text or not calls else None, tool_calls=calls or UNSET
    )
    usage: Usage | None = usage_of(message.usage) if message.usage is not None else None
    reason = FINISH_REASONS.get(message.stop_reason or "end_turn", "stop")
    return Completion(output, reason, usage)
