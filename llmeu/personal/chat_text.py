"""What a chat request forwards, for the scan and the masking: every string in it.

Every upstream kind is handed the canonical `ChatRequest` (the chat surface
decodes into it; Messages and Responses map onto it) and forwards what it
holds, so the scan walks all of it (`llmeu.personal.fields`): messages with
their names, tool calls and reasoning, tools with their descriptions and
parameter schemas, `stop`, `response_format`, `user`, `metadata`, and any field
added later. Two fields never leave the gateway: `model` (each endpoint sends
its own model's name) and `llmeu` (the routing request). Images, audio and
files are reported as not scanned.
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec import UnsetType
from msgspec.structs import replace

from llmeu.calls.request import ChatRequest
from llmeu.calls.tools import AnyToolCall, CustomToolCall
from llmeu.personal import fields

NOT_FORWARDED = frozenset({"model", "llmeu"})


def chat_parts(chat: ChatRequest) -> tuple[list[tuple[str, str]], list[str]]:
    """The request's `(path, text)` parts and the paths of the parts that are not text."""
    return fields.texts(chat, skip=NOT_FORWARDED)


def rewritten(chat: ChatRequest, edit: fields.Edit) -> ChatRequest:
    """The request with every forwarded string replaced by `edit(path, text)`."""
    return fields.rewritten(chat, edit, skip=NOT_FORWARDED)


def restored_tool_calls(
    calls: list[AnyToolCall] | UnsetType,
    restore: Callable[[str], str],
    restore_json: Callable[[str], str],
) -> list[AnyToolCall] | UnsetType:
    """An answer's tool calls with the values of a masking put back into their arguments
    (JSON: `restore_json`) or, for a custom tool's call, its input (text: `restore`)."""
    if not isinstance(calls, list):
        return calls
    return [
        replace(call, custom=replace(call.custom, input=restore(call.custom.input)))
        if isinstance(call, CustomToolCall)
        else replace(
            call, function=replace(call.function, arguments=restore_json(call.function.arguments))
        )
        for call in calls
    ]
