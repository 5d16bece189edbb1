"""Traces as the ledger stores them and as the platform API shows them, for evidence tests."""

from __future__ import annotations

import json
from typing import Any


def trace_view(**overrides: Any) -> dict[str, Any]:
    """A completed chat call, shaped like `llmeu.ledger.views.trace_view` (content included)."""
    view: dict[str, Any] = {
        "id": "trc_0192f3a4b5c6d7e8f9a0b1c2d3e4",
        "object": "trace",
        "status": "completed",
        "key_id": "key_7f3a9c",
        "route": "/v1/chat/completions",
        "stream": True,
        "request_model": "mistral-small",
        "timings": {
            "received_at": 1761998400.123456,
            "first_token_at": 1761998400.345678,
            "finished_at": 1761998401.5,
            "ttft_ms": 222.222,
            "tpot_ms": 29.1,
        },
        "routing": {
            "policy_id": "eu-strict",
            "endpoint_id": "scaleway-fr-par-mistral-small",
            "provider": "scaleway",
            "model_used": "mistral-small-3.2-24b-instruct-2506",
            "model_version": "2506",
            "inference_region": "fr-par",
            "sovereignty_class": "eu_sovereign",
            "retention": "P0D",
        },
        "usage": {
            "input_tokens": 12,
            "output_tokens": 40,
            "estimated": False,
            "cost_eur": 0.0000158,
        },
        "finish_reason": "stop",
        "error": None,
        "attempts": [
            {
                "endpoint_id": "ovh-gra-mistral-small",
                "provider": "ovhcloud",
                "started_at": 1761998400.13,
                "finished_at": 1761998400.2,
                "outcome": "failed",
                "error": "upstream said: 'Bonjour' is not allowed",
                "upstream_status": 503,
            },
            {
                "endpoint_id": "scaleway-fr-par-mistral-small",
                "provider": "scaleway",
                "started_at": 1761998400.2,
                "finished_at": 1761998401.5,
                "outcome": "served",
                "error": None,
                "upstream_status": None,
            },
        ],
        "excluded": [
            {
                "endpoint_id": "openai-us-gpt-4o-mini",
                "rule": "allow_classes",
                "reason": "sovereignty class global is not in [on_premise, eu_sovereign]",
            }
        ],
        "content": {
            "stored": True,
            "prompt": [{"role": "user", "content": "Bonjour, secret prompt"}],
            "completion": "Bonjour ! secret answer",
            "expires_at": 1762084800.0,
        },
    }
    view.update(overrides)
    return view


def ledger_row(number: int, **overrides: Any) -> dict[str, Any]:
    """The `number`-th final row of `traces`, column by column, content included."""
    received = 1761998400.0 + number * 1.25
    row: dict[str, Any] = {
        "trace_id": f"trc_{number:012x}{number * 7919:016x}",
        "key_id": "key_7f3a9c" if number % 3 else "key_admin",
        "route": "/v1/chat/completions",
        "request_model": "mistral-small",
        "stream": number % 2,
        "status": "completed" if number % 5 else "cancelled",
        "instance_id": "inst_a" if number % 2 else "inst_b",
        "received_at": received,
        "first_token_at": received + 0.2,
        "finished_at": received + 1.1,
        "ttft_ms": 200.0,
        "tpot_ms": 21.5,
        "policy_id": "eu-strict",
        "endpoint_id": "scaleway-fr-par-mistral-small",
        "provider": "scaleway",
        "model_used": "mistral-small-3.2-24b-instruct-2506",
        "model_version": "2506",
        "inference_region": "fr-par",
        "sovereignty_class": "eu_sovereign",
        "retention": "P0D",
        "input_tokens": 10 + number,
        "output_tokens": 40 + number % 7,
        "tokens_estimated": 0,
        "cost_eur": (10 + number) * 0.15e-6 + 40 * 0.35e-6,
        "finish_reason": "stop",
        "http_status": 200,
        "error_type": None,
        "error_code": None,
        "error_message": None,
        "attempts": json.dumps(
            [{"endpoint_id": "scaleway-fr-par-mistral-small", "outcome": "served"}]
        ),
        "excluded": "[]",
        "prompt": json.dumps([{"role": "user", "content": f"question {number}"}]),
        "completion": f"answer {number}",
        "content_expires_at": received + 86400,
    }
    row.update(overrides)
    return row
