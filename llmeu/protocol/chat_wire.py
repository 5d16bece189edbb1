"""The chat-completions wire (docs/design.md §2): the response objects and the request decoder.

The request body decodes straight into the canonical `ChatRequest`
(`llmeu.calls.request`), whose shape is this surface's; `accepted_chat` then
refuses what llmeu cannot serve and turns OpenAI's alternative spellings
(legacy `functions`, `allowed_tools`, `safety_identifier`) into the fields
every upstream takes. Custom tools stay as they are: every chat attempt
offers their function form and answers their calls as custom calls
(`llmeu.calls.tool_forms`), which a chunk carries as OpenAI's chat stream
does (`{type: custom, custom: {name, input}}`). `ignored_fields` names what the call asked for that
llmeu accepts without effect: the trace records it (`ignored_features`).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType
from msgspec.structs import replace

from llmeu.calls.output import AssistantOutput, Delta, ToolCallFunctionDelta, Usage
from llmeu.calls.request import ChatRequest, StreamOptions
from llmeu.calls.tools import (
    CustomTool,
    NamedFunction,
    Tool,
    ToolChoiceAllowed,
    ToolChoiceCustom,
    ToolChoiceFunction,
)
from llmeu.errors import InvalidRequest
from llmeu.protocol.routing_block import RoutingBlock


class LegacyDelta(Struct, omit_defaults=True):
    """A streamed delta of an answer to a request with the deprecated `functions`: its call
    is `function_call` (encoded by `ChatFrames` itself, so not among a chunk's types)."""

    content: str | UnsetType | None = UNSET
    refusal: str | UnsetType | None = UNSET
    reasoning_content: str | UnsetType | None = UNSET
    function_call: ToolCallFunctionDelta | UnsetType = UNSET


class ChunkChoice(Struct):
    index: int
    delta: Delta
    finish_reason: str | None
    logprobs: None = None


class ChatCompletionChunk(Struct, kw_only=True):
    id: str
    object: str = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | UnsetType = UNSET
    llmeu: RoutingBlock | UnsetType = UNSET


class Choice(Struct):
    index: int
    message: AssistantOutput
    finish_reason: str | None
    logprobs: None = None


class ChatCompletion(Struct, kw_only=True):
    id: str
    object: str = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    llmeu: RoutingBlock


chat_request_decoder = msgspec.json.Decoder(ChatRequest)

_WITHOUT_EFFECT = (
    "audio", "moderation", "prediction", "prompt_cache_key", "prompt_cache_options",
    "prompt_cache_retention", "service_tier", "store", "verbosity", "web_search_options",
)  # fmt: skip


_without_effect = attrgetter(*_WITHOUT_EFFECT)
_alternatives = attrgetter(
    "modalities", "functions", "function_call", "tool_choice", "safety_identifier"
)


def ignored_fields(chat: ChatRequest) -> list[str]:
    """The fields `chat` sets that llmeu accepts without effect (docs/surfaces.md, "Request
    fields")."""
    found = set_fields(_WITHOUT_EFFECT, _without_effect(chat))
    options = chat.stream_options
    if isinstance(options, StreamOptions) and options.include_obfuscation:
        found.append("stream_options.include_obfuscation")
    return found


def set_fields(names: tuple[str, ...], values: tuple[Any, ...]) -> list[str]:
    """The `names` whose `values` are set to something (not unset, null or false)."""
    if values.count(UNSET) == len(names):
        return []
    return [name for name, value in zip(names, values, strict=True)
            if value not in (UNSET, None, False)]  # fmt: skip


def accepted_chat(chat: ChatRequest) -> ChatRequest:
    """The call llmeu serves for a decoded request; what it cannot serve is a 400 naming it."""
    if isinstance(chat.n, int) and chat.n > 1:
        raise InvalidRequest("n > 1 is not supported: llmeu returns one choice per call", param="n")
    if chat.logprobs:
        raise InvalidRequest("logprobs are not supported by llmeu", param="logprobs")
    if chat.stream_options not in (UNSET, None) and not chat.stream:
        raise InvalidRequest(
            "stream_options is only allowed when stream is true", param="stream_options"
        )
    if _alternatives(chat).count(UNSET) == 5:  # the usual call: nothing more to look at
        return chat
    if isinstance(chat.modalities, list) and "audio" in chat.modalities:
        raise InvalidRequest("llmeu answers in text only, not audio", param="modalities")
    changes: dict[str, Any] = {}
    if chat.functions not in (UNSET, None) or chat.function_call not in (UNSET, None):
        changes.update(_legacy_functions(chat))
    choice = chat.tool_choice
    if isinstance(choice, ToolChoiceAllowed):
        changes.update(allowed_tools(chat.tools, choice))
    elif isinstance(choice, ToolChoiceCustom) and not any(
        isinstance(tool, CustomTool) and tool.custom.name == choice.custom.name
        for tool in chat.tools or ()
    ):
        raise InvalidRequest(
            f"tool_choice names custom tool {choice.custom.name!r}, which is not among the tools",
            param="tool_choice",
        )
    identifier = chat.safety_identifier
    if isinstance(identifier, str) and identifier and not chat.user:
        changes["user"] = identifier  # the end user, as on /v1/responses
    return replace(chat, **changes) if changes else chat


def allowed_tools(
    tools: list[Tool | CustomTool] | UnsetType | None,
    choice: ToolChoiceAllowed,
    param: str = "tool_choice.allowed_tools.tools",
) -> dict[str, Any]:
    """`allowed_tools` served as it is meant: the model sees only the tools it names (in the
    order of `tools`); `param` is where the list is in the caller's request. An entry names
    a tool by kind and name, `{type: function, function: {name}}` (chat's spelling) or
    `{type: custom, name}` (the Responses API's)."""
    present = {(_kind(tool), tool.function.name) for tool in tools or ()}
    named = set()
    for i, entry in enumerate(choice.allowed_tools.tools):
        kind = entry.get("type")
        inner = entry.get(kind) if isinstance(kind, str) else None
        name = inner.get("name") if isinstance(inner, dict) else entry.get("name")
        if (kind, name) not in present:
            raise InvalidRequest(
                "allowed_tools names function or custom tools among `tools`, by name",
                param=f"{param}[{i}]",
            )
        named.add(name)
    kept = [tool for tool in tools or () if tool.function.name in named]
    return {"tools": kept, "tool_choice": choice.allowed_tools.mode}


def _kind(tool: Tool | CustomTool) -> str:
    return "custom" if isinstance(tool, CustomTool) else "function"


def _legacy_functions(chat: ChatRequest) -> dict[str, Any]:
    """The deprecated `functions` and `function_call` as the tools they became; the answer
    comes back in their form (`LegacyFrames`, `legacy_answer`)."""
    if not chat.functions:
        raise InvalidRequest("function_call needs functions", param="function_call")
    if chat.tools not in (UNSET, None) or chat.tool_choice not in (UNSET, None):
        raise InvalidRequest(
            "functions (deprecated) and tools cannot be combined: send tools alone",
            param="functions",
        )
    call = chat.function_call
    choice: Any = call
    if isinstance(call, NamedFunction):
        choice = ToolChoiceFunction(NamedFunction(call.name))
    return {
        "tools": [Tool(function) for function in chat.functions],
        "tool_choice": choice,
        "parallel_tool_calls": False,
    }


def legacy_functions(chat: ChatRequest) -> bool:
    """Whether the answer takes the deprecated `function_call` form."""
    return isinstance(chat.functions, list)


def legacy_answer(choice: Choice) -> Choice:
    """A whole answer to a `functions` request: its (single) call as `function_call`."""
    message = choice.message
    calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    legacy = AssistantOutput(message.role, message.content, message.refusal)
    if calls:
        legacy.function_call = calls[0].function
    reason = "function_call" if choice.finish_reason == "tool_calls" else choice.finish_reason
    return Choice(choice.index, legacy, reason)


def legacy_delta(delta: Delta) -> LegacyDelta:
    """A streamed delta of such an answer: the first call's pieces as `function_call`."""
    legacy = LegacyDelta(delta.content, delta.refusal, delta.reasoning_content)
    for call in delta.tool_calls or ():
        if call.index == 0 and isinstance(call.function, ToolCallFunctionDelta):
            legacy.function_call = call.function
    return legacy
