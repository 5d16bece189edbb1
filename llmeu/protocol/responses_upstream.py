"""The Responses wire toward an upstream that speaks it: the request llmeu sends, and the
upstream's events (or whole response) as the call's deltas.

The request is built from the call's `ChatRequest` — the conversation llmeu
resolved (`previous_response_id`'s stored turns in front) and screened (masked
text where the policy masks) — turned back into input items (a namespace's
tools by their namespace and name again), plus the caller's Responses
settings (tools as sent, but the hosted tools this upstream does not
receive, and a `tool_choice` naming one of those is `auto`; `text`,
`reasoning`, sampling, limits). The
endpoint's model replaces the caller's, and `store` is always false: the
upstream keeps nothing, llmeu's own store and ids are the only state. With
`reasoning` set, the upstream is asked for `reasoning.encrypted_content`, the
only way a stateless upstream's reasoning can be handed back on the next turn.

The answer comes back as `Delta`s, so it goes through the same lifecycle and
stream encoder as a translated call (llmeu's own ids and sequence numbers,
restored masks, counts): text and refusal deltas, a function call's name and
then its argument pieces (one tool index per call; a custom tool's call its
name and input pieces; a namespace's tool by its name upstream), reasoning text (summary or
raw; a summary's later parts after a blank line), and a reasoning item's
`encrypted_content` as `reasoning_signature` when the item is done. An item
the upstream sent whole, without deltas, comes as one delta. `UpstreamEvents`
is pure: SSE events in, deltas out; the provider module does the I/O.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgspec
from msgspec import UNSET, Struct

from llmeu.calls.hosted_tools import RESPONSES_HOSTED, hosted_name
from llmeu.calls.output import (
    Delta,
    ToolCallCustomDelta,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    FilePart,
    ImagePart,
    Message,
    RedactedThinkingBlock,
    RefusalPart,
    SystemMessage,
    TextPart,
    ThinkingBlock,
    ToolMessage,
    UserMessage,
    text_of,
)
from llmeu.calls.tools import CustomToolCall
from llmeu.errors import UpstreamError
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.responses_input import flat_name
from llmeu.protocol.responses_object import Namespaced
from llmeu.protocol.responses_tools import sent_tools
from llmeu.protocol.responses_wire import ENCRYPTED_REASONING, ReasoningConfig, ResponsesRequest

_PASSED = ("parallel_tool_calls", "text", "reasoning", "max_output_tokens", "temperature",
           "top_p", "metadata", "safety_identifier", "user", "prompt_cache_key",
           "truncation")  # fmt: skip


def native_body(
    req: ResponsesRequest,
    chat: ChatRequest,
    model: str,
    *,
    stream: bool,
    namespaced: Namespaced,
    hosted: Collection[str] = (),
) -> bytes:
    """The request a Responses upstream gets for `req`, whose conversation is `chat`'s;
    `hosted` says where the hosted tools it receives are in the request (`tools[3]`)."""
    body: dict[str, Any] = {"model": model, "input": input_items(chat.messages, namespaced)}
    tools = sent_tools(req.tools, hosted)
    if tools:
        body["tools"] = tools
    if req.tool_choice is not UNSET and req.tool_choice is not None:
        body["tool_choice"] = _tool_choice(req.tool_choice, tools)
    for name in _PASSED:
        value = getattr(req, name)
        if value is not UNSET and value is not None:
            body[name] = msgspec.to_builtins(value)
    if isinstance(req.reasoning, ReasoningConfig):
        body["include"] = [ENCRYPTED_REASONING]
    body["store"] = False
    body["stream"] = stream
    return encoder.encode(body)


def _tool_choice(choice: Any, tools: list[dict[str, Any]]) -> Any:
    """The caller's `tool_choice`, but a hosted tool the upstream does not get: a choice of it
    is `auto`, and `allowed_tools` leaves it out."""
    sent = {hosted_name(str(tool.get("type"))) for tool in tools}

    def kept(entry: object) -> bool:
        kind = entry.get("type") if isinstance(entry, dict) else None
        name = hosted_name(kind) if isinstance(kind, str) else ""
        return name not in RESPONSES_HOSTED or name in sent

    if not isinstance(choice, dict):
        return choice
    if choice.get("type") == "allowed_tools" and isinstance(choice.get("tools"), list):
        return {**choice, "tools": [entry for entry in choice["tools"] if kept(entry)]}
    return choice if kept(choice) else "auto"


def input_items(messages: list[Message], namespaced: Namespaced) -> list[dict[str, Any]]:
    """Chat messages as Responses input items. Reasoning goes back only where it carries the
    upstream's opaque token (a thinking block's signature, redacted data): plain reasoning
    text is nothing a stateless Responses upstream can take back."""
    items: list[dict[str, Any]] = []
    custom: set[str] = set()  # the ids of custom tools' calls, whose outputs say so
    for message in messages:
        if isinstance(message, SystemMessage):
            items.append({"type": "message", "role": "system", "content": text_of(message)})
        elif isinstance(message, UserMessage):
            items.append({"type": "message", "role": "user", "content": _user_content(message)})
        elif isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            kind = "custom_tool_call_output" if call_id in custom else "function_call_output"
            items.append({"type": kind, "call_id": call_id, "output": text_of(message)})
        elif isinstance(message, AssistantMessage):
            items += _assistant_items(message, namespaced)
            custom.update(c.id for c in message.tool_calls or () if isinstance(c, CustomToolCall))
        else:  # developer and function messages do not come out of a Responses request
            items.append({"type": "message", "role": "developer", "content": text_of(message)})
    return items


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            detail = part.image_url.detail if isinstance(part.image_url.detail, str) else "auto"
            parts.append({"type": "input_image", "image_url": part.image_url.url, "detail": detail})
        elif isinstance(part, FilePart):
            file: dict[str, Any] = {"type": "input_file", "file_data": part.file.file_data}
            if isinstance(part.file.filename, str):
                file["filename"] = part.file.filename
            parts.append(file)
    return parts


def _assistant_items(message: AssistantMessage, namespaced: Namespaced) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in message.thinking_blocks or ():
        if isinstance(block, ThinkingBlock) and isinstance(block.signature, str):
            summary = [{"type": "summary_text", "text": block.thinking}]
            items.append({"type": "reasoning", "summary": summary,
                          "encrypted_content": block.signature})  # fmt: skip
        elif isinstance(block, RedactedThinkingBlock):
            items.append({"type": "reasoning", "summary": [], "encrypted_content": block.data})
    content = message.content
    parts: list[dict[str, Any]] = []
    if isinstance(content, str) and content:
        parts.append({"type": "output_text", "text": content, "annotations": []})
    for part in content if isinstance(content, list) else ():
        if isinstance(part, TextPart):
            parts.append({"type": "output_text", "text": part.text, "annotations": []})
        elif isinstance(part, RefusalPart):
            parts.append({"type": "refusal", "refusal": part.refusal})
    if parts:
        items.append({"type": "message", "role": "assistant", "content": parts})
    for call in message.tool_calls or ():
        if isinstance(call, CustomToolCall):
            item = {"type": "custom_tool_call", "call_id": call.id, "name": call.custom.name,
                    "input": call.custom.input}  # fmt: skip
        else:
            item = {"type": "function_call", "call_id": call.id, "name": call.function.name,
                    "arguments": call.function.arguments}  # fmt: skip
        found = namespaced.get(item["name"])
        if found is not None:
            item["namespace"], item["name"] = found
        items.append(item)
    return items


class _Event(Struct):
    type: str = ""
    delta: str | None = None
    output_index: int = 0
    summary_index: int = 0
    item: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    message: str | None = None


_event_decoder = msgspec.json.Decoder(_Event)
_response_decoder = msgspec.json.Decoder(dict[str, Any])
_TERMINAL = frozenset({"response.completed", "response.incomplete"})


class UpstreamEvents:
    """One upstream stream's events as deltas; `ended` once its terminal event arrived, with
    `finish_reason` and `usage` (None when the upstream reported none) set."""

    __slots__ = ("_streamed", "_tools", "ended", "finish_reason", "usage")

    def __init__(self) -> None:
        self._tools: dict[int, int] = {}  # output index -> tool index
        self._streamed: set[int] = set()  # output indexes whose text came as deltas
        self.ended = False
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def take(self, data: str) -> Delta | None:
        """The delta an event's data carries, or None; an upstream failure raises."""
        try:
            event = _event_decoder.decode(data)
        except (msgspec.DecodeError, RecursionError) as error:
            raise UpstreamError(f"upstream sent an invalid event: {error}") from None
        kind = event.type
        if kind == "response.output_text.delta" and event.delta:
            self._streamed.add(event.output_index)
            return Delta(content=event.delta)
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self._streamed.add(event.output_index)
            return Delta(reasoning_content=event.delta) if event.delta else None
        if kind in _CALL_DELTAS and event.delta:
            self._streamed.add(event.output_index)
            return _arguments(self._tools.get(event.output_index, 0), event.delta, kind)
        if kind == "response.refusal.delta" and event.delta:
            self._streamed.add(event.output_index)
            return Delta(refusal=event.delta)
        if kind == "response.reasoning_summary_part.added" and event.summary_index > 0:
            return Delta(reasoning_content="\n\n")
        if kind == "response.output_item.added" and event.item is not None:
            return self._added(event.output_index, event.item)
        if kind == "response.output_item.done" and event.item is not None:
            streamed = event.output_index in self._streamed
            return item_delta(event.item, self._tools.get(event.output_index, 0), streamed)
        if kind in _TERMINAL:
            self._end(event.response or {})
        elif kind in ("response.failed", "error"):
            raise UpstreamError(f"upstream failed mid-stream: {_failure(event)[:300]}")
        return None

    def _added(self, index: int, item: dict[str, Any]) -> Delta | None:
        if item.get("type") not in _CALLS:
            return None
        tool = self._tools[index] = len(self._tools)
        return _call(tool, item)

    def _end(self, response: dict[str, Any]) -> None:
        self.ended = True
        self.finish_reason = finish_reason(response, bool(self._tools))
        self.usage = usage_of(response)


