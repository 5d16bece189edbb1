"""Evidence anyone can verify: a call's signed receipt, and the keys that check it.

    GET /v1/platform/traces/{trace_id}/receipt   the receipt (tenant-isolated like the trace)
    GET /.well-known/llmeu/jwks.json             the public signing keys, no key needed

The receipt route answers `{"object": "trace.receipt", "trace_id", "kid", "receipt"}`;
`receipt` is the compact JWS, verifiable with `llmeu receipt verify` or any JOSE
library against the JWKS (docs/evidence.md).
"""

from __future__ import annotations

from llmeu.api.http.asgi import Request
from llmeu.api.routes.caller import authorize, reply
from llmeu.api.services.evidence_service import Evidence

_JWKS_HEADERS = [
    (b"content-type", b"application/jwk-set+json"),
    # Short: a rotation must reach verifiers soon; old keys stay listed regardless.
    (b"cache-control", b"public, max-age=300"),
]


async def get_receipt(ev: Evidence, request: Request, trace_id: str) -> None:
    caller = await authorize(ev.platform, request)
    await reply(request, await ev.receipt(caller.viewer, trace_id))


async def get_jwks(ev: Evidence, request: Request) -> None:
    await request.respond(200, ev.jwks, _JWKS_HEADERS)
