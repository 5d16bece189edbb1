"""What the client hands back: the assembled `ChatResult` and the deltas of a stream.

The objects that come off the wire as they are (`Usage`, `RoutingBlock`,
`CostEstimate`) are frozen msgspec structs, decoded straight from the JSON.
They are lenient on purpose: every field is optional, unknown fields are
ignored, because the client reads third-party OpenAI-compatible servers too,
and because an error frame may carry a partial routing block. A field that
did not arrive is `None`, never a made-up zero. The server-side shapes in
`llmeu.protocol` are strict (they describe what the gateway sends), so
the client does not reuse them for reading.

Everything the client builds itself is a plain frozen dataclass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from llmeu.client._timings import Timings


class Usage(msgspec.Struct, frozen=True):
    """Token counts as the server reported them; a count it did not send is `None`."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    prompt_tokens_details: dict[str, Any] | None = None
    completion_tokens_details: dict[str, Any] | None = None


class CostEstimate(msgspec.Struct, frozen=True):
    currency: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    amount: float | None = None
    estimated: bool | None = None


class RoutingBlock(msgspec.Struct, frozen=True):
    """The `llmeu` block (design §3): where the call ran, under which policy, at what cost."""

    trace_id: str | None = None
    model_used: str | None = None
    model_version: str | None = None
    provider: str | None = None
    endpoint_id: str | None = None
    inference_region: str | None = None
    sovereignty_class: str | None = None
    policy_id: str | None = None
    retention: str | None = None
    cost_estimate: CostEstimate | None = None
    receipt: str | None = None
    """The signed receipt, when the request set `llmeu: {"receipt": true}`."""


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """An OpenAI-shaped error object, `{"message", "type", "param", "code"}`, as received.

    `raw` keeps whatever the server sent (e.g. llmeu's per-endpoint `details`).
    """

    message: str
    type: str | None = None
    param: str | None = None
    code: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_payload(cls, payload: object) -> ErrorInfo:
        """Read an error from whatever a server put there: an object, a string, anything."""
        if isinstance(payload, Mapping):
            message = payload.get("message")
            return cls(
                message=message if isinstance(message, str) else str(dict(payload)),
                type=_optional_str(payload.get("type")),
                param=_optional_str(payload.get("param")),
                # Some servers send numeric codes (llama.cpp: 500); keep them readable.
                code=_optional_str(payload.get("code")),
                raw=dict(payload),
            )
        return cls(message=payload if isinstance(payload, str) else repr(payload))

    def __str__(self) -> str:
        label = self.code or self.type
        return f"{self.message} ({label})" if label else self.message


def _optional_str(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One assembled tool call: the fragments of one `index`, arguments joined in order."""

    index: int
    id: str | None
    type: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """A piece of the answer's text, as one frame carried it."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning text (`reasoning_content`), sent by reasoning models."""

    text: str


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """One tool-call fragment; the fields a frame did not carry are `None`."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


ChatDelta = ContentDelta | ReasoningDelta | RefusalDelta | ToolCallDelta


@dataclass(frozen=True, slots=True)
class ChatResult:
    """A chat answer, complete or not.

    `complete` is true only for a stream that ended with `[DONE]` and no error
    (or a non-streaming response that parsed). A partial result travels on
    `IncompleteStreamError.result`, so the text received is never lost.
    """

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    llmeu: RoutingBlock | None = None
    error: ErrorInfo | None = None
    complete: bool = False
    id: str | None = None
    model: str | None = None
    reasoning: str = ""
    refusal: str = ""
    timings: Timings | None = None
