"""The Responses API's `response` object: what a call returns, streamed or not.

The object echoes what the request set (OpenAI's shape, `llmeu` routing
block at the top level) and holds the output items: a `reasoning` item, a
`message` with `output_text` and `refusal` parts, one `function_call` (or
`custom_tool_call`) per tool call, a namespace's tool named by its namespace
and name. Ids: `resp_` and the trace id's digits for the response; the
item's kind (`rs`, `msg`, `fc`, `ctc`), those digits and its index for an
item.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from llmeu.calls.tools import AnyToolCall, CustomToolCall
from llmeu.protocol.responses_tools import sent_tools
from llmeu.protocol.responses_wire import ReasoningConfig, ResponsesRequest, TextConfig
from llmeu.protocol.routing_block import RoutingBlock

Namespaced = Mapping[str, tuple[str, str]]
"""A namespace's tools by their names upstream: (namespace, name)."""


class TokensDetails(Struct):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class OutputTokensDetails(Struct):
    reasoning_tokens: int = 0


class ResponseUsage(Struct):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_tokens_details: TokensDetails = msgspec.field(default_factory=TokensDetails)
    output_tokens_details: OutputTokensDetails = msgspec.field(default_factory=OutputTokensDetails)


class ResponseError(Struct):
    code: str
    message: str


class IncompleteDetails(Struct):
    reason: str


class ResponseObject(Struct, kw_only=True):
    """OpenAI's `response` object, with the `llmeu` routing block at the top level."""

    id: str
    object: str = "response"
    created_at: int
    status: str
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None
    max_output_tokens: int | None
    model: str
    output: list[Any]
    parallel_tool_calls: bool
    previous_response_id: str | None
    reasoning: dict[str, Any]
    store: bool
    temperature: float | None
    text: dict[str, Any]
    tool_choice: Any
    tools: list[dict[str, Any]]
    top_p: float | None
    truncation: str
    usage: ResponseUsage | UnsetType = UNSET  # absent, never null, until known
    user: str | UnsetType = UNSET  # OpenAI's schema has no null here
    safety_identifier: str | None
    metadata: dict[str, str]
    llmeu: RoutingBlock | UnsetType = UNSET


def response_id(trace_id: str) -> str:
    """`resp_` and the trace id's own digits: one id links the response and its trace."""
    return "resp_" + trace_id[4:]


def response_shell(
    req: ResponsesRequest,
    *,
    response_id: str,
    created_at: int,
    model: str,
    store: bool,
    hosted: Collection[str] = (),
) -> ResponseObject:
    """The response object before any output: what the request set, echoed as OpenAI does;
    its tools those the call served (`hosted`: where the hosted tools that went upstream are
    in the request)."""
    text = req.text if isinstance(req.text, TextConfig) else None
    text_format = msgspec.to_builtins(text.format) if text and text.format else {"type": "text"}
    reasoning = req.reasoning if isinstance(req.reasoning, ReasoningConfig) else None
    return ResponseObject(
        id=response_id,
        created_at=created_at,
        status="in_progress",
        instructions=req.instructions if isinstance(req.instructions, str) else None,
        max_output_tokens=_or_none(req.max_output_tokens),
        model=model,
        output=[],
        parallel_tool_calls=req.parallel_tool_calls is not False,
        previous_response_id=_or_none(req.previous_response_id),
        reasoning={
            "effort": _or_none(reasoning.effort) if reasoning else None,
            "summary": _or_none(reasoning.summary or reasoning.generate_summary)
            if reasoning
            else None,
        },
        store=store,
        temperature=_or_none(req.temperature),
        text={"format": text_format},
        tool_choice=_or_none(req.tool_choice) or "auto",
        tools=[_echoed(tool) for tool in sent_tools(req.tools, hosted)],
        top_p=_or_none(req.top_p),
        truncation=_or_none(req.truncation) or "disabled",
        user=req.user if isinstance(req.user, str) else UNSET,
        safety_identifier=_or_none(req.safety_identifier),
        metadata=req.metadata if isinstance(req.metadata, dict) else {},
    )


def _or_none(value: Any) -> Any:
    return None if value is UNSET else value


