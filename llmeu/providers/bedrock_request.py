"""The Converse request of a canonical chat request (pure; `providers/bedrock.py` sends it).

Turns alternate on Bedrock, so consecutive turns of one role merge (tool
results are the user's); tools become `toolSpec`s, `tool_choice` a
`toolChoice`, `thinking` and `top_k` the model's own fields
(`additionalModelRequestFields`), earlier reasoning `reasoningContent` blocks.
A prompt-cache breakpoint (`cache_control` on a text part, a tool result or a
tool) becomes a `cachePoint` block right after what carries it.
"""

from __future__ import annotations

import base64
from typing import Any

from msgspec import UNSET

from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    DeveloperMessage,
    ImagePart,
    RedactedThinkingBlock,
    SystemMessage,
    TextPart,
    ThinkingBlock,
    ToolMessage,
    UserMessage,
    text_of,
)
from llmeu.calls.tools import CacheControl, ToolChoiceFunction
from llmeu.errors import UpstreamRejected
from llmeu.protocol.json_codec import encoder
from llmeu.providers import chat_mapping as mapping


def converse_body(request: ChatRequest) -> bytes:
    """The Converse request for a canonical chat request."""
    mapping.refuse_unsupported(request, "bedrock")
    if request.response_format not in (UNSET, None) and request.response_format.type != "text":
        raise UpstreamRejected(
            "bedrock endpoints do not support `response_format`", param="response_format"
        )
    body: dict[str, Any] = {"messages": _messages(request)}
    system = _system(request)
    if system:
        body["system"] = system
    config: dict[str, Any] = {}
    if (limit := mapping.max_tokens(request)) is not None:
        config["maxTokens"] = limit
    if isinstance(request.temperature, float | int):
        config["temperature"] = request.temperature
    if isinstance(request.top_p, float | int):
        config["topP"] = request.top_p
    if (stop := mapping.stop_sequences(request)) is not None:
        config["stopSequences"] = stop
    if config:
        body["inferenceConfig"] = config
    if request.tools and request.tool_choice != "none":
        body["toolConfig"] = _tool_config(request)
    extra: dict[str, Any] = {}
    if isinstance(request.top_k, int):
        extra["top_k"] = request.top_k
    thinking = request.thinking
    if thinking not in (UNSET, None) and thinking.type == "enabled":
        budget = thinking.budget_tokens if isinstance(thinking.budget_tokens, int) else 1024
        extra["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if extra:
        body["additionalModelRequestFields"] = extra
    return encoder.encode(body)


CACHE_POINT: dict[str, Any] = {"cachePoint": {"type": "default"}}


def _marked(content: object) -> bool:
    """Whether message content carries a prompt-cache breakpoint."""
    return isinstance(content, list) and any(
        isinstance(getattr(part, "cache_control", None), CacheControl) for part in content
    )


def _system(request: ChatRequest) -> list[dict[str, Any]]:
    """The system prompt as one text block, or as its parts where one is a breakpoint."""
    system = [m for m in request.messages if isinstance(m, SystemMessage | DeveloperMessage)]
    if not any(_marked(m.content) for m in system):
        text = mapping.system_text(request)
        return [{"text": text}] if text else []
    blocks: list[dict[str, Any]] = []
    for message in system:
        content = message.content
        for part in [TextPart(content)] if isinstance(content, str) else content:
            blocks.append({"text": part.text})
            if isinstance(part.cache_control, CacheControl):
                blocks.append(CACHE_POINT)
    return blocks


def _tool_config(request: ChatRequest) -> dict[str, Any]:
    tools = []
    for tool in request.tools or ():
        spec: dict[str, Any] = {"name": tool.function.name}
        if isinstance(tool.function.description, str):
            spec["description"] = tool.function.description
        parameters = tool.function.parameters
        schema = parameters if isinstance(parameters, dict) else {"type": "object"}
        spec["inputSchema"] = {"json": schema}
        tools.append({"toolSpec": spec})
        if isinstance(tool.cache_control, CacheControl):
            tools.append(CACHE_POINT)
    config: dict[str, Any] = {"tools": tools}
    choice = request.tool_choice
    if choice == "required":
        config["toolChoice"] = {"any": {}}
    elif isinstance(choice, ToolChoiceFunction):
        config["toolChoice"] = {"tool": {"name": choice.function.name}}
    elif choice == "auto":
        config["toolChoice"] = {"auto": {}}
    return config


def _messages(request: ChatRequest) -> list[dict[str, Any]]:
    """Turns alternate on Bedrock: consecutive turns of one role (tool results, which are
    the user's) merge into one message."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(request.messages):
        where = f"messages[{index}]"
        if isinstance(message, UserMessage):
            role, blocks = "user", _user_blocks(message, where)
        elif isinstance(message, AssistantMessage):
            role, blocks = "assistant", _assistant_blocks(message, where)
        elif isinstance(message, ToolMessage):
            result: dict[str, Any] = {
                "toolUseId": message.tool_call_id, "content": [{"text": text_of(message)}],
            }  # fmt: skip
            if message.is_error is True:
                result["status"] = "error"
            role, blocks = "user", [{"toolResult": result}]
            if _marked(message.content):
                blocks.append(CACHE_POINT)
        elif message.__struct_config__.tag in ("system", "developer"):
            continue
        else:
            raise UpstreamRejected(f"{where}: bedrock endpoints take no `function` messages",
                                   param=where)  # fmt: skip
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _user_blocks(message: UserMessage, where: str) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"text": message.content}] if message.content else []
    blocks: list[dict[str, Any]] = []
    for i, part in enumerate(message.content):
        if isinstance(part, TextPart):
            blocks.append({"text": part.text})
            if isinstance(part.cache_control, CacheControl):
                blocks.append(CACHE_POINT)
        elif isinstance(part, ImagePart):
            mime, data = mapping.image_bytes(part, f"{where}.content[{i}]")
            source = {"bytes": base64.b64encode(data).decode()}
            blocks.append({"image": {"format": mapping.IMAGE_FORMATS[mime], "source": source}})
        else:
            raise UpstreamRejected(f"{where}.content[{i}]: bedrock endpoints take text and "
                                   "images", param=f"{where}.content[{i}]")  # fmt: skip
    return blocks


def _assistant_blocks(message: AssistantMessage, where: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.thinking_blocks or ():
        if isinstance(block, ThinkingBlock):
            text: dict[str, Any] = {"text": block.thinking}
            if isinstance(block.signature, str):
                text["signature"] = block.signature
            blocks.append({"reasoningContent": {"reasoningText": text}})
        elif isinstance(block, RedactedThinkingBlock):
            blocks.append({"reasoningContent": {"redactedContent": block.data}})
    blocks.extend({"text": text} for text in mapping.text_parts(message.content))
    for i, call in enumerate(message.tool_calls or ()):
        arguments = mapping.arguments_object(
            call.function.arguments, f"{where}.tool_calls[{i}].function.arguments"
        )
        blocks.append({"toolUse": {"toolUseId": call.id, "name": call.function.name,
                                   "input": arguments}})  # fmt: skip
    return blocks
