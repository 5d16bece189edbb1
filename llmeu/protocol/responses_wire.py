"""The Responses API wire: the request and its translation onto a `ChatRequest`.

A Responses call is served by the same upstreams as chat completions: its
`input` items become chat messages (`llmeu.protocol.responses_input`),
`instructions` a system message in front, `max_output_tokens`
`max_completion_tokens`, `text.format` `response_format`, `reasoning.effort`
`reasoning_effort`, and `safety_identifier` (else `user`) the end user. Only
function tools exist here: llmeu never runs a tool itself, so a hosted tool
(`web_search`, `file_search`, ...) is a 400 naming `tools[i].type`. The
response object is in `llmeu.protocol.responses_object`, the stream in
`responses_stream`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.calls.request import (
    ChatRequest,
    FunctionDefinition,
    Message,
    NamedFunction,
    Probability,
    ResponseFormat,
    RoutingRequest,
    ShortString,
    SystemMessage,
    Temperature,
    Tool,
    ToolChoiceFunction,
)
from llmeu.errors import InvalidRequest
from llmeu.protocol.responses_input import Lenient, function_tools, input_messages

Positive = Annotated[int, Meta(ge=1)]
ToolChoice = Literal["none", "auto", "required"] | dict[str, Any]


class TextFormat(Lenient):
    type: Literal["text", "json_object", "json_schema"]
    name: str | UnsetType = UNSET
    schema: dict[str, Any] | UnsetType = UNSET
    description: str | UnsetType = UNSET
    strict: bool | UnsetType | None = UNSET


class TextConfig(Lenient):
    format: TextFormat | UnsetType | None = UNSET
    verbosity: str | UnsetType | None = UNSET


class ReasoningConfig(Lenient):
    effort: ShortString | UnsetType | None = UNSET
    summary: ShortString | UnsetType | None = UNSET
    generate_summary: ShortString | UnsetType | None = UNSET


class StreamOptions(Lenient):
    include_obfuscation: bool | UnsetType | None = UNSET


class ResponsesRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """`POST /v1/responses`. Input items and tools decode as JSON values first and are
    checked one by one, so each error names its item (`input[2].call_id`)."""

    model: Annotated[str, Meta(min_length=1, max_length=256)]
    input: str | list[Any] | UnsetType = UNSET
    instructions: str | UnsetType | None = UNSET
    tools: list[Any] | UnsetType | None = UNSET
    tool_choice: ToolChoice | UnsetType | None = UNSET
    parallel_tool_calls: bool | UnsetType | None = UNSET
    text: TextConfig | UnsetType | None = UNSET
    reasoning: ReasoningConfig | UnsetType | None = UNSET
    max_output_tokens: Positive | UnsetType | None = UNSET
    temperature: Temperature | UnsetType | None = UNSET
    top_p: Probability | UnsetType | None = UNSET
    metadata: dict[ShortString, Annotated[str, Meta(max_length=512)]] | UnsetType | None = UNSET
    user: ShortString | UnsetType | None = UNSET
    safety_identifier: ShortString | UnsetType | None = UNSET
    prompt_cache_key: ShortString | UnsetType | None = UNSET
    service_tier: ShortString | UnsetType | None = UNSET
    stream: bool | UnsetType | None = UNSET
    stream_options: StreamOptions | UnsetType | None = UNSET
    store: bool | UnsetType | None = UNSET
    background: bool | UnsetType | None = UNSET
    previous_response_id: ShortString | UnsetType | None = UNSET
    include: list[str] | UnsetType | None = UNSET
    truncation: Literal["auto", "disabled"] | UnsetType | None = UNSET
    top_logprobs: Annotated[int, Meta(ge=0, le=20)] | UnsetType | None = UNSET
    llmeu: RoutingRequest | UnsetType | None = UNSET

    @property
    def end_user(self) -> str | None:
        for value in (self.safety_identifier, self.user):
            if isinstance(value, str) and value:
                return value
        return None


def _tool_choice(choice: ToolChoice | UnsetType | None) -> Any:
    if not isinstance(choice, dict):
        return choice
    name = choice.get("name")
    if choice.get("type") != "function" or not isinstance(name, str):
        raise InvalidRequest(
            "tool_choice names a function tool ({type: function, name}) or is none, auto or "
            "required",
            param="tool_choice",
        )
    return ToolChoiceFunction(type="function", function=NamedFunction(name=name))


def _response_format(text: TextConfig | UnsetType | None) -> Any:
    if not isinstance(text, TextConfig) or not isinstance(text.format, TextFormat):
        return UNSET
    fmt = text.format
    if fmt.type != "json_schema":
        return ResponseFormat(type=fmt.type)
    if not isinstance(fmt.name, str) or not isinstance(fmt.schema, dict):
        raise InvalidRequest("a json_schema format has a name and a schema", param="text.format")
    schema: dict[str, Any] = {"name": fmt.name, "schema": fmt.schema}
    if isinstance(fmt.strict, bool):
        schema["strict"] = fmt.strict
    if isinstance(fmt.description, str):
        schema["description"] = fmt.description
    return ResponseFormat(type="json_schema", json_schema=schema)


def to_chat(req: ResponsesRequest, history: list[Message], stream: bool) -> ChatRequest:
    """The chat call that serves `req`; `history` is the stored conversation it continues."""
    messages: list[Message] = []
    if isinstance(req.instructions, str) and req.instructions:
        messages.append(SystemMessage(content=req.instructions))
    messages += history
    messages += input_messages(req.input)
    if not messages:
        raise InvalidRequest("input is empty: give a string or at least one item", param="input")
    tools = [
        Tool(
            type="function",
            function=FunctionDefinition(
                name=t.name,
                description=t.description if isinstance(t.description, str) else UNSET,
                parameters=t.parameters if isinstance(t.parameters, dict) else UNSET,
                strict=t.strict,
            ),
        )
        for t in function_tools(req.tools)
    ]
    effort = req.reasoning.effort if isinstance(req.reasoning, ReasoningConfig) else UNSET
    return ChatRequest(
        model=req.model,
        messages=messages,
        stream=True if stream else UNSET,
        stream_options=UNSET,
        temperature=req.temperature,
        top_p=req.top_p,
        max_completion_tokens=req.max_output_tokens,
        tools=tools or UNSET,
        tool_choice=_tool_choice(req.tool_choice) if tools else UNSET,
        parallel_tool_calls=req.parallel_tool_calls if tools else UNSET,
        response_format=_response_format(req.text),
        reasoning_effort=effort,
        user=req.end_user or UNSET,
        metadata=req.metadata,
        prompt_cache_key=req.prompt_cache_key,
        llmeu=req.llmeu,
    )
