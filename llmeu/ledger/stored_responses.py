"""Stored Responses-API responses: what `store: true` keeps, for as long as the policy allows.

A stored response belongs to the key that created it (its tenant): reading,
continuing (`previous_response_id`), listing its input items and deleting it
all ask for the same key, and another key's id, a missing one and an expired
one look the same (None). Each row keeps the response object as returned,
its input items, and the conversation as chat messages (history, input and
output), so that a continued call needs no other row. Rows expire with the
policy's `store_content` (purged with the traces' content) and are erased
with their data subject's content.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmeu.ledger.database import Database


@dataclass(frozen=True, slots=True)
class StoredResponse:
    response_id: str
    key_id: str
    subject_sha256: str | None
    created_at: float
    expires_at: float
    response: str  # JSON: the response object as returned
    input_items: str  # JSON: the input items, each with its id
    conversation: str  # JSON: the chat messages a continuation starts from


_COLUMNS = (
    "response_id, key_id, subject_sha256, created_at, expires_at, response, input_items, "
    "conversation"
)


class StoredResponses:
    def __init__(self, db: Database):
        self.db = db

    async def save(self, stored: StoredResponse) -> None:
        await self.db.execute(
            f"INSERT INTO stored_responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                stored.response_id, stored.key_id, stored.subject_sha256, stored.created_at,
                stored.expires_at, stored.response, stored.input_items, stored.conversation,
            ),
        )  # fmt: skip

    async def get(self, response_id: str, key_id: str, now: float) -> StoredResponse | None:
        """The key's stored response, unless it expired; None otherwise."""
        rows = await self.db.fetch(
            f"SELECT {_COLUMNS} FROM stored_responses "
            "WHERE response_id = ? AND key_id = ? AND expires_at > ?",
            (response_id, key_id, now),
        )
        if not rows:
            return None
        row = rows[0]
        return StoredResponse(
            row["response_id"], row["key_id"], row["subject_sha256"], float(row["created_at"]),
            float(row["expires_at"]), row["response"], row["input_items"], row["conversation"],
        )  # fmt: skip

    async def delete(self, response_id: str, key_id: str, now: float) -> bool:
        return bool(
            await self.db.execute(
                "DELETE FROM stored_responses WHERE response_id = ? AND key_id = ? "
                "AND expires_at > ?",
                (response_id, key_id, now),
            )
        )