def _echoed(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as the response echoes it: a function tool with every field OpenAI's has."""
    if tool.get("type") != "function":
        return tool
    fields = ("description", "parameters", "strict")
    return {"type": "function", "name": tool.get("name"), **{k: tool.get(k) for k in fields}}


def message_item(item_id: str, parts: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant",
            "content": parts}  # fmt: skip


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def refusal_part(refusal: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": refusal}


def function_call_item(
    item_id: str, call_id: str, name: str, arguments: str, status: str, namespaced: Namespaced
) -> dict[str, Any]:
    """A function call; `name` is the one it has upstream (a namespace's: `namespace__name`)."""
    item = {"id": item_id, "type": "function_call", "status": status, "call_id": call_id,
            "name": name, "arguments": arguments}  # fmt: skip
    return _named(item, namespaced)


def custom_call_item(
    item_id: str, call_id: str, name: str, text: str, namespaced: Namespaced
) -> dict[str, Any]:
    """A custom tool's call (OpenAI's has no status)."""
    item = {"id": item_id, "type": "custom_tool_call", "call_id": call_id, "name": name,
            "input": text}  # fmt: skip
    return _named(item, namespaced)


def _named(item: dict[str, Any], namespaced: Namespaced) -> dict[str, Any]:
    """`item` named as the caller knows its tool: a namespace's by its namespace and name."""
    found = namespaced.get(item["name"])
    if found is not None:
        item["namespace"], item["name"] = found
    return item


def reasoning_item(
    item_id: str,
    status: str,
    *,
    content: Sequence[str] = (),
    summary: Sequence[str] = (),
    encrypted: str | None = None,
) -> dict[str, Any]:
    """A reasoning item: its text as `content` (reasoning_text parts) and/or `summary`
    (summary_text parts), and the upstream's opaque `encrypted_content` where it gave one."""
    parts = [{"type": "summary_text", "text": t} for t in summary]
    item: dict[str, Any] = {"id": item_id, "type": "reasoning", "status": status, "summary": parts}
    if content:
        item["content"] = [{"type": "reasoning_text", "text": t} for t in content]
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def item_id(prefix: str, response_id: str, index: int) -> str:
    """An output item's id: its kind (`msg`, `fc`, `rs`), the response's digits, its index."""
    return f"{prefix}_{response_id[5:]}{index:02d}"


def output_items(
    response_id: str,
    content: str | None,
    refusal: str | None,
    tool_calls: list[AnyToolCall],
    namespaced: Namespaced,
    reasoning: str | None = None,
) -> list[dict[str, Any]]:
    """The `output` of a whole answer: reasoning, the message, then one item per tool call."""
    items: list[dict[str, Any]] = []
    if reasoning:
        rs_id = item_id("rs", response_id, 0)
        items.append(reasoning_item(rs_id, "completed", content=[reasoning]))
    parts = ([text_part(content)] if content else []) + ([refusal_part(refusal)] if refusal else [])
    if parts:
        msg_id = item_id("msg", response_id, len(items))
        items.append(message_item(msg_id, parts, "completed"))
    for call in tool_calls:
        if isinstance(call, CustomToolCall):
            ctc_id = item_id("ctc", response_id, len(items))
            custom = call.custom
            items.append(custom_call_item(ctc_id, call.id, custom.name, custom.input, namespaced))
            continue
        fc_id = item_id("fc", response_id, len(items))
        function = call.function
        items.append(function_call_item(fc_id, call.id, function.name, function.arguments,
                                        "completed", namespaced))  # fmt: skip
    return items


def final_status(finish_reason: str | None) -> tuple[str, IncompleteDetails | None]:
    """`completed`, or `incomplete` with its reason when the output was cut short."""
    if finish_reason == "length":
        return "incomplete", IncompleteDetails(reason="max_output_tokens")
    if finish_reason == "content_filter":
        return "incomplete", IncompleteDetails(reason="content_filter")
    return "completed", None


def response_usage(
    input_tokens: int | None, output_tokens: int | None
) -> ResponseUsage | UnsetType:
    """The usage, or UNSET (left out, as OpenAI's schema wants) when a count is unknown."""
    if input_tokens is None or output_tokens is None:
        return UNSET
    return ResponseUsage(input_tokens, output_tokens, input_tokens + output_tokens)


def response_error(status: int, message: str) -> ResponseError:
    """The `error` of a failed response, in the codes OpenAI's schema knows."""
    if status == 429:
        return ResponseError(code="rate_limit_exceeded", message=message)
    if status in (400, 413):
        return ResponseError(code="invalid_prompt", message=message)
    return ResponseError(code="server_error", message=message)
