"""Anthropic's Messages wire, the request: parsing, validation, translation into `ChatRequest`.

The request side of the wire, shared by the `/v1/messages` surface (which
decodes a client's request into the canonical `ChatRequest`) and by every
upstream speaking it. The family, all pure (in `llmeu.protocol`):

    messages_codec     the request: parsing, validation, → ChatRequest
    messages_reply     the answer: the `message`, usage, Anthropic's errors
    messages_stream    the events both ways: MessagesFrames (encode),
                       MessagesEventDecoder (Anthropic's own events → deltas)
    messages_upstream  ChatRequest → Anthropic's request; its message → Completion

Decoding validates like Anthropic does: unknown top-level fields, a missing
`max_tokens`, a value out of range are a 400 naming the path. Inside content
blocks and tools unknown fields are ignored (SDKs echo response blocks back,
with `citations`, `cache_control`, ...). A server tool (`web_search_…`), a
document by URL or a file reference cannot be served through a gateway that
keeps no files and runs no tools: a 400 naming it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    FilePart,
    FileRef,
    FunctionCall,
    FunctionDefinition,
    ImagePart,
    ImageURL,
    Message,
    NamedFunction,
    RedactedThinkingBlock,
    RoutingRequest,
    SystemMessage,
    TextPart,
    Thinking,
    ThinkingBlock,
    Tool,
    ToolCall,
    ToolChoiceFunction,
    ToolMessage,
    UserMessage,
)
from llmeu.errors import InvalidRequest
from llmeu.protocol.json_codec import encoder

ANTHROPIC_VERSION = "2023-06-01"
"""The version this wire is written against (the only one Anthropic has published)."""

FINISH_REASONS = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "stop_sequence": "stop",
    "refusal": "content_filter",
    "pause_turn": "stop",
    "model_context_window_exceeded": "length",
}
"""Anthropic's `stop_reason` → the canonical finish reason."""


class _In(Struct, omit_defaults=True):
    """Nested request objects: unknown fields ignored."""


class Base64Source(_In, tag_field="type", tag="base64"):
    media_type: str
    data: str


class URLSource(_In, tag_field="type", tag="url"):
    url: str


class TextSource(_In, tag_field="type", tag="text"):
    media_type: str
    data: str


class FileSource(_In, tag_field="type", tag="file"):
    file_id: str


class TextBlockIn(_In, tag_field="type", tag="text"):
    text: str


class ImageBlockIn(_In, tag_field="type", tag="image"):
    source: Base64Source | URLSource | FileSource


class DocumentBlockIn(_In, tag_field="type", tag="document"):
    source: Base64Source | URLSource | TextSource | FileSource
    title: str | UnsetType | None = UNSET


