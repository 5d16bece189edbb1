"""What a call's spans say, following the OpenTelemetry GenAI semantic conventions.

Pure functions from the trace record (and the catalog entry of an endpoint) to
span names and attributes; `tracing` starts and ends the spans. Content (the
prompt and the output) is included only when the caller asks for it and the
record holds it, which it does only when the policy lets the gateway store
content.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from llmeu.calls.record import Attempt, CallStatus, TraceRecord
from llmeu.routing.catalog import Endpoint

Attributes = dict[str, Any]

OPERATIONS = {
    "chat.completions": "chat", "responses": "chat", "embeddings": "embeddings",
    "/mcp": "execute_tool",
}  # fmt: skip
_RESPONSE_IDS = {"chat.completions": "chatcmpl-", "responses": "resp_"}


def operation(record: TraceRecord) -> str:
    return OPERATIONS.get(record.route, record.route)


def call_span_name(record: TraceRecord) -> str:
    """`{gen_ai.operation.name} {gen_ai.request.model}`, as the conventions name spans; an
    MCP tool call `tools/call {tool}`, as the MCP conventions do."""
    if record.route == "/mcp":
        return f"tools/call {record.request_model}"
    op = operation(record)
    return f"{op} {record.request_model}" if record.request_model else op


def attempt_span_name(record: TraceRecord, endpoint: Endpoint | None) -> str:
    op = operation(record)
    return f"{op} {endpoint.model}" if endpoint is not None else op


def server_attributes(endpoint: Endpoint | None) -> Attributes:
    """`server.address`/`server.port` of an HTTP upstream; none for a local model."""
    if endpoint is None or not endpoint.base_url:
        return {}
    url = urlsplit(endpoint.base_url)
    if not url.hostname:
        return {}
    port = url.port or (443 if url.scheme == "https" else 80)
    return {"server.address": url.hostname, "server.port": port}


def call_attributes(record: TraceRecord, endpoint: Endpoint | None, content: bool) -> Attributes:
    """Everything the call span carries once the call is over."""
    attributes: Attributes = {
        "gen_ai.operation.name": operation(record),
        "llmeu.trace_id": record.trace_id,
        "llmeu.status": record.status.value,
        "llmeu.cancelled": record.status is CallStatus.CANCELLED,
        "llmeu.stream": record.stream,
        "llmeu.attempts": len(record.attempts),
        "llmeu.instance_id": record.instance_id,
    }
    optional: Attributes = {
        "gen_ai.request.model": record.request_model or None,
        "gen_ai.provider.name": record.provider,
        "gen_ai.response.model": record.model_used,
        "gen_ai.usage.input_tokens": record.input_tokens,
        "gen_ai.usage.output_tokens": record.output_tokens,
        "http.response.status_code": record.http_status,
        "llmeu.endpoint_id": record.endpoint_id,
        "llmeu.inference_region": record.inference_region,
        "llmeu.sovereignty_class": record.sovereignty_class,
        "llmeu.policy_id": record.policy_id,
        "llmeu.cost_eur": record.cost_eur,
    }
    attributes.update((k, v) for k, v in optional.items() if v is not None)
    if record.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = (record.finish_reason,)
    if record.route in _RESPONSE_IDS and record.endpoint_id is not None:
        attributes["gen_ai.response.id"] = _RESPONSE_IDS[record.route] + record.trace_id[4:]
    if record.input_tokens is not None:
        attributes["llmeu.tokens_estimated"] = record.tokens_estimated
    if record.status in (CallStatus.FAILED, CallStatus.REJECTED):
        attributes["error.type"] = record.error_code or record.error_type or "error"
    attributes.update(server_attributes(endpoint))
    if record.route == "/mcp":
        attributes.update(tool_attributes(record))
    if content:
        attributes.update(content_attributes(record))
    return attributes


def tool_attributes(record: TraceRecord) -> Attributes:
    """An MCP tool call's: the tool as the caller named it, its server, the bytes each way."""
    attributes: Attributes = {"mcp.method.name": "tools/call"}
    optional: Attributes = {
        "gen_ai.tool.name": record.request_model or None,
        "mcp.server": record.mcp_server,
        "mcp.tool": record.mcp_tool,
        "llmeu.bytes_in": record.bytes_in,
        "llmeu.bytes_out": record.bytes_out,
    }
    attributes.update((k, v) for k, v in optional.items() if v is not None)
    return attributes


def content_attributes(record: TraceRecord) -> Attributes:
    """Prompt and output as recorded for the ledger (present only when the policy stores them)."""
    if record.prompt is None:
        return {}
    attributes: Attributes = {"gen_ai.input.messages": record.prompt}
    if record.completion:
        output = [{"role": "assistant", "content": record.completion}]
        attributes["gen_ai.output.messages"] = json.dumps(output, ensure_ascii=False)
    return attributes


def attempt_attributes(
    record: TraceRecord, attempt: Attempt, endpoint: Endpoint | None
) -> Attributes:
    """What a child span for one upstream attempt carries when it starts."""
    attributes: Attributes = {
        "gen_ai.operation.name": operation(record),
        "gen_ai.provider.name": attempt.provider,
        "llmeu.endpoint_id": attempt.endpoint_id,
    }
    if endpoint is not None:
        attributes["gen_ai.request.model"] = endpoint.model
        attributes["llmeu.inference_region"] = endpoint.inference_region
        attributes["llmeu.sovereignty_class"] = endpoint.sovereignty_class.value
    attributes.update(server_attributes(endpoint))
    return attributes


def attempt_outcome_attributes(attempt: Attempt) -> Attributes:
    """What an attempt span learns when the attempt ends."""
    attributes: Attributes = {"llmeu.attempt.outcome": attempt.outcome}
    if attempt.upstream_status is not None:
        attributes["http.response.status_code"] = attempt.upstream_status
    if attempt.outcome == "failed":
        attributes["error.type"] = (
            str(attempt.upstream_status) if attempt.upstream_status else "upstream_error"
        )
    return attributes
