"""A call's signed receipt, for the key that may read its trace, and the keys that check it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmeu.api.services.platform_service import Platform, Viewer
from llmeu.api.services.receipt_issuer import Receipts


@dataclass(frozen=True, slots=True)
class Evidence:
    platform: Platform
    receipts: Receipts

    async def receipt(self, caller: Viewer, trace_id: str) -> dict[str, Any]:
        """`{"object": "trace.receipt", "trace_id", "kid", "receipt"}`: the compact JWS of the
        trace the caller may see (tenant-isolated like the trace itself)."""
        trace = await self.platform.trace(caller, trace_id)
        return {
            "object": "trace.receipt",
            "trace_id": trace["id"],
            "kid": self.receipts.ring.active.kid,
            "receipt": self.receipts.of_view(trace),
        }

    @property
    def jwks(self) -> bytes:
        return self.receipts.jwks_body
