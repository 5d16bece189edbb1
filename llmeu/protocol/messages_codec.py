"""Anthropic's Messages wire, translated: a request into `ChatRequest`, a stop reason back.

Shared by the `/v1/messages` surface (which turns a client's decoded request,
`llmeu.protocol.messages_request`, into the canonical `ChatRequest`) and by
every upstream speaking the wire (`FINISH_REASONS`). Client tools become the
chat call's function tools; a server tool (`web_search_20250305`, a toolset…)
is not on the chat call: `server_tools` gives it whole, a hosted tool whose
way the governance step decides (`llmeu.calls.hosted_tools`), and a
`tool_choice` naming one is `auto` on the chat call. A document by URL or a
file reference cannot be served through a gateway that keeps no files: a 400
naming it. Structured output (`output_config.format`) becomes the chat
call's `response_format`.

Prompt-cache breakpoints (`cache_control`) on system and user text blocks,
tool results and tools stay on the canonical request's text parts and tools,
for the upstreams that cache prompts; a request-wide `cache_control` puts one
on the prompt's last text.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from llmeu.calls.hosted_tools import HostedTool
from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    FilePart,
    FileRef,
    ImagePart,
    ImageURL,
    Message,
    RedactedThinkingBlock,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ThinkingBlock,
    ToolMessage,
    UserMessage,
)
from llmeu.calls.tools import (
    AnyToolCall,
    CacheControl,
    FunctionCall,
    FunctionDefinition,
    NamedFunction,
    Tool,
    ToolCall,
    ToolChoiceFunction,
)
from llmeu.errors import InvalidRequest, NotFound
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.messages_request import (
    Base64Source,
    BlockIn,
    DocumentBlockIn,
    FileSource,
    ImageBlockIn,
    MessageIn,
    MessagesRequest,
    MetadataIn,
    OutputConfig,
    RedactedThinkingBlockIn,
    TextBlockIn,
    TextSource,
    ThinkingBlockIn,
    ThreadIn,
    ToolChoiceAny,
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceTool,
    ToolIn,
    ToolResultBlockIn,
    ToolUseBlockIn,
    URLSource,
    result_text,
    system_text,
)
from llmeu.protocol.responses_input import convert

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


def to_chat_request(request: MessagesRequest) -> ChatRequest:
    """The canonical request of a Messages call (validated: a malformed tool or an unservable
    block is a 400 naming it)."""
    messages: list[Message] = []
    system = _system(request)
    if system is not None:
        messages.append(system)
    for i, message in enumerate(request.messages):
        messages.extend(_chat_messages(message, f"messages[{i}]"))
    whole = request.cache_control
    if isinstance(whole, dict) and whole.get("type") == "ephemeral" and messages:
        ttl = whole.get("ttl")
        mark = CacheControl("ephemeral", ttl if isinstance(ttl, str) else UNSET)
        messages[-1] = _marked_at_end(messages[-1], mark)
    tools, tool_choice, parallel = _chat_tools(request)
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
        response_format=_response_format(request.output_config),
        llmeu=request.llmeu,
    )


def check_state(request: MessagesRequest) -> None:
    """A compaction request, or a thread held by the upstream, asks for what llmeu cannot
    give: a 400 or 404 naming it, never an answer of another kind. (`count_tokens` counts
    `messages` as sent, as Anthropic's does, so it does not ask this.)"""
    if request.compaction not in (UNSET, None):
        raise InvalidRequest(
            "compaction requests are not supported: llmeu answers messages, it does not "
            "summarise conversations into compaction blocks",
            param="compaction",
        )
    thread = request.thread
    if isinstance(thread, ThreadIn) and thread.type == "continue":
        raise NotFound(
            f"no thread with message {thread.previous_message_id or ''!r}: llmeu keeps no "
            "threads; send the whole conversation in messages",
            param="thread.previous_message_id",
        )


def _response_format(config: OutputConfig | UnsetType | None) -> Any:
    """`output_config.format` (Anthropic's structured output) as the chat call's
    `response_format`: a JSON schema every answer must follow."""
    if not isinstance(config, OutputConfig) or not isinstance(config.format, dict):
        return UNSET
    schema = config.format.get("schema")
    if config.format.get("type") != "json_schema" or not isinstance(schema, dict):
        raise InvalidRequest(
            "output_config.format is {type: json_schema, schema}", param="output_config.format"
        )
    return ResponseFormat("json_schema", {"name": "output", "schema": schema, "strict": True})


def _system(request: MessagesRequest) -> SystemMessage | None:
    """The system prompt, as text parts where one of its blocks is a cache breakpoint."""
    blocks = request.system
    if isinstance(blocks, list) and any(_mark(b.cache_control) for b in blocks):
        return SystemMessage(content=[TextPart(b.text, _mark(b.cache_control)) for b in blocks])
    system = system_text(request)
    return SystemMessage(content=system) if system else None


def _mark(mark: CacheControl | UnsetType | None) -> CacheControl | UnsetType:
    return mark if isinstance(mark, CacheControl) else UNSET


def _marked_at_end(message: Message, mark: CacheControl) -> Message:
    """`message` with a cache breakpoint on its last text (a request-wide `cache_control`)."""
    if not isinstance(message, UserMessage | ToolMessage | SystemMessage):
        return message
    content = message.content
    parts = [TextPart(content)] if isinstance(content, str) else list(content)
    for i in range(len(parts) - 1, -1, -1):
        part = parts[i]
        if isinstance(part, TextPart):
            parts[i] = TextPart(part.text, mark)
            return msgspec.structs.replace(message, content=parts)
    return message


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
            text, mark = result_text(block), _mark(block.cache_control)
            results.append(
                ToolMessage(
                    content=[TextPart(text, mark)] if mark is not UNSET else text,
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
    calls: list[AnyToolCall] = []
    thinking: list[ThinkingBlock | RedactedThinkingBlock] = []
    for j, block in enumerate(content):
        if isinstance(block, TextBlockIn):
            texts.append(block.text)
        elif isinstance(block, ToolUseBlockIn):
            arguments = encoder.encode(block.input).decode()
            calls.append(ToolCall(block.id, FunctionCall(block.name, arguments)))
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
        return TextPart(block.text, _mark(block.cache_control))
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


def server_tools(request: MessagesRequest) -> list[HostedTool]:
    """The request's server tools, each whole, with where it is (`tools[2]`)."""
    return [
        HostedTool.of(str(tool["type"]), f"tools[{i}]", _options(tool))
        for i, tool in enumerate(request.tools or ())
        if _is_server_tool(tool)
    ]


def _options(tool: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tool.items() if k != "type"}


def _is_server_tool(tool: dict[str, Any]) -> bool:
    kind = tool.get("type")
    return isinstance(kind, str) and kind != "custom"


def _chat_tools(request: MessagesRequest) -> tuple[Any, Any, Any]:
    tools = [_chat_tool(tool, i) for i, tool in enumerate(request.tools or ())
             if not _is_server_tool(tool)]  # fmt: skip
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
        named = any(tool.function.name == choice.name for tool in tools)
        chat_choice = ToolChoiceFunction(NamedFunction(choice.name)) if named else "auto"
    else:
        chat_choice = UNSET
    if not tools:
        return UNSET, UNSET, UNSET  # nothing to choose from: as Anthropic, no tools run
    return tools, chat_choice, parallel


def _chat_tool(raw: dict[str, Any], index: int) -> Tool:
    tool = convert(raw, ToolIn, f"tools[{index}]")
    if not isinstance(tool.name, str):
        raise InvalidRequest("a client tool needs a `name`", param=f"tools[{index}].name")
    if not isinstance(tool.input_schema, dict):
        raise InvalidRequest(
            "a client tool needs an `input_schema`", param=f"tools[{index}].input_schema"
        )
    return Tool(
        FunctionDefinition(
            name=tool.name, description=tool.description, parameters=tool.input_schema
        ),
        _mark(tool.cache_control),
    )
