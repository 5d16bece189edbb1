"""The Responses API's stored responses, as the routes use them: kept, read, continued,
deleted — each its key's alone (another key's id is as unknown as a missing one).

What is kept and for how long is the effective policy's `store_content`, decided by
the route; the rows themselves are `llmeu.ledger.stored_responses`'.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from llmeu.calls.request import Message
from llmeu.ledger.database import Database
from llmeu.ledger.retention import subject_digest
from llmeu.ledger.stored_responses import StoredResponse, StoredResponses
from llmeu.protocol.json_codec import encoder
from llmeu.routing.policy import Policy

_conversation_decoder = msgspec.json.Decoder(list[Message])


@dataclass(frozen=True, slots=True)
class Kept:
    """A response as it was answered, and its input items (each with its id)."""

    response_id: str
    response: bytes
    input_items: list[dict[str, Any]]


def keeps_nothing(policy: Policy | None) -> str | None:
    """Why a policy stores no response, in words a client can act on; None when it does."""
    if policy is None or policy.store_content.seconds > 0:
        return None
    return (
        f"policy {policy.policy_id} keeps no content (store_content {policy.store_content}), "
        "so no response is stored under it; a key under a policy with a longer store_content "
        "keeps them"
    )


class ResponseStore:
    __slots__ = ("_rows",)

    def __init__(self, db: Database):
        self._rows = StoredResponses(db)

    async def get(self, response_id: str, key_id: str) -> Kept | None:
        found = await self._rows.get(response_id, key_id, time.time())
        if found is None:
            return None
        return Kept(found.response_id, found.response.encode(), json.loads(found.input_items))

    async def conversation(self, response_id: str, key_id: str) -> list[Message] | None:
        """The chat messages a continuation of the response starts from."""
        found = await self._rows.get(response_id, key_id, time.time())
        return None if found is None else _conversation_decoder.decode(found.conversation)

    async def keep(
        self,
        *,
        response_id: str,
        response: object,
        key_id: str,
        subject: str | None,
        seconds: float,
        input_items: list[dict[str, Any]],
        conversation: Sequence[Message],
    ) -> None:
        now = time.time()
        await self._rows.save(
            StoredResponse(
                response_id=response_id,
                key_id=key_id,
                subject_sha256=subject_digest(subject) if subject else None,
                created_at=now,
                expires_at=now + seconds,
                response=encoder.encode(response).decode(),
                input_items=json.dumps(input_items),
                conversation=encoder.encode(conversation).decode(),
            )
        )

    async def delete(self, response_id: str, key_id: str) -> bool:
        return await self._rows.delete(response_id, key_id, time.time())