class ToolUseBlockIn(_In, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlockIn(_In, tag_field="type", tag="tool_result"):
    tool_use_id: str
    content: str | list[TextBlockIn | ImageBlockIn | DocumentBlockIn] | UnsetType = UNSET
    is_error: bool | UnsetType = UNSET


class ThinkingBlockIn(_In, tag_field="type", tag="thinking"):
    thinking: str
    signature: str | UnsetType = UNSET


class RedactedThinkingBlockIn(_In, tag_field="type", tag="redacted_thinking"):
    data: str


BlockIn = (
    TextBlockIn
    | ImageBlockIn
    | DocumentBlockIn
    | ToolUseBlockIn
    | ToolResultBlockIn
    | ThinkingBlockIn
    | RedactedThinkingBlockIn
)


class MessageIn(_In):
    role: Literal["user", "assistant", "system"]  # `system` mid-conversation, as Claude Code
    content: str | list[BlockIn]


class ToolIn(_In):
    name: Annotated[str, Meta(min_length=1, max_length=128)]
    type: str | UnsetType | None = UNSET
    description: str | UnsetType = UNSET
    input_schema: dict[str, Any] | UnsetType = UNSET


class ToolChoiceAuto(_In, tag_field="type", tag="auto"):
    disable_parallel_tool_use: bool | UnsetType = UNSET


class ToolChoiceAny(_In, tag_field="type", tag="any"):
    disable_parallel_tool_use: bool | UnsetType = UNSET


class ToolChoiceTool(_In, tag_field="type", tag="tool"):
    name: str
    disable_parallel_tool_use: bool | UnsetType = UNSET


class ToolChoiceNone(_In, tag_field="type", tag="none"):
    pass


class MetadataIn(_In):
    user_id: str | UnsetType | None = UNSET


class OutputConfig(_In):
    effort: str | UnsetType | None = UNSET  # accepted; each upstream reasons as it does
    format: dict[str, Any] | UnsetType | None = UNSET


class MessagesRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """`POST /v1/messages` (and `count_tokens`, which has no `max_tokens`)."""

    model: Annotated[str, Meta(min_length=1, max_length=256)]
    messages: Annotated[list[MessageIn], Meta(min_length=1)]
    max_tokens: Annotated[int, Meta(ge=1)] | UnsetType = UNSET
    system: str | list[TextBlockIn] | UnsetType = UNSET
    tools: list[ToolIn] | UnsetType = UNSET
    tool_choice: ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool | ToolChoiceNone | UnsetType = (
        UNSET
    )
    stop_sequences: list[str] | UnsetType = UNSET
    temperature: Annotated[float, Meta(ge=0, le=1)] | UnsetType = UNSET
    top_p: Annotated[float, Meta(ge=0, le=1)] | UnsetType = UNSET
    top_k: Annotated[int, Meta(ge=0)] | UnsetType = UNSET
    metadata: MetadataIn | UnsetType = UNSET
    thinking: Thinking | UnsetType = UNSET
    stream: bool | UnsetType = UNSET
    output_config: OutputConfig | UnsetType | None = UNSET
    container: UnsetType | None = UNSET  # a server tools' sandbox: none runs here
    # Accepted and without effect here: where and how fast a call runs is the route's
    # (the policy's) to decide, a prompt cache is the upstream's, and llmeu has no workspaces.
    service_tier: str | UnsetType | None = UNSET
    inference_geo: str | UnsetType | None = UNSET
    speed: str | UnsetType | None = UNSET
    cache_control: dict[str, Any] | UnsetType | None = UNSET
    diagnostics: dict[str, Any] | UnsetType | None = UNSET
    context_management: dict[str, Any] | UnsetType | None = UNSET  # the upstream's to manage
    workspace_id: str | UnsetType | None = UNSET
    user_profile_id: str | UnsetType | None = UNSET
    llmeu: RoutingRequest | UnsetType | None = UNSET


messages_request_decoder = msgspec.json.Decoder(MessagesRequest)


def system_text(request: MessagesRequest) -> str:
    system = request.system
    if isinstance(system, str):
        return system
    return "\n".join(block.text for block in system) if isinstance(system, list) else ""


def prompt_texts(request: MessagesRequest) -> list[str]:
    """Every text of the prompt: kept out of error messages, counted for estimates."""
    texts = [system_text(request)]
    for message in request.messages:
        if isinstance(message.content, str):
            texts.append(message.content)
            continue
        for block in message.content:
            if isinstance(block, TextBlockIn):
                texts.append(block.text)
            elif isinstance(block, ToolResultBlockIn):
                texts.append(_result_text(block))
            elif isinstance(block, ToolUseBlockIn):
                texts.append(encoder.encode(block.input).decode())
            elif isinstance(block, ThinkingBlockIn):
                texts.append(block.thinking)
    return [t for t in texts if t]


def to_chat_request(request: MessagesRequest) -> ChatRequest:
    """The canonical request of a Messages call (validated: a server tool or an unservable
    block is a 400 naming it)."""
    messages: list[Message] = []
    system = system_text(request)
    if system:
        messages.append(SystemMessage(content=system))
    for i, message in enumerate(request.messages):
        messages.extend(_chat_messages(message, f"messages[{i}]"))
    tools, tool_choice, parallel = _chat_tools(request)
    config = request.output_config
    if isinstance(config, OutputConfig) and config.format not in (UNSET, None):
        raise InvalidRequest(
            "structured output (`output_config.format`) is not supported on this route",
            param="output_config.format",
        )
    user = request.metadata.user_id if isinstance(request.metadata, MetadataIn) else UNSET
    return ChatRequest(
        model=request.model,
        messages=messages,
        stream=request.stream,
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        top_k=request.top_k if isinstance(request.top_k, int) and request.top_k > 0 else UNSET,
        stop=request.stop_sequences if request.stop_sequences else UNSET,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        user=user if isinstance(user, str) and user else UNSET,
        thinking=request.thinking,
        llmeu=request.llmeu,
    )


def _chat_messages(message: MessageIn, path: str) -> list[Message]:
    content = message.content
    if message.role == "assistant":
        return [_assistant_message(content, path)]
    if message.role == "system":
        if isinstance(content, list) and not all(isinstance(b, TextBlockIn) for b in content):
            raise InvalidRequest("a system turn holds text only", param=f"{path}.content")
        text = content if isinstance(content, str) else "".join(b.text for b in content)  # type: ignore[union-attr]
        return [SystemMessage(content=text)]
    if isinstance(content, str):
        return [UserMessage(content=content)]
    results: list[Message] = []
    parts: list[ContentPart] = []
    for j, block in enumerate(content):
        where = f"{path}.content[{j}]"
        if isinstance(block, ToolResultBlockIn):
            results.append(
                ToolMessage(
                    content=_result_text(block),
                    tool_call_id=block.tool_use_id,
                    is_error=block.is_error,
                )
            )
        elif isinstance(block, TextBlockIn | ImageBlockIn | DocumentBlockIn):
            parts.append(_user_part(block, where))
        else:
            raise InvalidRequest(
                f"a `{block.__struct_config__.tag}` block belongs to an assistant turn",
                param=f"{where}.type",
            )
    # Tool results answer the assistant turn just before: they go first, as chat wants them.
    if parts:
        results.append(UserMessage(content=parts))
    return results


def _assistant_message(content: str | list[BlockIn], path: str) -> AssistantMessage:
    if isinstance(content, str):
        return AssistantMessage(content=content)
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[ThinkingBlock | RedactedThinkingBlock] = []
    for j, block in enumerate(content):
        if isinstance(block, TextBlockIn):
            texts.append(block.text)
        elif isinstance(block, ToolUseBlockIn):
            arguments = encoder.encode(block.input).decode()
            calls.append(ToolCall("function", block.id, FunctionCall(block.name, arguments)))
        elif isinstance(block, ThinkingBlockIn):
            thinking.append(ThinkingBlock(block.thinking, block.signature))
        elif isinstance(block, RedactedThinkingBlockIn):
            thinking.append(RedactedThinkingBlock(block.data))
        else:
            raise InvalidRequest(
                f"a `{block.__struct_config__.tag}` block belongs to a user turn",
                param=f"{path}.content[{j}].type",
            )
    return AssistantMessage(
        content="".join(texts) if texts or not calls else None,
        tool_calls=calls or UNSET,
        thinking_blocks=thinking or UNSET,
    )


def _user_part(block: TextBlockIn | ImageBlockIn | DocumentBlockIn, path: str) -> ContentPart:
    if isinstance(block, TextBlockIn):
        return TextPart(text=block.text)
    source = block.source
    if isinstance(source, FileSource):
        raise InvalidRequest(
            "file references are not supported: llmeu keeps no files; send the content "
            "(base64) instead",
            param=f"{path}.source",
        )
    if isinstance(block, ImageBlockIn):
        if isinstance(source, Base64Source):
            return ImagePart(ImageURL(f"data:{source.media_type};base64,{source.data}"))
        assert isinstance(source, URLSource)
        return ImagePart(ImageURL(source.url))
    if isinstance(source, TextSource):
        return TextPart(text=source.data)
    if isinstance(source, URLSource):
        raise InvalidRequest(
            "documents by URL are not supported; send the document as base64 or text",
            param=f"{path}.source",
        )
    filename = block.title if isinstance(block.title, str) else "document.pdf"
    data = f"data:{source.media_type};base64,{source.data}"
    return FilePart(FileRef(file_data=data, filename=filename))


def _result_text(block: ToolResultBlockIn) -> str:
    content = block.content
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.text for b in content if isinstance(b, TextBlockIn))
    return ""


