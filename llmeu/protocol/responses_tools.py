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

`chat_tools` makes them what a chat call has: function and custom tools as
they are (every chat attempt offers a custom tool's function form,
`llmeu.calls.tool_forms`), a namespace's tools as tools of their own named
`namespace__name` (`flat_name`: within the 64 characters a function name may
have), and the hosted tools (`tool_search` among them) apart, as the data
flow the governance step decides on (`llmeu.calls.hosted_tools`). Two tools
whose names upstream would be the same are a 400 naming both. A native
Responses upstream gets the tools as sent (`sent_tools`), but the hosted
tools it does not receive.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.calls.hosted_tools import HostedTool
from llmeu.calls.tools import (
    CustomDefinition,
    CustomGrammar,
    CustomText,
    CustomTool,
    FunctionDefinition,
    Grammar,
    Tool,
)
from llmeu.errors import InvalidRequest
from llmeu.protocol.responses_input import Lenient, convert, flat_name

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


@dataclass(frozen=True, slots=True)
class ChatTools:
    """A Responses request's tools as a chat call has them: `tools` (function and custom, a
    namespace's flattened), the `hosted` tools apart, and the name each namespaced tool has
    upstream mapped to its namespace and name."""

    tools: list[Tool | CustomTool] = field(default_factory=list)
    hosted: list[HostedTool] = field(default_factory=list)
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)


def chat_tools(tools: list[Any] | UnsetType | None) -> ChatTools:
    """The request's tools for a chat call; two whose names upstream are the same are a 400
    naming both."""
    mapped = ChatTools()
    where: dict[str, str] = {}  # name upstream → where the request has it
    for i, (raw, tool) in enumerate(zip(tools or (), request_tools(tools), strict=True)):
        if isinstance(tool, HostedToolIn | ToolSearchToolIn):
            options = {k: v for k, v in raw.items() if k != "type"}
            mapped.hosted.append(HostedTool.of(kind_of(tool), f"tools[{i}]", options))
            continue
        for param, inner, namespace in _members(f"tools[{i}]", tool):
            name = inner.name if namespace is None else flat_name(namespace.name, inner.name)
            if name in where:
                raise InvalidRequest(
                    f"{param} and {where[name]} would both be the tool {name!r} upstream (a "
                    "namespace's tools are named namespace__name): rename one",
                    param=f"{param}.name",
                )
            where[name] = param
            if namespace is not None:
                mapped.namespaced[name] = (namespace.name, inner.name)
            mapped.tools.append(_chat_tool(inner, name, namespace))
    return mapped


def _members(
    param: str, tool: FunctionToolIn | CustomToolIn | NamespaceToolIn
) -> Iterator[tuple[str, FunctionToolIn | CustomToolIn, NamespaceToolIn | None]]:
    """A tool with where it is in the request; a namespace's tools, each with its namespace."""
    if isinstance(tool, NamespaceToolIn):
        for j, inner in enumerate(tool.tools):
            yield f"{param}.tools[{j}]", inner, tool
    else:
        yield param, tool, None


def _chat_tool(
    tool: FunctionToolIn | CustomToolIn, name: str, namespace: NamespaceToolIn | None
) -> Tool | CustomTool:
    description = tool.description if isinstance(tool.description, str) else UNSET
    group = namespace.description if namespace is not None else None
    if isinstance(group, str) and group:
        description = f"{group}\n\n{description}" if description else group
    if isinstance(tool, FunctionToolIn):
        parameters = tool.parameters if isinstance(tool.parameters, dict) else UNSET
        return Tool(FunctionDefinition(name, description, parameters, tool.strict))
    form = tool.format
    grammar: CustomText | CustomGrammar | UnsetType = UNSET
    if isinstance(form, GrammarInput):
        grammar = CustomGrammar(Grammar(form.definition, form.syntax))
    elif isinstance(form, TextInput):
        grammar = CustomText()
    return CustomTool(CustomDefinition(name, description, grammar))


def sent_tools(
    tools: list[Any] | UnsetType | None, passed: Collection[str] = ()
) -> list[dict[str, Any]]:
    """The tools as the caller sent them, without the hosted tools not in `passed` (where they
    are in the request: `tools[3]`)."""
    found = request_tools(tools)
    return [
        raw
        for i, (raw, tool) in enumerate(zip(tools or (), found, strict=True))
        if not isinstance(tool, HostedToolIn | ToolSearchToolIn) or f"tools[{i}]" in passed
    ]
