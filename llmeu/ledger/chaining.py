"""The hash chain in the ledger: every final trace row linked to the one before, in commit order.

`llmeu.evidence.chain` defines the links; this module stores them. Every
transaction that can make a row final (a finished call, calls found
`interrupted`) ends with `CHAIN_FINAL_ROWS`: it reads the one-row
`chain_head` — locked until commit on PostgreSQL (`SELECT … FOR UPDATE`),
SQLite's write transaction being exclusive already — then the final rows not
yet chained, oldest first, gives each its `chain_seq` and `chain_link` after
the head, and moves the head. Writers of every gateway process queue on that
row, so there is one chain, in commit order, without gaps: a database
sequence would leave a gap at every rolled-back transaction, and a gap means
"deleted" to the verifier.

A process that moved the head last need not read it again: it remembers the
head it wrote (`ChainTail`), reads the unchained ids first and moves the head
with `UPDATE … WHERE seq = ? AND link = ?` — which takes the same row lock on
PostgreSQL. When another process (or a rolled-back transaction) moved it since,
nothing is updated and the transaction goes the locked way above, from the head
read. The head's link names the whole chain before it, so a head that matches
is the head this process wrote, committed.

Picking up every unchained final row, rather than the rows this transaction
wrote, also chains final rows written before the chain existed (migration 3)
the first time anything is written after it.

Content (prompt, completion) is not chained, so purging or erasing it never
breaks the chain; a metadata purge (`llmeu.ledger.retention`) keeps the row,
its place and its link, and the verifier takes a purged row's link as given.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmeu.evidence.chain import CHAINED_COLUMNS, ChainLink, sign_checkpoint
from llmeu.evidence.signing_keys import SigningKey
from llmeu.ledger.database import Database, Dialect, Followup, Row, Statement

_SWEEP_LIMIT = 5000  # rows chained per transaction; the rest go with the next one
_CHAINED_SELECT = ", ".join(CHAINED_COLUMNS)
_SET_LINK = "UPDATE traces SET chain_seq = ?, chain_link = ? WHERE trace_id = ?"
_MOVE_HEAD = "UPDATE chain_head SET seq = ?, link = ?, trace_id = ? WHERE head_id = 1"
_HEAD = "SELECT seq, link, trace_id FROM chain_head WHERE head_id = 1"
_MOVE_HEAD_FROM = (
    "UPDATE chain_head SET seq = ?, link = ?, trace_id = ? "
    "WHERE head_id = 1 AND seq = ? AND link = ? RETURNING seq"
)
# Columns a verifier reads: the chained ones, the row's place, and whether its metadata
# was purged (then its link is taken as given).
VERIFY_COLUMNS = (*CHAINED_COLUMNS, "chain_seq", "chain_link", "metadata_purged_at")


_UNCHAINED_WHERE = (
    "FROM traces WHERE chain_seq IS NULL "
    "AND (status NOT IN ('in_progress', 'interrupted') "
    "OR (status = 'interrupted' AND finished_at <= ?)) "
    f"ORDER BY received_at, trace_id LIMIT {_SWEEP_LIMIT}"
)
_UNCHAINED_IDS = f"SELECT trace_id {_UNCHAINED_WHERE}"
_UNCHAINED = f"SELECT {_CHAINED_SELECT} {_UNCHAINED_WHERE}"


class ChainTail:
    """The chain head this process wrote last, as a guess of the head at its next write.

    Set inside the transaction that moves the head, before it commits: a guess that
    turns out wrong (rolled back, or moved by another process) only costs the locked
    read the head would have needed anyway."""

    __slots__ = ("head",)

    def __init__(self) -> None:
        self.head: ChainLink | None = None


def chain_final_rows(
    dialect: Dialect,
    settled_before: float,
    written: Mapping[str, Row] | None = None,
    tail: ChainTail | None = None,
) -> Followup:
    """The end of a transaction that may have made rows final: link them to the head.

    `written` holds the final rows this transaction wrote, as written (by trace id): the
    ids of the unchained final rows are read first, and when they are all among these —
    the usual case — their links are computed from them, sparing a read of every
    column. A row written again once final (a retried batch) is chained already, so
    never among those ids. Any other unchained row (a call found `interrupted`, a row
    written before the chain existed) sends the whole batch through a full read.

    With a `tail` that knows the head, and only rows of `written` to chain, the head is
    not read: it is moved on from the remembered one if it is still there.

    An `interrupted` row joins the chain once it was marked before `settled_before`:
    until then the call's own process, judged stopped while only slow, may still
    record how the call ended (`Store.write_traces` replaces the row).
    """
    known = written or {}
    full_read = ((_UNCHAINED, (settled_before,)),)
    ids_read = (_UNCHAINED_IDS, (settled_before,))

    def link(read: list[list[Row]]) -> list[Statement] | Followup:
        heads, ids = read
        if not ids:
            return []
        head = _head(heads)
        if all(row["trace_id"] in known for row in ids):
            return _link_rows(head, [known[row["trace_id"]] for row in ids], tail)
        return Followup(full_read, lambda rows: _link_rows(head, rows[0], tail))

    locked = Followup(reads=((_HEAD + dialect.lock_row, ()), ids_read), build=link)
    if tail is None or tail.head is None or not known:
        return locked
    remembered, guess = tail, tail.head

    def move_on(read: list[list[Row]]) -> list[Statement] | Followup:
        ids = read[0]
        if not ids:
            return []
        if not all(row["trace_id"] in known for row in ids):
            return locked
        links, head = _links(guess, [known[row["trace_id"]] for row in ids])
        moved = (_MOVE_HEAD_FROM, (head.seq, head.link, head.trace_id, guess.seq, guess.link))

        def moved_or_locked(read: list[list[Row]]) -> list[Statement] | Followup:
            if not read[0]:  # the head moved since this process wrote it
                return locked
            remembered.head = head
            return [(_SET_LINK, links)]

        return Followup(reads=(moved,), build=moved_or_locked)

    return Followup(reads=(ids_read,), build=move_on)


def _links(
    head: ChainLink, rows: Sequence[Mapping[str, Any]]
) -> tuple[list[tuple[int, str, Any]], ChainLink]:
    links = []
    for row in rows:
        head = head.next(row)
        links.append((head.seq, head.link, row["trace_id"]))
    return links, head


def _link_rows(
    head: ChainLink, rows: Sequence[Mapping[str, Any]], tail: ChainTail | None = None
) -> list[Statement]:
    if not rows:
        return []
    links, head = _links(head, rows)
    if tail is not None:
        tail.head = head
    return [(_SET_LINK, links), (_MOVE_HEAD, [(head.seq, head.link, head.trace_id)])]


def _head(rows: list[Row]) -> ChainLink:
    if not rows:
        raise RuntimeError("the ledger has no chain_head row: migration 3 did not run")
    row = rows[0]
    return ChainLink(int(row["seq"]), row["link"], row["trace_id"])


async def chain_head(db: Database) -> ChainLink:
    return _head(await db.fetch(_HEAD))


async def chain_pending(db: Database, settled_before: float) -> int:
    """Chain the final rows nobody chained yet: written before the chain existed, or
    `interrupted` rows that settled since the last write."""
    counts = await db.transaction([], chain_final_rows(db.dialect, settled_before))
    return counts[0] if counts else 0


async def chained_rows(db: Database) -> list[Row]:
    """Every row the chain should hold, in chain order: the chained rows, then final rows
    without a place (which the verifier reports). `interrupted` rows still settling
    (`chain_final_rows`) have no place yet and are not among them."""
    columns = ", ".join(VERIFY_COLUMNS)
    rows: list[Row] = []
    after = -(2**62)
    while True:
        page = await db.fetch(
            f"SELECT {columns} FROM traces WHERE chain_seq > ? ORDER BY chain_seq LIMIT 10000",
            (after,),
        )
        rows.extend(page)
        if len(page) < 10000:
            break
        after = page[-1]["chain_seq"]
    rows.extend(
        await db.fetch(
            f"SELECT {columns} FROM traces WHERE chain_seq IS NULL "
            "AND status NOT IN ('in_progress', 'interrupted') ORDER BY received_at, trace_id"
        )
    )
    return rows


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """When to sign the chain's head: after `every_traces` new rows, or `every_seconds` after
    the last checkpoint if the chain moved; signed tokens are also copied into `export_dir`."""

    every_traces: int = 1000
    every_seconds: float = 300.0
    export_dir: Path | None = None


class Checkpoints:
    """Signed checkpoints of the chain head, in `chain_checkpoints` and an export directory."""

    def __init__(self, db: Database, key: SigningKey, policy: CheckpointPolicy):
        self.db = db
        self.key = key
        self.policy = policy

    async def tokens(self) -> list[str]:
        rows = await self.db.fetch("SELECT token FROM chain_checkpoints ORDER BY chain_seq")
        return [r["token"] for r in rows]

    async def due(self, now: float) -> bool:
        head = await chain_head(self.db)
        last = await self.db.fetch(
            "SELECT chain_seq, created_at FROM chain_checkpoints ORDER BY chain_seq DESC LIMIT 1"
        )
        last_seq, last_at = (last[0]["chain_seq"], last[0]["created_at"]) if last else (0, 0.0)
        if head.seq <= last_seq:
            return False
        return (
            head.seq - last_seq >= self.policy.every_traces
            or now - last_at >= self.policy.every_seconds
        )

    async def make(self, now: float | None = None) -> str | None:
        """Sign the current head; None when a checkpoint of it exists already (another
        process made it). Written to the export directory by the process that stored it."""
        created_at = time.time() if now is None else now
        head = await chain_head(self.db)
        if head.seq == 0:
            return None
        token = sign_checkpoint(head, self.key, created_at=created_at)
        stored = await self.db.execute(
            "INSERT INTO chain_checkpoints (chain_seq, trace_id, created_at, token) "
            "VALUES (?, ?, ?, ?)" + self.db.dialect.keep_existing("chain_seq"),
            (head.seq, head.trace_id, created_at, token),
        )
        if not stored:
            return None
        if self.policy.export_dir is not None:
            export_checkpoint(self.policy.export_dir, head.seq, token)
        return token


def export_checkpoint(directory: Path, seq: int, token: str) -> Path:
    """Write one checkpoint as its own file, never replacing one: the directory only grows."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"checkpoint-{seq:012d}.jws"
    with path.open("x", encoding="ascii") as file:
        file.write(token + "\n")
    return path


def read_checkpoint_files(path: Path) -> list[str]:
    """Checkpoint tokens from a directory of exported files, or from one file (one a line)."""
    files = sorted(path.glob("*.jws")) if path.is_dir() else [path]
    return [
        line.strip()
        for file in files
        for line in file.read_text(encoding="ascii").splitlines()
        if line.strip()
    ]
