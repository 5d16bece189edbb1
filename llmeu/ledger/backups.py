"""Ledger backups that check themselves, and restores that refuse to clobber a ledger.

A backup is written next to its destination under a temporary name, checked,
and only then renamed into place: a failed backup leaves no file that looks
like one. The check reads the copy itself — its schema version, its row
counts, its hash chain walked end to end (`llmeu.evidence.audit`, without the
checkpoint signatures, whose keys the copy does not hold) and the newest
checkpoint stored in it — and `Contents` says what it found.

SQLite (this module): the online backup API (`sqlite3.Connection.backup`)
copies the whole file in one step inside one read transaction, so a gateway
writing in WAL mode goes on writing and the copy is the ledger as of one
commit. The copy is switched to a rollback journal: one self-contained file.
A restore copies a backup the same way into a temporary file beside the
ledger, checks it, removes the old ledger's `-wal`/`-shm` files (a stale WAL
replayed onto another database would corrupt it) and renames it into place.

PostgreSQL: `llmeu.ledger.pg_backups` (`pg_dump`/`pg_restore`).

What no backup can hold is the proof of what came after it: the signed
checkpoints exported outside the database (`--audit-checkpoint-dir`) name the
chain position each one vouches for, and `llmeu audit verify --checkpoints`
turns a restored ledger that ends earlier into the exact range of positions
missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from llmeu.errors import BackupFailed, DatabaseError
from llmeu.evidence.admin_events import ADMIN_ROUTE
from llmeu.evidence.audit import ChainReport, verify_chain
from llmeu.evidence.chain import ChainLink
from llmeu.ledger.chaining import chain_head, chained_rows
from llmeu.ledger.database import Params, Reads, Row
from llmeu.ledger.migrations import MIGRATIONS

SQLITE_HEADER = b"SQLite format 3\x00"
PG_DUMP_HEADER = b"PGDMP"
LIVE_WINDOW_SECONDS = 15.0
"""A gateway whose heartbeat is this recent is taken as running (3 times the default 5 s)."""


@dataclass(frozen=True, slots=True)
class Contents:
    """What a ledger, or a copy of it, holds: read from the copy itself."""

    schema_version: int
    traces: int  # calls: the admin events' rows are counted apart
    admin_events: int
    head: ChainLink
    checkpoint_seq: int | None
    checkpoint_at: float | None
    chain: ChainReport

    def lines(self) -> list[str]:
        head = (
            f"chain head at position {self.head.seq} ({self.head.trace_id})"
            if self.head.seq
            else "no chained trace"
        )
        checkpoint = (
            "no signed checkpoint stored"
            if self.checkpoint_seq is None or self.checkpoint_at is None
            else f"newest signed checkpoint: position {self.checkpoint_seq}, signed "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(self.checkpoint_at))}"
        )
        chain = "hash chain intact" if self.chain.ok else "hash chain DAMAGED:"
        rows = f"{self.traces} traces"
        if self.admin_events:
            plural = "s" if self.admin_events != 1 else ""
            rows += f" and {self.admin_events} admin event{plural}"
        return [
            f"schema version {self.schema_version}, {rows}, {head}",
            checkpoint,
            chain,
            *(f"  {line}" for line in (self.chain.lines() if not self.chain.ok else [])),
        ]

    def as_dict(self) -> dict[str, object]:
        return {
            "schema_version": self.schema_version,
            "traces": self.traces,
            "admin_events": self.admin_events,
            "chain_head": {"position": self.head.seq, "trace_id": self.head.trace_id},
            "checkpoint": None
            if self.checkpoint_seq is None
            else {"position": self.checkpoint_seq, "signed_at": self.checkpoint_at},
            "chain_intact": self.chain.ok,
            "findings": [] if self.chain.ok else self.chain.lines(),
        }


async def read_contents(reads: Reads, where: object) -> Contents:
    """Raises BackupFailed when the database (`where`, for the message) holds no ledger."""
    try:
        versions = await reads.fetch("SELECT MAX(version) AS version FROM schema_migrations")
    except DatabaseError as error:  # no such table: not a ledger
        raise BackupFailed(f"{where} holds no ledger ({error})") from None
    if not versions or versions[0]["version"] is None:
        raise BackupFailed(f"{where} holds no ledger (no migration was applied)")
    traces = await reads.fetch(
        f"SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN route = '{ADMIN_ROUTE}' THEN 1 END), 0) "
        "AS admin FROM traces"
    )
    newest = await reads.fetch(
        "SELECT chain_seq, created_at FROM chain_checkpoints ORDER BY chain_seq DESC LIMIT 1"
    )
    rows = await chained_rows(reads)
    return Contents(
        schema_version=int(versions[0]["version"]),
        traces=int(traces[0]["n"]) - int(traces[0]["admin"]),
        admin_events=int(traces[0]["admin"]),
        head=await chain_head(reads),
        checkpoint_seq=int(newest[0]["chain_seq"]) if newest else None,
        checkpoint_at=float(newest[0]["created_at"]) if newest else None,
        chain=verify_chain(rows, now=time.time()),
    )


async def occupant(reads: Reads, now: float) -> str | None:
    """What a restore would replace: None (no ledger), "empty" (a schema without traces,
    checkpoints or keys), "non-empty" (refused without `--force`) or "running" (a gateway
    has a recent heartbeat in it: always refused)."""
    try:
        await reads.fetch("SELECT version FROM schema_migrations LIMIT 1")
    except DatabaseError:  # no ledger schema at all
        return None
    live = await reads.fetch(
        "SELECT COUNT(*) AS n FROM instances WHERE heartbeat_at >= ?", (now - LIVE_WINDOW_SECONDS,)
    )
    if int(live[0]["n"]):
        return "running"
    held = await reads.fetch(
        "SELECT (SELECT COUNT(*) FROM traces) + (SELECT COUNT(*) FROM chain_checkpoints) "
        "+ (SELECT COUNT(*) FROM api_keys) AS n"
    )
    return "non-empty" if int(held[0]["n"]) else "empty"


class SqliteReads:
    """`Reads` over one plain sqlite3 connection (a copy being checked)."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]:
        try:
            cursor = self._conn.execute(sql, tuple(params))
        except sqlite3.Error as error:
            raise DatabaseError(str(error)) from error
        names = [column[0] for column in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def backup_sqlite(source: Path, target: Path) -> Contents:
    """Copy the ledger at `source` to `target` (replaced only once the copy checks out).
    Blocking, like the rest of the SQLite side: it runs in a command, not in a gateway."""
    if not source.is_file():
        raise BackupFailed(f"no SQLite ledger at {source}")
    if target.resolve() == source.resolve():
        raise BackupFailed(f"{target} is the ledger itself: back it up to another file")
    with partial_file(target) as partial:
        with (
            contextlib.closing(_connect(source)) as ledger,
            contextlib.closing(_connect(partial)) as copy,
        ):
            _copy(ledger, copy, what=f"back up {source}", to=target)
            copy.execute("PRAGMA journal_mode = DELETE")
            contents = _checked(copy, source)
        os.replace(partial, target)
    return contents


def restore_sqlite(source: Path, target: Path, *, force: bool) -> Contents:
    """Replace the ledger at `target` with the backup at `source`."""
    expect_header(source, SQLITE_HEADER, "a SQLite ledger backup")
    if target.exists():
        with contextlib.closing(_connect(target)) as current:
            found = asyncio.run(occupant(SqliteReads(current), time.time()))
        refuse_occupied(found, target, force)
    target.parent.mkdir(parents=True, exist_ok=True)
    with partial_file(target) as partial:
        with (
            contextlib.closing(_connect(source, read_only=True)) as backup,
            contextlib.closing(_connect(partial)) as copy,
        ):
            _copy(backup, copy, what=f"read {source}", to=target)
            contents = _checked(copy, source)
            refuse_newer(contents.schema_version, source)
        for stale in (Path(f"{target}-wal"), Path(f"{target}-shm")):
            stale.unlink(missing_ok=True)
        os.replace(partial, target)
    return contents


def refuse_newer(version: int, source: object) -> None:
    """A backup of a newer release's schema: this release would serve it without the
    columns and rules it does not know (and `llmeu serve` would refuse it); restore it with
    that release, or this one's own backups. An older schema is migrated at the next start."""
    known = MIGRATIONS[-1][0]
    if version > known:
        raise BackupFailed(
            f"{source} holds schema version {version}, newer than this release's {known}: "
            "restore it with the release that wrote it (or a newer one); nothing was replaced"
        )


def refuse_occupied(why: str | None, where: object, force: bool) -> None:
    if why == "running":
        raise BackupFailed(
            f"a gateway is running on {where} (a heartbeat in the last "
            f"{LIVE_WINDOW_SECONDS:.0f} s): stop every gateway process on it, then restore"
        )
    if why == "non-empty" and not force:
        raise BackupFailed(
            f"{where} holds a ledger with traces, checkpoints or keys: restoring would replace "
            "it; pass --force to replace it (keep a backup of it first)"
        )


def expect_header(path: Path, header: bytes, what: str) -> None:
    try:
        with path.open("rb") as file:
            start = file.read(len(SQLITE_HEADER))
    except OSError as error:
        raise BackupFailed(f"cannot read {path}: {error.strerror or error}") from None
    if start.startswith(header):
        return
    if start.startswith(PG_DUMP_HEADER):
        found = "a PostgreSQL backup (pg_dump): restore it with --database-url postgresql://…"
    elif start.startswith(SQLITE_HEADER):
        found = "a SQLite ledger: restore it into a SQLite ledger (--data-dir or sqlite:///…)"
    else:
        found = "neither a SQLite file nor a pg_dump archive (corrupt, or another kind of file)"
    raise BackupFailed(f"{path} is not {what}: it is {found}")


def _checked(copy: sqlite3.Connection, named: Path) -> Contents:
    try:
        problems = [row[0] for row in copy.execute("PRAGMA integrity_check").fetchall()]
        if problems != ["ok"]:
            raise BackupFailed(f"{named} is damaged: {'; '.join(problems[:5])}")
        return asyncio.run(read_contents(SqliteReads(copy), named))
    except sqlite3.Error as error:
        raise BackupFailed(f"{named} cannot be read as a ledger: {error}") from None


def _copy(source: sqlite3.Connection, target: sqlite3.Connection, *, what: str, to: Path) -> None:
    """One step (`pages=-1`): the whole file inside one read transaction of the source."""
    try:
        source.backup(target)
    except sqlite3.DatabaseError as error:
        raise BackupFailed(f"cannot {what} to {to}: {error}") from None


def _connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    uri = f"file:{quote(str(path))}" + ("?mode=ro" if read_only else "")
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=10.0)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except sqlite3.Error as error:
        raise BackupFailed(f"cannot open {path}: {error}") from None
    return conn


@contextlib.contextmanager
def partial_file(target: Path) -> Iterator[Path]:
    """A temporary file beside `target`, removed unless it was renamed into place."""
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        probe = partial.open("xb")
    except OSError as error:
        raise BackupFailed(f"cannot write {target}: {error.strerror or error}") from None
    probe.close()
    try:
        yield partial
    finally:
        for leftover in (partial, Path(f"{partial}-journal")):
            leftover.unlink(missing_ok=True)
