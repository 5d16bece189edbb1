"""The record of one call: its status, its attempts, and everything the gateway knows about it.

This is the call's own data, not the ledger's: the api fills it in, the
ledger stores it, observability reads it. It sits below all three.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class CallStatus(StrEnum):
    """A trace's status. `in_progress` is transient: at the next start, a trace
    still in progress whose gateway process is gone becomes `interrupted`."""

    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    REJECTED = "rejected"
    INTERRUPTED = "interrupted"


FINAL_STATUSES = tuple(s for s in CallStatus if s is not CallStatus.IN_PROGRESS)


def new_trace_id() -> str:
    """`trc_` + milliseconds since the epoch (hex, sorts by time) + 64 random bits."""
    return f"trc_{time.time_ns() // 1_000_000:012x}{secrets.token_hex(8)}"


@dataclass(slots=True)
class Attempt:
    """One try of one endpoint within a call."""

    endpoint_id: str
    provider: str
    started_at: float
    finished_at: float | None = None
    outcome: str = "pending"  # served | failed | cancelled
    error: str | None = None
    upstream_status: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "endpoint_id": self.endpoint_id,
            "provider": self.provider,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "outcome": self.outcome,
            "error": self.error,
            "upstream_status": self.upstream_status,
        }


@dataclass(slots=True)
class TraceRecord:
    """Everything the gateway knows about one call; written at start and at the end."""

    trace_id: str
    key_id: str
    route: str
    request_model: str
    stream: bool
    received_at: float
    instance_id: str
    status: CallStatus = CallStatus.IN_PROGRESS
    policy_id: str | None = None
    endpoint_id: str | None = None
    provider: str | None = None
    model_used: str | None = None
    model_version: str | None = None
    inference_region: str | None = None
    sovereignty_class: str | None = None
    retention: str | None = None
    first_token_at: float | None = None
    finished_at: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tokens_estimated: bool = False
    cost_eur: float | None = None
    finish_reason: str | None = None
    http_status: int | None = None
    error_type: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    excluded: list[dict[str, str]] = field(default_factory=list)
    prompt: str | None = None
    completion: str | None = None
    content_expires_at: float | None = None
    subject_sha256: str | None = None
    metadata_expires_at: float | None = None
    cache_hit: str | None = None
    """`exact` or `semantic` when the answer came from the gateway's answer cache."""
    cache_source: str | None = None  # the trace of the call that produced a cached answer
    saved_eur: float | None = None  # what that call cost, which a cache hit did not
    cache_read_tokens: int | None = None  # the prompt cache's share of input_tokens
    cache_creation_tokens: int | None = None
    ignored_features: str | None = None  # e.g. `anthropic-beta` values, comma-separated
    personal_data: dict[str, Any] | None = None
    """What the personal-data scan found (detectors, paths, counts; never a value)."""
    policy_sha256: str | None = None
    request_sha256: str | None = None
    content_sha256: str | None = None
    mcp_server: str | None = None
    """A tool call's server (its catalog id); None for every other call."""
    mcp_tool: str | None = None
    """A tool call's tool, as its server names it."""
    bytes_in: int | None = None
    """A tool call's request as sent to its server, in bytes."""
    bytes_out: int | None = None
    """A tool call's answer as its server sent it, in bytes."""

    @property
    def ttft_ms(self) -> float | None:
        if self.first_token_at is None:
            return None
        return round((self.first_token_at - self.received_at) * 1000, 3)

    @property
    def tpot_ms(self) -> float | None:
        """Mean time per output token after the first one."""
        if self.first_token_at is None or self.finished_at is None or not self.output_tokens:
            return None
        if self.output_tokens < 2:
            return None
        return round((self.finished_at - self.first_token_at) * 1000 / (self.output_tokens - 1), 3)
