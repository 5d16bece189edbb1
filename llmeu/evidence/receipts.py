"""Signed per-call receipts: what happened to one call, checkable offline by anyone.

A receipt is a compact JWS (`typ: llmeu-receipt+jws`, see `llmeu.evidence.jws`)
whose payload is the JCS form of the object below, built from a final trace
as the platform API shows it (`GET /v1/platform/traces/{id}`). It holds
digests, never content: a receipt can be handed to a third party without
revealing the prompt or the answer, and whoever holds those can prove they
are the ones the receipt speaks of.

Payload, version 1 (every member is always present; unknown values are null):

    receipt_version   1
    trace_id          "trc_…", the call's trace
    status            completed | cancelled | failed | rejected | interrupted
    route             the API route called, e.g. "/v1/chat/completions"
    request_model     the model the caller asked for
    stream            whether the answer was streamed
    key_id            the id of the API key that made the call (never the key)
    timings           received_at, first_token_at, finished_at: seconds since
                      the Unix epoch (UTC), as the ledger records them
    policy            policy_id: the effective policy; sha256: hex SHA-256 of the
                      JCS form of that policy's document as applied to the call
                      (after any narrowing by the request)
    routing           the routing block: endpoint_id, provider, model_used,
                      model_version, inference_region, sovereignty_class,
                      retention (ISO 8601 duration)
    attempts          every endpoint tried, in order: endpoint_id, provider,
                      started_at, finished_at, outcome (served | failed |
                      cancelled), upstream_status (the upstream's HTTP status)
    excluded          every endpoint the policy or health excluded: endpoint_id,
                      rule (the policy field or `health`), reason
    usage             input_tokens, output_tokens, estimated (counted by the
                      gateway rather than reported by the upstream), cost:
                      {currency: "EUR", amount}
    finish_reason     as the upstream reported it
    error             null, or {type, code, http_status} (no message: messages
                      can quote the request)
    digests           request_sha256: hex SHA-256 of the HTTP request body
                      exactly as received; content_sha256: hex SHA-256 of the
                      UTF-8 text the call produced, as the trace would store it

Attempts' error texts are left out for the same reason as error messages.
Receipts are deterministic: Ed25519 signatures are, and the payload holds no
time of issue, so asking twice for a receipt gives the same bytes as long as
the active key is the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llmeu.evidence.jcs import canonical_json
from llmeu.evidence.jws import RECEIPT_TYPE, sign_compact, verify_compact
from llmeu.evidence.signing_keys import SigningKey, public_keys_from_jwks

RECEIPT_VERSION = 1
FINAL_STATUSES = frozenset({"completed", "cancelled", "failed", "rejected", "interrupted"})
_ROUTING_FIELDS = (
    "endpoint_id", "provider", "model_used", "model_version", "inference_region",
    "sovereignty_class", "retention",
)  # fmt: skip
_ATTEMPT_FIELDS = (
    "endpoint_id", "provider", "started_at", "finished_at", "outcome", "upstream_status",
)  # fmt: skip
_EXCLUSION_FIELDS = ("endpoint_id", "rule", "reason")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def policy_sha256(policy_document: Mapping[str, Any]) -> str:
    """The digest a receipt carries for the policy as applied: SHA-256 of its JCS form."""
    return sha256_hex(canonical_json(policy_document))


def receipt_payload(
    trace: Mapping[str, Any],
    *,
    policy_sha256: str | None,
    request_sha256: str | None,
    content_sha256: str | None,
) -> dict[str, Any]:
    """The payload (schema above) of the receipt of `trace`, a trace view.

    Raises ValueError for a trace that is not final yet: a receipt attests an outcome.
    """
    status = trace["status"]
    if status not in FINAL_STATUSES:
        raise ValueError(f"trace {trace['id']} is {status}: only a final trace has a receipt")
    timings, routing, usage = trace["timings"], trace["routing"], trace["usage"]
    error = trace.get("error")
    return {
        "receipt_version": RECEIPT_VERSION,
        "trace_id": trace["id"],
        "status": status,
        "route": trace["route"],
        "request_model": trace["request_model"],
        "stream": bool(trace["stream"]),
        "key_id": trace["key_id"],
        "timings": {
            "received_at": timings["received_at"],
            "first_token_at": timings["first_token_at"],
            "finished_at": timings["finished_at"],
        },
        "policy": {"policy_id": routing["policy_id"], "sha256": policy_sha256},
        "routing": {name: routing[name] for name in _ROUTING_FIELDS},
        "attempts": _picked(trace.get("attempts") or (), _ATTEMPT_FIELDS),
        "excluded": _picked(trace.get("excluded") or (), _EXCLUSION_FIELDS),
        "usage": {
            "input_tokens": usage["input_tokens"],
            "output_tokens": usage["output_tokens"],
            "estimated": bool(usage["estimated"]),
            "cost": {"currency": "EUR", "amount": usage["cost_eur"]},
        },
        "finish_reason": trace.get("finish_reason"),
        "error": None
        if not error
        else {
            "type": error.get("type"),
            "code": error.get("code"),
            "http_status": error.get("http_status"),
        },
        "digests": {"request_sha256": request_sha256, "content_sha256": content_sha256},
    }


def _picked(items: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> list[dict[str, Any]]:
    return [{name: item.get(name) for name in fields} for item in items]


def build_receipt(
    trace: Mapping[str, Any],
    key: SigningKey,
    *,
    policy_sha256: str | None,
    request_sha256: str | None,
    content_sha256: str | None,
) -> str:
    """The signed receipt (compact JWS) of a final trace view."""
    payload = receipt_payload(
        trace,
        policy_sha256=policy_sha256,
        request_sha256=request_sha256,
        content_sha256=content_sha256,
    )
    return sign_compact(canonical_json(payload), key, typ=RECEIPT_TYPE)


@dataclass(frozen=True, slots=True)
class ReceiptCheck:
    """`line` says in one line why a receipt is invalid, or what a valid one attests."""

    valid: bool
    line: str
    payload: dict[str, Any] | None = None
    kid: str | None = None


def verify_receipt(
    receipt: str,
    jwks: Mapping[str, Any],
    *,
    request_body: bytes | None = None,
    content: bytes | None = None,
) -> ReceiptCheck:
    """Check a receipt's signature against a JWKS document, and, when given, that the
    request body and the content produced are the ones whose digests it carries."""
    try:
        keys = public_keys_from_jwks(jwks)
    except ValueError as error:
        return ReceiptCheck(False, f"invalid: {error}")
    check = verify_compact(receipt, keys, typ=RECEIPT_TYPE)
    if not check.valid or check.payload is None:
        return ReceiptCheck(False, f"invalid: {check.reason}", kid=check.kid)
    payload = check.payload
    problem = _payload_problem(payload) or _digest_problem(payload, request_body, content)
    if problem:
        return ReceiptCheck(False, f"invalid: {problem}", payload, check.kid)
    checked = [
        name
        for name, given in (("request", request_body), ("content", content))
        if given is not None
    ]
    matched = f"; {' and '.join(checked)} digests match" if checked else ""
    line = (
        f"valid: receipt of trace {payload['trace_id']} ({payload.get('status')}), "
        f"{check.reason}{matched}"
    )
    return ReceiptCheck(True, line, payload, check.kid)


def _payload_problem(payload: Mapping[str, Any]) -> str | None:
    version = payload.get("receipt_version")
    if version != RECEIPT_VERSION:
        return f"unknown receipt_version {version!r} (this verifier reads {RECEIPT_VERSION})"
    if not isinstance(payload.get("trace_id"), str) or not isinstance(
        payload.get("digests"), Mapping
    ):
        return "the payload lacks trace_id or digests"
    return None


def _digest_problem(
    payload: Mapping[str, Any], request_body: bytes | None, content: bytes | None
) -> str | None:
    digests = payload["digests"]
    for name, given, field in (
        ("request body", request_body, "request_sha256"),
        ("content", content, "content_sha256"),
    ):
        if given is None:
            continue
        signed = digests.get(field)
        if signed is None:
            return f"the receipt carries no {name} digest to compare with"
        actual = sha256_hex(given)
        if actual != signed:
            return f"{name} digest differs: receipt has {signed}, the file hashes to {actual}"
    return None