def whole_deltas(raw: bytes) -> tuple[list[Delta], str, Usage | None]:
    """A whole (non-streamed) upstream response as the deltas a stream of it would carry,
    its finish reason and usage."""
    try:
        response = _response_decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError) as error:
        raise UpstreamError(f"upstream sent an invalid response: {error}") from None
    if response.get("status") == "failed":
        raise UpstreamError(f"upstream response failed: {_error_message(response)[:300]}")
    deltas: list[Delta] = []
    tools = 0
    for item in response.get("output") or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") in _CALLS:
            deltas.append(_call(tools, item))
            tools += 1
        delta = item_delta(item, tools - 1, streamed=False)
        if delta is not None:
            deltas.append(delta)
    return deltas, finish_reason(response, tools > 0), usage_of(response)


def item_delta(item: dict[str, Any], tool: int, streamed: bool) -> Delta | None:
    """What a finished item adds: its text when it was not streamed (an upstream may send an
    item whole), and a reasoning item's opaque token."""
    kind = item.get("type")
    if kind == "reasoning":
        token = item.get("encrypted_content")
        text = "" if streamed else _reasoning_text(item)
        if not text and not isinstance(token, str):
            return None
        return Delta(
            reasoning_content=text or UNSET,
            reasoning_signature=token if isinstance(token, str) else UNSET,
        )
    if streamed:
        return None
    if kind == "message":
        parts = [p for p in item.get("content") or () if isinstance(p, dict)]
        text = "".join(str(p.get("text", "")) for p in parts if p.get("type") == "output_text")
        refusal = "".join(str(p.get("refusal", "")) for p in parts if p.get("type") == "refusal")
        if text or refusal:
            return Delta(content=text or UNSET, refusal=refusal or UNSET)
    elif kind in _CALLS:
        sent = item.get(_CALLS[kind])
        if isinstance(sent, str) and sent:
            return _arguments(tool, sent, kind)
    return None


