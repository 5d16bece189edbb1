"""Where a chat request carries text: every part a scan reads and a masking rewrites.

One walk serves both: `edit(path, text)` sees each text part with its path
and returns the text to keep (unchanged for a scan, masked for a masking).
Text parts, refusals, reasoning, tool-call arguments and tool results are
text; images, audio and files are reported as not scanned.
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec import UNSET, UnsetType
from msgspec.structs import replace

from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    FunctionMessage,
    Message,
    RefusalPart,
    TextPart,
    ThinkingBlock,
    ToolCall,
)

Edit = Callable[[str, str], str]


def chat_parts(chat: ChatRequest) -> tuple[list[tuple[str, str]], list[str]]:
    """The request's `(path, text)` parts and the paths of the parts that are not text."""
    parts: list[tuple[str, str]] = []
    unscanned: list[str] = []

    def collect(path: str, text: str) -> str:
        parts.append((path, text))
        return text

    _walk(chat, collect, unscanned)
    return parts, unscanned


def rewritten(chat: ChatRequest, edit: Edit) -> ChatRequest:
    """The request with every text part replaced by `edit(path, text)`."""
    return _walk(chat, edit, [])


def restored_tool_calls(
    calls: list[ToolCall] | UnsetType, restore: Callable[[str], str]
) -> list[ToolCall] | UnsetType:
    """An answer's tool calls with the values of a masking put back into their arguments."""
    if not isinstance(calls, list):
        return calls
    return [_tool_call(call, "", lambda _, text: restore(text)) for call in calls]


def _walk(chat: ChatRequest, edit: Edit, unscanned: list[str]) -> ChatRequest:
    messages = [
        _message(message, f"messages[{i}]", edit, unscanned)
        for i, message in enumerate(chat.messages)
    ]
    return replace(chat, messages=messages)


def _message(message: Message, path: str, edit: Edit, unscanned: list[str]) -> Message:
    changes: dict[str, object] = {}
    content = message.content
    if isinstance(content, str):
        changes["content"] = edit(f"{path}.content", content)
    elif isinstance(content, list):
        changes["content"] = [
            _part(part, f"{path}.content[{j}]", edit, unscanned) for j, part in enumerate(content)
        ]
    if isinstance(message, AssistantMessage):
        changes.update(_assistant(message, path, edit))
    if isinstance(message, FunctionMessage) and content is None:
        changes.pop("content", None)
    return replace(message, **changes)


def _part(part: object, path: str, edit: Edit, unscanned: list[str]) -> object:
    if isinstance(part, TextPart):
        return replace(part, text=edit(f"{path}.text", part.text))
    if isinstance(part, RefusalPart):
        return replace(part, refusal=edit(f"{path}.refusal", part.refusal))
    unscanned.append(path)
    return part


def _assistant(message: AssistantMessage, path: str, edit: Edit) -> dict[str, object]:
    changes: dict[str, object] = {}
    if isinstance(message.refusal, str):
        changes["refusal"] = edit(f"{path}.refusal", message.refusal)
    if isinstance(message.tool_calls, list):
        changes["tool_calls"] = [
            _tool_call(call, f"{path}.tool_calls[{k}]", edit)
            for k, call in enumerate(message.tool_calls)
        ]
    if message.function_call not in (UNSET, None):
        call = message.function_call
        assert call is not None and not isinstance(call, type(UNSET))
        changes["function_call"] = replace(
            call, arguments=edit(f"{path}.function_call.arguments", call.arguments)
        )
    if isinstance(message.thinking_blocks, list):
        changes["thinking_blocks"] = [
            replace(block, thinking=edit(f"{path}.thinking_blocks[{k}].thinking", block.thinking))
            if isinstance(block, ThinkingBlock)
            else block
            for k, block in enumerate(message.thinking_blocks)
        ]
    return changes


def _tool_call(call: ToolCall, path: str, edit: Edit) -> ToolCall:
    arguments = edit(f"{path}.function.arguments", call.function.arguments)
    return replace(call, function=replace(call.function, arguments=arguments))