def _chat_tools(request: MessagesRequest) -> tuple[Any, Any, Any]:
    if not isinstance(request.tools, list) or not request.tools:
        tools: Any = UNSET
    else:
        tools = [_chat_tool(tool, i) for i, tool in enumerate(request.tools)]
    choice = request.tool_choice
    parallel: Any = UNSET
    if not isinstance(choice, UnsetType) and choice.__struct_config__.tag != "none":
        disable = getattr(choice, "disable_parallel_tool_use", UNSET)
        parallel = (not disable) if isinstance(disable, bool) else UNSET
    chat_choice: Any
    if isinstance(choice, ToolChoiceAuto):
        chat_choice = "auto"
    elif isinstance(choice, ToolChoiceAny):
        chat_choice = "required"
    elif isinstance(choice, ToolChoiceNone):
        chat_choice = "none"
    elif isinstance(choice, ToolChoiceTool):
        chat_choice = ToolChoiceFunction("function", NamedFunction(choice.name))
    else:
        chat_choice = UNSET
    if tools is UNSET:
        chat_choice = parallel = UNSET  # nothing to choose from: as Anthropic, no tools run
    return tools, chat_choice, parallel


def _chat_tool(tool: ToolIn, index: int) -> Tool:
    if tool.type not in (UNSET, None, "custom"):
        raise InvalidRequest(
            f"server tool `{tool.type}` is not supported: llmeu runs no tools itself; "
            "declare a client tool with an `input_schema` instead",
            param=f"tools[{index}].type",
        )
    if not isinstance(tool.input_schema, dict):
        raise InvalidRequest(
            "a client tool needs an `input_schema`", param=f"tools[{index}].input_schema"
        )
    return Tool(
        "function",
        FunctionDefinition(
            name=tool.name, description=tool.description, parameters=tool.input_schema
        ),
    )