def _reasoning_text(item: dict[str, Any]) -> str:
    summary = [p.get("text", "") for p in item.get("summary") or () if isinstance(p, dict)]
    if summary:
        return "\n\n".join(str(t) for t in summary)
    content = [p.get("text", "") for p in item.get("content") or () if isinstance(p, dict)]
    return "".join(str(t) for t in content)


_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
"""The items of tool calls, and the field of what the call sends its tool."""
_CALL_DELTAS = {
    "response.function_call_arguments.delta": "function_call",
    "response.custom_tool_call_input.delta": "custom_tool_call",
}


def _call(tool: int, item: dict[str, Any]) -> Delta:
    """A call's first delta: its id and name (a namespace's tool: its name upstream)."""
    call_id, name, namespace = item.get("call_id"), item.get("name"), item.get("namespace")
    if isinstance(name, str) and isinstance(namespace, str) and namespace:
        name = flat_name(namespace, name)
    named = name if isinstance(name, str) else UNSET
    call = ToolCallDelta(tool, id=call_id if isinstance(call_id, str) else UNSET)
    if item.get("type") == "custom_tool_call":
        call.type, call.custom = "custom", ToolCallCustomDelta(name=named, input="")
    else:
        call.type, call.function = "function", ToolCallFunctionDelta(name=named, arguments="")
    return Delta(tool_calls=[call])


def _arguments(tool: int, piece: str, kind: str = "function_call") -> Delta:
    """A piece of a call's arguments (a custom tool's call: of its input)."""
    if _CALL_DELTAS.get(kind, kind) == "custom_tool_call":
        return Delta(tool_calls=[ToolCallDelta(tool, custom=ToolCallCustomDelta(input=piece))])
    function = ToolCallFunctionDelta(arguments=piece)
    return Delta(tool_calls=[ToolCallDelta(index=tool, function=function)])


def finish_reason(response: dict[str, Any], called_tools: bool) -> str:
    """The chat finish reason a Responses status stands for."""
    if response.get("status") == "incomplete":
        details = response.get("incomplete_details") or {}
        reason = details.get("reason") if isinstance(details, dict) else None
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if called_tools else "stop"


def usage_of(response: dict[str, Any]) -> Usage | None:
    usage = response.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt, output = usage.get("input_tokens"), usage.get("output_tokens")
    if not isinstance(prompt, int) or not isinstance(output, int):
        return None
    counted = Usage(prompt, output, prompt + output)
    details = usage.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if isinstance(cached, int) and cached > 0:
        counted.cache_read_input_tokens = cached
    return counted


def _failure(event: _Event) -> str:
    if event.message:
        return event.message
    return _error_message(event.response or {})


def _error_message(response: dict[str, Any]) -> str:
    error = response.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return "upstream error"
