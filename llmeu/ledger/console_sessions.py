"""Console sign-ins as the ledger stores them: logins under way, and sessions.

A login under way is keyed by its `state` and taken (read and deleted) once:
a replayed callback finds nothing. A session is keyed by the SHA-256 of the
opaque id its cookie carries, so a copy of the database holds no session a
browser could present. Both live in the ledger database, so every gateway
process (several workers, several machines on PostgreSQL) knows every session,
and a restart signs nobody out.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from llmeu.ledger.database import Database


@dataclass(frozen=True, slots=True)
class PendingLogin:
    state: str
    nonce: str
    verifier: str
    redirect_url: str
    created_at: float


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    session_hash: str
    subject: str
    name: str | None
    roles: tuple[str, ...]
    csrf_token: str
    id_token: str
    created_at: float
    last_seen_at: float


def session_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


async def insert_login(db: Database, login: PendingLogin) -> None:
    await db.execute(
        "INSERT INTO console_logins (state, nonce, verifier, redirect_url, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (login.state, login.nonce, login.verifier, login.redirect_url, login.created_at),
    )


async def pending_logins(db: Database) -> tuple[int, float | None]:
    """How many logins are under way, and when the oldest was stored (None: none is)."""
    rows = await db.fetch("SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM console_logins")
    oldest = rows[0]["oldest"]
    return int(rows[0]["n"]), None if oldest is None else float(oldest)


async def take_login(db: Database, state: str) -> PendingLogin | None:
    """The login `state` names, deleted as it is read: only the caller whose delete took
    the row gets it, so two callbacks with one `state` cannot both sign in."""
    rows = await db.fetch(
        "SELECT state, nonce, verifier, redirect_url, created_at FROM console_logins "
        "WHERE state = ?",
        (state,),
    )
    if not rows or await db.execute("DELETE FROM console_logins WHERE state = ?", (state,)) != 1:
        return None
    return PendingLogin(**rows[0])


async def insert_session(db: Database, session: ConsoleSession) -> None:
    await db.execute(
        "INSERT INTO console_sessions (session_hash, subject, name, roles, csrf_token, "
        "id_token, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (session.session_hash, session.subject, session.name, json.dumps(list(session.roles)),
         session.csrf_token, session.id_token, session.created_at, session.last_seen_at),
    )  # fmt: skip


async def get_session(db: Database, hashed: str) -> ConsoleSession | None:
    rows = await db.fetch(
        "SELECT session_hash, subject, name, roles, csrf_token, id_token, created_at, "
        "last_seen_at FROM console_sessions WHERE session_hash = ?",
        (hashed,),
    )
    if not rows:
        return None
    row = rows[0]
    return ConsoleSession(**{**row, "roles": tuple(json.loads(row["roles"]))})


async def touch_session(db: Database, hashed: str, now: float) -> None:
    await db.execute(
        "UPDATE console_sessions SET last_seen_at = ? WHERE session_hash = ?", (now, hashed)
    )


async def delete_session(db: Database, hashed: str) -> bool:
    return await db.execute("DELETE FROM console_sessions WHERE session_hash = ?", (hashed,)) > 0


async def delete_sessions_of(db: Database, subject: str) -> int:
    """End every session of the user `subject`: how many there were."""
    return await db.execute("DELETE FROM console_sessions WHERE subject = ?", (subject,))


async def purge_expired(
    db: Database, *, logins_before: float, idle_before: float, created_before: float
) -> None:
    """Forget logins never finished and sessions past either timeout."""
    await db.execute("DELETE FROM console_logins WHERE created_at < ?", (logins_before,))
    await db.execute(
        "DELETE FROM console_sessions WHERE last_seen_at < ? OR created_at < ?",
        (idle_before, created_before),
    )
