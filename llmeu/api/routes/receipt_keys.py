"""Evidence anyone can verify: a call's signed receipt, and the keys that check it.

    GET /v1/platform/traces/{trace_id}/receipt   the receipt (tenant-isolated like the trace)
    GET /.well-known/llmeu/jwks.json             the public signing keys, no key needed

The receipt route answers `{"object": "trace.receipt", "trace_id", "kid", "receipt"}`;
`receipt` is the compact JWS, verifiable with `llmeu receipt verify` or any JOSE
library against the JWKS (docs/evidence.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmeu.api.http.asgi import Request
from llmeu.api.routes.platform import Platform, get_trace_view
from llmeu.api.services.receipt_issuer import Receipts
from llmeu.protocol.json_codec import encoder

_JWKS_HEADERS = [
    (b"content-type", b"application/jwk-set+json"),
    # Short: a rotation must reach verifiers soon; old keys stay listed regardless.
    (b"cache-control", b"public, max-age=300"),
]


@dataclass(frozen=True, slots=True)
class Evidence:
    platform: Platform
    receipts: Receipts


async def get_receipt(ev: Evidence, request: Request, trace_id: str) -> None:
    trace = await get_trace_view(ev.platform, request, trace_id)
    receipt = ev.receipts.of_view(trace)
    body = {
        "object": "trace.receipt",
        "trace_id": trace["id"],
        "kid": ev.receipts.ring.active.kid,
        "receipt": receipt,
    }
    await request.respond(200, encoder.encode(body))


async def get_jwks(ev: Evidence, request: Request) -> None:
    await request.respond(200, ev.receipts.jwks_body, _JWKS_HEADERS)
