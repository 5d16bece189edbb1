"""The tools a call offers and the calls its answer makes of them, in OpenAI's chat shape.

A function tool takes JSON arguments its `parameters` describe; a custom tool
(OpenAI's free-form tools: Codex's `apply_patch`) takes text, optionally held
to a grammar. Few upstreams have custom tools, so each has a *function form*
(`CustomTool.function`, `CustomToolCall.function`): a function of the same
name with one string argument, `input`. Every chat attempt offers upstreams
that form and reads their calls back (`llmeu.calls.tool_forms`); a provider
reading `.function` of any tool or call gets a function either way. Unknown
fields inside tools and calls are ignored, as in messages.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType


class _In(Struct, omit_defaults=True):
    """Base of nested request objects: unknown fields ignored."""


class FunctionCall(_In):
    name: str
    arguments: str


class CustomCall(_In):
    name: str
    input: str


class ToolCall(_In, tag_field="type", tag="function"):
    id: str
    function: FunctionCall


class CustomToolCall(_In, tag_field="type", tag="custom"):
    """A call of a custom tool: its free-form `input`, as OpenAI's chat wire carries it."""

    id: str
    custom: CustomCall

    @property
    def function(self) -> FunctionCall:
        """The call as the function form of its tool takes it (`CustomTool.function`)."""
        return FunctionCall(self.custom.name, custom_arguments(self.custom.input))


AnyToolCall = ToolCall | CustomToolCall


class FunctionDefinition(_In):
    name: Annotated[str, Meta(min_length=1, max_length=64)]
    description: str | UnsetType = UNSET
    parameters: dict[str, Any] | UnsetType = UNSET
    strict: bool | UnsetType | None = UNSET


class CacheControl(_In):
    """A prompt-cache breakpoint (Anthropic's `cache_control`): the upstream may cache the
    prompt up to and including what carries it. Passed to the upstreams that cache prompts
    this way (`anthropic`, `vertex_anthropic`, Bedrock's `cachePoint`), left out for others."""

    type: Literal["ephemeral"]
    ttl: Annotated[str, Meta(max_length=256)] | UnsetType = UNSET


class Tool(_In, tag_field="type", tag="function"):
    function: FunctionDefinition
    cache_control: CacheControl | UnsetType = UNSET


class CustomText(_In, tag_field="type", tag="text"):
    """A custom tool's input: any text."""


class Grammar(_In):
    definition: str
    syntax: Literal["lark", "regex"]


class CustomGrammar(_In, tag_field="type", tag="grammar"):
    """A custom tool's input: text its grammar accepts."""

    grammar: Grammar


class CustomDefinition(_In):
    name: Annotated[str, Meta(min_length=1, max_length=64)]
    description: str | UnsetType = UNSET
    format: CustomText | CustomGrammar | UnsetType = UNSET


class CustomTool(_In, tag_field="type", tag="custom"):
    """A tool the caller's code runs on free-form text (OpenAI's custom tools: Codex's
    `apply_patch`). An upstream that has no such tools is offered its function form."""

    custom: CustomDefinition
    cache_control: CacheControl | UnsetType = UNSET
    """As a function tool's; no surface sets it on a custom tool today."""

    @property
    def function(self) -> FunctionDefinition:
        """The function form: one string argument, `input` (`llmeu.calls.tool_forms`)."""
        custom = self.custom
        return FunctionDefinition(custom.name, custom.description, input_schema(custom.format))


CUSTOM_INPUT = "input"
"""The one argument of a custom tool's function form."""


def input_schema(format: CustomText | CustomGrammar | UnsetType) -> dict[str, Any]:
    """The parameters of a custom tool's function form: the input as one string, described by
    its grammar where it has one (an upstream without custom tools cannot enforce it, but the
    model can follow it)."""
    what = "The tool's input, as free-form text."
    if isinstance(format, CustomGrammar):
        grammar = format.grammar
        what = f"The tool's input: text in this {grammar.syntax} grammar:\n{grammar.definition}"
    return {
        "type": "object",
        "properties": {CUSTOM_INPUT: {"type": "string", "description": what}},
        "required": [CUSTOM_INPUT],
        "additionalProperties": False,
    }


def custom_arguments(text: str) -> str:
    """A custom tool's input as the arguments of its function form."""
    return json.dumps({CUSTOM_INPUT: text}, ensure_ascii=False)


class NamedFunction(_In):
    name: str


class ToolChoiceFunction(_In, tag_field="type", tag="function"):
    function: NamedFunction


class AllowedTools(_In):
    mode: Literal["auto", "required"]
    tools: list[dict[str, Any]]


class ToolChoiceAllowed(_In, tag_field="type", tag="allowed_tools"):
    """A subset of `tools` the model may call (`mode` as `auto` or `required`); the gateway
    serves it as those tools alone (`llmeu.protocol.chat_wire.accepted_chat`)."""

    allowed_tools: AllowedTools


class ToolChoiceCustom(_In, tag_field="type", tag="custom"):
    custom: NamedFunction


ToolChoice = (
    Literal["none", "auto", "required"] | ToolChoiceFunction | ToolChoiceAllowed | ToolChoiceCustom
)
