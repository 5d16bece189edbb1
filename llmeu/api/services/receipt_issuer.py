"""Receipts and public keys as the gateway serves them (`llmeu.evidence.receipts` signs).

A receipt is made from the trace as the platform API shows it and the digests
the ledger keeps beside it, so the receipt a call returns at once (header or
final frame, when the request sets `llmeu: {"receipt": true}`) and the one
`GET /v1/platform/traces/{id}/receipt` returns later are the same bytes while
the signing key is the same.

The ring is replaced whole when the keys are read again (SIGHUP, a changed key
file): `use` swaps the ring and its JWKS body together, between two calls'
steps on the event loop, so a receipt is always signed by a key the JWKS
served at that moment lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llmeu.calls.record import TraceRecord
from llmeu.errors import InvalidRequest
from llmeu.evidence.receipts import FINAL_STATUSES, build_receipt
from llmeu.evidence.signing_keys import KeyRing
from llmeu.ledger.store import record_view
from llmeu.protocol.json_codec import encoder


class Receipts:
    def __init__(self, ring: KeyRing):
        self.ring = ring
        self.jwks_body = encoder.encode(ring.jwks())

    def use(self, ring: KeyRing) -> bool:
        """Sign with `ring` from now on; False when it is the ring already in use."""
        body = encoder.encode(ring.jwks())
        if ring.active.kid == self.ring.active.kid and body == self.jwks_body:
            return False
        self.ring, self.jwks_body = ring, body
        return True

    def of_view(self, trace: Mapping[str, Any]) -> str:
        """The receipt of a stored trace; InvalidRequest while the call is in progress."""
        if trace["status"] not in FINAL_STATUSES:
            raise InvalidRequest(
                f"trace {trace['id']} is {trace['status']}: a receipt attests how a call ended",
                param="trace_id",
                code="trace_not_final",
            )
        evidence = trace.get("evidence") or {}
        return build_receipt(
            trace,
            self.ring.active,
            policy_sha256=evidence.get("policy_sha256"),
            request_sha256=evidence.get("request_sha256"),
            content_sha256=evidence.get("content_sha256"),
        )

    def of_record(self, record: TraceRecord) -> str:
        """The receipt of a call that just ended, from its record."""
        return self.of_view(record_view(record))
