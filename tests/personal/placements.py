"""Where a value can sit in a request of each surface: every forwarded field the scan must read.

Each placement builds a request body (without `model`) from one value, or
from the two halves of one value split across two consecutive parts where the
field has two such parts (two messages, two `stop` sequences, two metadata
values, two inputs); a field of one text takes one value only. The last
message asks the fake OpenAI-compatible upstream to keep the body it got
(`[[reply=echo]]`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ECHO = "[[reply=echo]]"
Values = tuple[str, ...]
Placement = Callable[[Values], dict[str, Any]]


def _parameters(values: Values) -> dict[str, Any]:
    properties = {f"p{i}": {"description": value} for i, value in enumerate(values)}
    return {"type": "object", "properties": properties}


def _metadata(values: Values) -> dict[str, str]:
    return {f"note{i}": value for i, value in enumerate(values)}


def _chat(**fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"hello {ECHO}"}], **fields}


def _messages(values: Values, role: str = "user") -> list[dict[str, Any]]:
    *first, last = values
    return [
        *({"role": role, "content": v} for v in first),
        {"role": role, "content": f"{last} {ECHO}"},
    ]


CHAT: dict[str, Placement] = {
    "messages": lambda v: {"messages": _messages(v)},
    "name": lambda v: {"messages": [{"role": "user", "name": v[0], "content": f"hi {ECHO}"}]},
    "user": lambda v: _chat(user=v[0]),
    "metadata": lambda v: _chat(metadata=_metadata(v)),
    "tool_description": lambda v: _chat(tools=[{"type": "function", "function": {
        "name": "lookup", "description": v[0], "parameters": {"type": "object"}}}]),
    "parameter_description": lambda v: _chat(tools=[{"type": "function", "function": {
        "name": "lookup", "parameters": _parameters(v)}}]),
    "stop": lambda v: _chat(stop=list(v)),
    "response_format": lambda v: _chat(response_format={"type": "json_schema", "json_schema": {
        "name": "answer", "schema": {"type": "object", "description": v[0]}}}),
}  # fmt: skip


def _responses(**fields: Any) -> dict[str, Any]:
    return {"input": f"hello {ECHO}", "store": False, **fields}


RESPONSES: dict[str, Placement] = {
    "input": lambda v: {"input": _messages(v), "store": False},
    "instructions": lambda v: _responses(instructions=v[0]),
    "metadata": lambda v: _responses(metadata=_metadata(v)),
    "tool_description": lambda v: _responses(tools=[{"type": "function", "name": "lookup",
        "description": v[0], "parameters": {"type": "object"}}]),
    "parameter_description": lambda v: _responses(tools=[{"type": "function", "name": "lookup",
        "parameters": _parameters(v)}]),
    "safety_identifier": lambda v: _responses(safety_identifier=v[0]),
    "text_format": lambda v: _responses(text={"format": {"type": "json_schema", "name": "answer",
        "schema": {"type": "object", "description": v[0]}}}),
    "prompt_cache_key": lambda v: _responses(prompt_cache_key=v[0]),
}  # fmt: skip


def _anthropic(**fields: Any) -> dict[str, Any]:
    return {"max_tokens": 50, "messages": [{"role": "user", "content": f"hello {ECHO}"}],
            **fields}  # fmt: skip


MESSAGES: dict[str, Placement] = {
    "messages": lambda v: {"max_tokens": 50, "messages": _messages(v)},
    "system": lambda v: _anthropic(system=[{"type": "text", "text": v[0]}]),
    "metadata_user_id": lambda v: _anthropic(metadata={"user_id": v[0]}),
    "tool_description": lambda v: _anthropic(tools=[{"name": "lookup", "description": v[0],
        "input_schema": {"type": "object"}}]),
    "input_schema": lambda v: _anthropic(tools=[{"name": "lookup", "input_schema": _parameters(v)}]),
    "stop_sequences": lambda v: _anthropic(stop_sequences=list(v)),
}  # fmt: skip

EMBEDDINGS: dict[str, Placement] = {"input": lambda v: {"input": list(v)}}

SPLIT_FIELDS = {"messages", "input", "metadata", "parameter_description", "stop", "input_schema",
                "stop_sequences"}  # fmt: skip
"""The fields with two consecutive parts, where a value can be split across them."""
