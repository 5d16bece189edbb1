"""The Responses API wire: the request and its translation onto a `ChatRequest`.

A Responses call is served by the same upstreams as chat completions: its
`input` items become chat messages (`llmeu.protocol.responses_input`),
`instructions` a system message in front, `max_output_tokens`
`max_completion_tokens`, `text.format` `response_format`, `reasoning.effort`
`reasoning_effort`, and `safety_identifier` (else `user`) the end user. The
tools are typed by kind and mapped onto the chat call's in
`llmeu.protocol.responses_tools` (hosted tools apart: the governance step
decides where they may go; a hosted `mcp` tool is taken out before, the route
serves it: `llmeu.api.call.hosted_mcp`). `check_request` refuses what llmeu cannot serve and
`ignored_fields` names what it accepts without effect (docs/responses.md,
"Request fields"). The response object is in `llmeu.protocol.responses_object`, the
stream in `responses_stream`.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.calls.hosted_tools import RESPONSES_HOSTED, hosted_name
from llmeu.calls.request import (
    ChatRequest,
    Message,
    Probability,
    ResponseFormat,
    RoutingRequest,
    ShortString,
    SystemMessage,
    Temperature,
)
from llmeu.calls.tools import (
    AllowedTools,
    NamedFunction,
    ToolChoiceAllowed,
    ToolChoiceCustom,
    ToolChoiceFunction,
)
from llmeu.errors import InvalidRequest, NotFound
from llmeu.protocol.chat_wire import allowed_tools, set_fields
from llmeu.protocol.responses_input import Lenient, input_messages
from llmeu.protocol.responses_tools import ChatTools, chat_tools

Positive = Annotated[int, Meta(ge=1)]
ToolChoice = Literal["none", "auto", "required"] | dict[str, Any]

ENCRYPTED_REASONING = "reasoning.encrypted_content"
_LOGPROBS = "message.output_text.logprobs"
_ALWAYS_INCLUDED = frozenset({ENCRYPTED_REASONING, "message.input_image.image_url"})
_HOSTED_OUTPUTS = frozenset({
    "file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
    "computer_call_output.output.image_url", "code_interpreter_call.outputs",
})  # fmt: skip
"""`include` values about the output of hosted tools, which do not run through llmeu."""


class TextFormat(Lenient):
    type: Literal["text", "json_object", "json_schema"]
    name: str | UnsetType = UNSET
    schema: dict[str, Any] | UnsetType = UNSET
    description: str | UnsetType = UNSET
    strict: bool | UnsetType | None = UNSET


class TextConfig(Lenient):
    format: TextFormat | UnsetType | None = UNSET
    verbosity: ShortString | UnsetType | None = UNSET


class ReasoningConfig(Lenient):
    effort: ShortString | UnsetType | None = UNSET
    summary: ShortString | UnsetType | None = UNSET
    generate_summary: ShortString | UnsetType | None = UNSET  # `summary`'s former name
    context: ShortString | UnsetType | None = UNSET
    mode: ShortString | UnsetType | None = UNSET


class StreamOptions(Lenient):
    include_obfuscation: bool | UnsetType | None = UNSET


class ConversationRef(Lenient):
    id: str


class PromptRef(Lenient):
    id: str
    version: str | UnsetType | None = UNSET
    variables: dict[str, Any] | UnsetType | None = UNSET


class ResponsesRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """`POST /v1/responses`: every field of OpenAI's request (docs/responses.md,
    "Request fields").
    Input items and tools decode as JSON values first and are checked one by one, so each
    error names its item (`input[2].call_id`)."""

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
    stream: bool | UnsetType | None = UNSET
    stream_options: StreamOptions | UnsetType | None = UNSET
    store: bool | UnsetType | None = UNSET
    background: bool | UnsetType | None = UNSET
    previous_response_id: ShortString | UnsetType | None = UNSET
    include: list[str] | UnsetType | None = UNSET
    truncation: Literal["auto", "disabled"] | UnsetType | None = UNSET
    conversation: str | ConversationRef | UnsetType | None = UNSET
    prompt: PromptRef | UnsetType | None = UNSET
    # Accepted without effect (`ignored_fields`): where, how fast and at what price a call
    # runs is the policy's, what the provider keeps (caches) is its retention, and hosted
    # tools and server-side state do not run through llmeu.
    top_logprobs: Annotated[int, Meta(ge=0, le=20)] | UnsetType | None = UNSET
    max_tool_calls: Annotated[int, Meta(ge=0)] | UnsetType | None = UNSET
    service_tier: ShortString | UnsetType | None = UNSET
    prompt_cache_retention: ShortString | UnsetType | None = UNSET
    prompt_cache_options: dict[str, Any] | UnsetType | None = UNSET
    context_management: list[dict[str, Any]] | UnsetType | None = UNSET
    background_options: dict[str, Any] | UnsetType | None = UNSET
    moderation: dict[str, Any] | UnsetType | None = UNSET
    image: dict[str, Any] | UnsetType | None = UNSET
    access_programs: dict[str, Any] | UnsetType | None = UNSET
    client_metadata: dict[str, Any] | UnsetType | None = UNSET  # Codex's turn ids
    llmeu: RoutingRequest | UnsetType | None = UNSET

    @property
    def end_user(self) -> str | None:
        for value in (self.safety_identifier, self.user):
            if isinstance(value, str) and value:
                return value
        return None


def check_request(req: ResponsesRequest) -> None:
    """Refuse what llmeu cannot serve, naming it: a value no answer of llmeu's could honour,
    or state kept elsewhere (a conversation, a prompt template) it does not have."""
    for i, value in enumerate(req.include or ()):
        if value == _LOGPROBS:
            raise InvalidRequest(
                "log-probabilities are not carried by llmeu", param=f"include[{i}]"
            )
        if value not in _ALWAYS_INCLUDED and value not in _HOSTED_OUTPUTS:
            raise InvalidRequest(f"unknown include value {value!r}", param=f"include[{i}]")
    if req.background:
        raise InvalidRequest(
            "background responses are not supported: llmeu answers while you wait (stream "
            "the response to see it as it comes)",
            param="background",
        )
    if req.stream_options not in (None, UNSET) and not req.stream:
        raise InvalidRequest(
            "stream_options is only allowed when stream is true", param="stream_options"
        )
    conversation = req.conversation
    if conversation not in (None, UNSET):
        ident = conversation.id if isinstance(conversation, ConversationRef) else conversation
        raise NotFound(
            f"no conversation {ident!r}: llmeu keeps no conversations; continue a stored "
            "response with previous_response_id",
            param="conversation",
            code="conversation_not_found",
        )
    if isinstance(req.prompt, PromptRef):
        raise NotFound(
            f"no prompt {req.prompt.id!r}: llmeu keeps no prompt templates; send the prompt "
            "as instructions and input",
            param="prompt",
            code="prompt_not_found",
        )


_WITHOUT_EFFECT = (
    "top_logprobs", "max_tool_calls", "service_tier", "prompt_cache_retention",
    "prompt_cache_options", "context_management", "background_options", "moderation", "image",
    "access_programs", "client_metadata",
)  # fmt: skip


_without_effect = attrgetter(*_WITHOUT_EFFECT)


def ignored_fields(req: ResponsesRequest, *, native: bool) -> list[str]:
    """The fields `req` sets that llmeu accepts without effect on this attempt: `native`
    when a native Responses upstream serves it, which gets the model's own settings
    (`prompt_cache_key`, `text.verbosity`, `reasoning.context`/`mode`, `truncation`)."""
    found = set_fields(_WITHOUT_EFFECT, _without_effect(req))
    found += [f"include={value}" for value in req.include or () if value in _HOSTED_OUTPUTS]
    if isinstance(req.stream_options, StreamOptions) and req.stream_options.include_obfuscation:
        found.append("stream_options.include_obfuscation")
    if native:
        return found
    if req.prompt_cache_key not in (UNSET, None):
        found.append("prompt_cache_key")
    if isinstance(req.text, TextConfig) and req.text.verbosity not in (UNSET, None):
        found.append("text.verbosity")
    if isinstance(req.reasoning, ReasoningConfig):
        found += [
            f"reasoning.{name}"
            for name in ("context", "mode")
            if getattr(req.reasoning, name) not in (UNSET, None)
        ]
    if req.truncation == "auto":
        found.append("truncation")
    return found


def _tool_choice(choice: ToolChoice | UnsetType | None, tools: ChatTools) -> dict[str, Any]:
    """`tool_choice` on the chat call: a named function or custom tool, `allowed_tools` as the
    tools it names. A hosted tool is not on the chat call: a choice of one is `auto` there,
    and `allowed_tools` leaves it out (a native upstream that gets the tool gets the choice
    as sent)."""
    if not isinstance(choice, dict):
        return {"tool_choice": choice}
    kind, name = choice.get("type"), choice.get("name")
    if kind == "function" and isinstance(name, str):
        return {"tool_choice": ToolChoiceFunction(NamedFunction(name))}
    if kind == "custom" and isinstance(name, str):
        return {"tool_choice": ToolChoiceCustom(NamedFunction(name))}
    if kind == "allowed_tools" and choice.get("mode") in ("auto", "required"):
        entries = choice.get("tools")
        entries = [e for e in entries if not _hosted(e)] if isinstance(entries, list) else []
        allowed = AllowedTools(choice["mode"], entries)
        return allowed_tools(tools.tools, ToolChoiceAllowed(allowed), "tool_choice.tools")
    if isinstance(kind, str) and hosted_name(kind) in RESPONSES_HOSTED:
        return {"tool_choice": "auto"}
    raise InvalidRequest(
        "tool_choice names a function or custom tool ({type: function, name}), a hosted tool "
        "({type: web_search}), lists allowed_tools, or is none, auto or required",
        param="tool_choice",
    )


def _hosted(entry: object) -> bool:
    kind = entry.get("type") if isinstance(entry, dict) else None
    return isinstance(kind, str) and hosted_name(kind) in RESPONSES_HOSTED


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


def to_chat(
    req: ResponsesRequest, history: list[Message], stream: bool, tools: ChatTools | None = None
) -> ChatRequest:
    """The chat call that serves `req`; `history` is the stored conversation it continues,
    `tools` the request's tools as `chat_tools` maps them (mapped here when not given)."""
    messages: list[Message] = []
    if isinstance(req.instructions, str) and req.instructions:
        messages.append(SystemMessage(content=req.instructions))
    messages += history
    messages += input_messages(req.input)
    if not messages:
        raise InvalidRequest("input is empty: give a string or at least one item", param="input")
    mapped = tools if tools is not None else chat_tools(req.tools)
    effort = req.reasoning.effort if isinstance(req.reasoning, ReasoningConfig) else UNSET
    choice = _tool_choice(req.tool_choice, mapped) if mapped.tools else {}
    return ChatRequest(
        model=req.model,
        messages=messages,
        stream=True if stream else UNSET,
        stream_options=UNSET,
        temperature=req.temperature,
        top_p=req.top_p,
        max_completion_tokens=req.max_output_tokens,
        tools=choice.get("tools", mapped.tools) or UNSET,
        tool_choice=choice.get("tool_choice", UNSET),
        parallel_tool_calls=req.parallel_tool_calls if mapped.tools else UNSET,
        response_format=_response_format(req.text),
        reasoning_effort=effort,
        user=req.end_user or UNSET,
        metadata=req.metadata,
        prompt_cache_key=req.prompt_cache_key,
        llmeu=req.llmeu,
    )
