"""How the platform API shows what the ledger holds: traces, usage rows, page cursors."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

from llmeu.ledger.database import Row

STATUS_COUNTS = ("completed", "cancelled", "failed", "rejected", "interrupted")


def encode_cursor(received_at: float, trace_id: str) -> str:
    raw = json.dumps([received_at, trace_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """Raises ValueError for a cursor this server did not issue (one holding a NaN, an
    infinity or a control character in its trace id cannot be one)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        received_at, trace_id = json.loads(raw)
        moment, trace = float(received_at), str(trace_id)
    except Exception as error:  # any malformed cursor is the caller's error
        raise ValueError("invalid cursor") from error
    if not math.isfinite(moment) or not trace.isprintable():
        raise ValueError("invalid cursor")
    return moment, trace


def trace_view(row: Row, *, summary: bool = False) -> dict[str, Any]:
    """A trace as the platform API shows it."""
    view: dict[str, Any] = {
        "id": row["trace_id"],
        "object": "trace",
        "status": row["status"],
        "key_id": row["key_id"],
        "route": row["route"],
        "stream": bool(row["stream"]),
        "instance_id": row["instance_id"],
        "request_model": row["request_model"],
        "timings": {
            "received_at": row["received_at"],
            "first_token_at": row["first_token_at"],
            "finished_at": row["finished_at"],
            "ttft_ms": row["ttft_ms"],
            "tpot_ms": row["tpot_ms"],
        },
        "routing": {
            "policy_id": row["policy_id"],
            "endpoint_id": row["endpoint_id"],
            "provider": row["provider"],
            "model_used": row["model_used"],
            "model_version": row["model_version"],
            "inference_region": row["inference_region"],
            "sovereignty_class": row["sovereignty_class"],
            "retention": row["retention"],
        },
        "usage": {
            "input_tokens": row["input_tokens"],
            "output_tokens": row["output_tokens"],
            "estimated": bool(row["tokens_estimated"]),
            "cost_eur": row["cost_eur"],
        },
        "finish_reason": row["finish_reason"],
        "error": None
        if row["error_type"] is None
        else {
            "type": row["error_type"],
            "code": row["error_code"],
            "message": row["error_message"],
            "http_status": row["http_status"],
        },
    }
    # Whether the gateway's answer cache answered the call: a flag beside the status, which
    # stays what the call's was (a hit is `completed`), and where the answer came from.
    view["cached"] = row.get("cache_hit") is not None
    if view["cached"]:
        view["cache"] = {
            "kind": row["cache_hit"],
            "source_trace_id": row["cache_source"],
            "saved_eur": row["saved_eur"],
        }
    # Present where they apply: the cache's share of the input where the upstream reported
    # it, and the protocol features a call asked for that the gateway ignored.
    for column in ("cache_read_tokens", "cache_creation_tokens"):
        if row[column] is not None:
            view["usage"][column] = row[column]
    if row["ignored_features"]:
        view["ignored_features"] = row["ignored_features"]
    if row.get("mcp_server") is not None:  # a tool call of `/mcp`
        view["mcp"] = {
            "server": row["mcp_server"],
            "tool": row.get("mcp_tool"),
            "bytes_in": row.get("bytes_in"),
            "bytes_out": row.get("bytes_out"),
        }
    if not summary:
        view["attempts"] = json.loads(row["attempts"])
        view["excluded"] = json.loads(row["excluded"])
        view["personal_data"] = (
            json.loads(row["personal_data"]) if row["personal_data"] is not None else None
        )
        view["content"] = {
            "stored": row["prompt"] is not None or row["completion"] is not None,
            "prompt": json.loads(row["prompt"]) if row["prompt"] else None,
            "completion": row["completion"],
            "expires_at": row["content_expires_at"],
        }
        # What a receipt carries besides the trace, and the row's place in the hash chain.
        view["evidence"] = {
            "policy_sha256": row.get("policy_sha256"),
            "request_sha256": row.get("request_sha256"),
            "content_sha256": row.get("content_sha256"),
            "chain_seq": row.get("chain_seq"),
            "chain_link": row.get("chain_link"),
            # Found without a place, not written by the gateway (llmeu.ledger.chaining).
            "chain_suspect": bool(row.get("chain_suspect")),
        }
    return view


def usage_view(group_by: str, row: Row) -> dict[str, Any]:
    return {
        group_by: row["grp"],
        "requests": int(row["requests"]),
        **{s: int(row[s] or 0) for s in STATUS_COUNTS},
        "input_tokens": int(row["input_tokens"] or 0),
        "output_tokens": int(row["output_tokens"] or 0),
        "estimated_requests": int(row["estimated_requests"] or 0),
        "cost_eur": round(float(row["cost_eur"] or 0), 10),
        "cached": int(row["cached"] or 0),
        "saved_eur": round(float(row["saved_eur"] or 0), 10),
    }
