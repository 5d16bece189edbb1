"""API keys as the ledger stores them (`api_keys`): what `Store`'s key methods do."""

from __future__ import annotations

import json
from typing import Any

from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.database import Database, Row

_KEY_COLUMNS = (
    "key_id, name, secret_hash, policy_id, is_admin, budget_eur, rpm_limit, tpm_limit, "
    "created_at, revoked_at, purpose, allow_mcp_servers, allow_tools, role, team_id, owner_subject"
)
_KEY_VALUES = ", ".join("?" for _ in _KEY_COLUMNS.split(", "))


async def insert_key(db: Database, key: ApiKey) -> None:
    await db.execute(
        f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES ({_KEY_VALUES})",
        _key_row(key),
    )


async def upsert_key(db: Database, key: ApiKey) -> None:
    await db.execute(
        f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES ({_KEY_VALUES})"
        + db.dialect.upsert("key_id", ("secret_hash", "policy_id", "is_admin", "revoked_at")),
        _key_row(key),
    )


async def get_key(db: Database, key_id: str) -> ApiKey | None:
    rows = await db.fetch(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,))
    return _key(rows[0]) if rows else None


async def list_keys(db: Database) -> list[ApiKey]:
    rows = await db.fetch(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at")
    return [_key(r) for r in rows]


async def revoke_key(db: Database, key_id: str, now: float) -> bool:
    changed = await db.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
        (now, key_id),
    )
    return changed > 0


def _key_row(key: ApiKey) -> tuple[Any, ...]:
    return (
        key.key_id, key.name, key.secret_hash, key.policy_id, int(key.is_admin), key.budget_eur,
        key.rpm_limit, key.tpm_limit, key.created_at, key.revoked_at, key.purpose,
        _patterns_text(key.allow_mcp_servers), _patterns_text(key.allow_tools), key.role,
        key.team_id, key.owner_subject,
    )  # fmt: skip


def _key(row: Row) -> ApiKey:
    return ApiKey(
        key_id=row["key_id"],
        name=row["name"],
        secret_hash=row["secret_hash"],
        policy_id=row["policy_id"],
        is_admin=bool(row["is_admin"]),
        budget_eur=row["budget_eur"],
        rpm_limit=row["rpm_limit"],
        tpm_limit=row["tpm_limit"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
        purpose=row["purpose"],
        allow_mcp_servers=_patterns(row["allow_mcp_servers"]),
        allow_tools=_patterns(row["allow_tools"]),
        role=row["role"],
        team_id=row["team_id"],
        owner_subject=row["owner_subject"],
    )


def _patterns_text(patterns: tuple[str, ...]) -> str | None:
    return json.dumps(list(patterns)) if patterns else None


def _patterns(text: str | None) -> tuple[str, ...]:
    return tuple(json.loads(text)) if text else ()
