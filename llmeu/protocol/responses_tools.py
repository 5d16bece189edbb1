"""The Responses request's tools, typed by kind, so that serving a kind is a mapping.

Tools arrive as JSON values (`ResponsesRequest.tools`) and are checked one at
a time, so each error names its tool (`tools[3].format.syntax`). The kinds:

    function     a function the caller's code runs: a name and JSON-schema parameters
    custom       a tool the caller's code runs on free-form text, optionally held to
                 a grammar (Lark or a regular expression): Codex's `apply_patch`
    namespace    function and custom tools grouped under one name
    tool_search  a search over tools the caller defers; `execution: client` means
                 the caller's code runs it
    hosted       a tool the provider defines (`HOSTED_TOOL_TYPES`: web search, file
                 search, code interpreter, MCP, a shell…), kept whole in `options`
                 for an upstream that could run it

A type OpenAI does not define is a 400 naming `tools[i].type`, as on OpenAI.
Which kinds a call may use is decided where the request becomes a chat call
(`llmeu.protocol.responses_wire.to_chat`): today, function tools.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.errors import InvalidRequest
from llmeu.protocol.responses_input import Lenient, convert

ToolName = Annotated[str, Meta(min_length=1, max_length=64)]

HOSTED_TOOL_TYPES = frozenset({
    "apply_patch", "code_interpreter", "computer", "computer_use", "computer_use_preview",
    "file_search", "image_generation", "local_shell", "mcp", "programmatic_tool_calling",
    "shell", "web_search", "web_search_2025_08_26", "web_search_preview",
    "web_search_preview_2025_03_11",
})  # fmt: skip
"""The tool types OpenAI defines and runs (or has its model call in a fixed shape)."""


class FunctionToolIn(Lenient, tag_field="type", tag="function"):
    name: ToolName
    description: str | UnsetType | None = UNSET
    parameters: dict[str, Any] | UnsetType | None = UNSET
    strict: bool | UnsetType | None = UNSET
    defer_loading: bool | UnsetType = UNSET


class TextInput(Lenient, tag_field="type", tag="text"):
    """A custom tool's input: any text."""


class GrammarInput(Lenient, tag_field="type", tag="grammar"):
    """A custom tool's input: text the grammar `definition` accepts."""

    syntax: Literal["lark", "regex"]
    definition: str


class CustomToolIn(Lenient, tag_field="type", tag="custom"):
    name: ToolName
    description: str | UnsetType | None = UNSET
    format: TextInput | GrammarInput | UnsetType | None = UNSET
    defer_loading: bool | UnsetType = UNSET


class NamespaceToolIn(Lenient, tag_field="type", tag="namespace"):
    name: ToolName
    description: str | UnsetType | None = UNSET
    tools: list[FunctionToolIn | CustomToolIn] = []


class ToolSearchToolIn(Lenient, tag_field="type", tag="tool_search"):
    execution: Literal["server", "client"] | UnsetType = UNSET
    description: str | UnsetType | None = UNSET
    parameters: dict[str, Any] | UnsetType | None = UNSET


class HostedToolIn(Struct):
    """A tool the provider defines: its `type` and the rest of its object, as sent."""

    type: str
    options: dict[str, Any]


ResponsesTool = FunctionToolIn | CustomToolIn | NamespaceToolIn | ToolSearchToolIn | HostedToolIn

_TYPED: dict[str, type[Any]] = {
    "function": FunctionToolIn,
    "custom": CustomToolIn,
    "namespace": NamespaceToolIn,
    "tool_search": ToolSearchToolIn,
}


def kind_of(tool: ResponsesTool) -> str:
    """The `type` a tool was sent with."""
    if isinstance(tool, HostedToolIn):
        return tool.type
    return str(tool.__struct_config__.tag)


def request_tools(tools: list[Any] | UnsetType | None) -> list[ResponsesTool]:
    """The request's tools by kind; a malformed one, or one of a type OpenAI does not define,
    is a 400 naming it."""
    found: list[ResponsesTool] = []
    for i, raw in enumerate(tools or ()):
        param = f"tools[{i}]"
        kind = raw.get("type") if isinstance(raw, dict) else None
        typed = _TYPED.get(kind) if isinstance(kind, str) else None
        if typed is not None:
            found.append(convert(raw, typed, param))
        elif kind in HOSTED_TOOL_TYPES:
            assert isinstance(raw, dict) and isinstance(kind, str)
            found.append(HostedToolIn(kind, {k: v for k, v in raw.items() if k != "type"}))
        else:
            raise InvalidRequest(f"unknown tool type {kind!r}", param=f"{param}.type")
    return found


def function_tools(tools: list[Any] | UnsetType | None) -> list[FunctionToolIn]:
    """The request's tools, which must all be function tools: another kind is a 400 naming
    `tools[i].type`."""
    found: list[FunctionToolIn] = []
    for i, tool in enumerate(request_tools(tools)):
        if not isinstance(tool, FunctionToolIn):
            raise InvalidRequest(
                f"tool type {kind_of(tool)!r} is not supported by llmeu: only function tools, "
                "which your code runs, are",
                param=f"tools[{i}].type",
            )
        found.append(tool)
    return found
