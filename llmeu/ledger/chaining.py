"""The hash chain in the ledger: every final trace row linked to the one before, in commit order.

`llmeu.evidence.chain` defines the links; this module stores them. The chain's
head is its last row: the highest `chain_seq` (the unique index
`traces_chain_seq` finds it), so a commit writes no head row besides its own
rows. Two ways to link a transaction's final rows:

- **Ahead** (`link_ahead`), the usual case: a process remembers the head it
  wrote last (`ChainTail`), computes the links of its new final rows from it
  and writes them in the rows' own upsert; one read before commit
  (`_AHEAD_CHECK`; on PostgreSQL part of the same statement, which then fails
  as a whole) confirms that the remembered head is a committed row, that
  every row of the batch was stored at its place (a retried batch's rows
  that were final already are not), and that no other final row waits for a
  place. Otherwise the transaction rolls back (`ChainMoved`, `WriteConflict`)
  and goes the locked way. Another writer that took the same places first is
  refused by the unique index (`WriteConflict`), so there is never a second
  row at one place, and never a gap: a row's place follows a committed one.
- **Locked** (`chain_final_rows`): every transaction that can make rows final
  without knowing the head (calls found `interrupted`, a remembered head that
  moved) reads the head and the unchained final rows, oldest first, and gives
  each its `chain_seq` and `chain_link`. A database sequence would not do: it
  would leave a gap at every rolled-back transaction, and a gap means
  "deleted" to the verifier.

On PostgreSQL every writer of the chain, either way, first takes one
transaction-scoped advisory lock (`Dialect.chain_lock`; linked ahead, in the
upsert's first value: `llmeu_chain_lock(trace_id)`), so the writers of all
processes queue on it: a locked writer reads the head in a statement of its
own once the lock is its, which sees every commit before, and no writer can
take places meanwhile. The lock is in memory: no row is written for it. SQLite's
write transaction is exclusive already. (The one-row `chain_head` table of
migration 3 is no longer read or written.)

No row enters the chain unmarked that the gateway did not write: a final row
without a place that the linking transaction did not write, and that the
gateway did not admit when it made it, is chained with `chain_suspect` set
(`llmeu.ledger.admission`).

Content (prompt, completion) is not chained, so purging or erasing it never
breaks the chain; a metadata purge (`llmeu.ledger.retention`) keeps the row,
its place, its link and its metadata's digest (`metadata_sha256`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmeu.errors import DatabaseError
from llmeu.evidence.chain import (
    CHAIN_VERSION,
    CHAINED_COLUMNS,
    GENESIS,
    VERSION_1_COLUMNS,
    ChainLink,
    link_row,
    sign_checkpoint,
)
from llmeu.evidence.signing_keys import SigningKey
from llmeu.ledger.admission import ADMITTED, mark_suspects
from llmeu.ledger.database import Database, Dialect, Followup, Params, Reads, Row, Statement

_SWEEP_LIMIT = 5000  # rows chained per transaction; the rest go with the next one
AHEAD_LIMIT = 64  # rows linked ahead in one transaction; a larger batch goes the locked way
_CHAINED_SELECT = ", ".join(CHAINED_COLUMNS)
LINK_COLUMNS = ("chain_seq", "chain_link", "chain_version", "metadata_sha256")
"""What a final row stores of its place in the chain, besides its columns."""
_SET_LINK = (
    "UPDATE traces SET chain_seq = ?, chain_link = ?, chain_version = ?, metadata_sha256 = ?, "
    "chain_suspect = ? WHERE trace_id = ?"
)
_HEAD = (
    "SELECT chain_seq AS seq, chain_link AS link, trace_id FROM traces "
    "WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1"
)
# Columns a verifier reads: the chained ones of either version, the row's place, and
# whether its metadata was purged (`llmeu.evidence.chained_rows`).
VERIFY_COLUMNS = (
    *dict.fromkeys((*CHAINED_COLUMNS, *VERSION_1_COLUMNS)),
    *LINK_COLUMNS,
    "metadata_purged_at",
)

_FINAL_UNCHAINED = (
    "FROM traces WHERE chain_seq IS NULL "
    "AND (status NOT IN ('in_progress', 'interrupted') "
    "OR (status = 'interrupted' AND finished_at <= ?)) "
)
_UNCHAINED_WHERE = f"{_FINAL_UNCHAINED}ORDER BY received_at, trace_id LIMIT {_SWEEP_LIMIT}"
_UNCHAINED_IDS = f"SELECT trace_id {_UNCHAINED_WHERE}"
_UNCHAINED = f"SELECT {_CHAINED_SELECT}, {ADMITTED} {_UNCHAINED_WHERE}"
_AFTER_AND_WAITING = (
    "(SELECT COUNT(*) FROM traces WHERE chain_seq = ? AND chain_link = ?) AS after, "
    f"(SELECT COUNT(*) FROM (SELECT 1 {_FINAL_UNCHAINED}LIMIT 1) AS waiting) AS waiting"
)
# The rows at the places after the remembered head must be the batch's own, with the links
# computed for them: a retried batch's row that was final already keeps its earlier place,
# and another writer's row may sit at the place computed for it.
_AHEAD_PLACED = (
    "SELECT (SELECT COUNT(*) FROM traces WHERE chain_seq > ? AND chain_seq <= ? "
    "AND trace_id IN ({marks}) AND chain_link IN ({marks})) AS placed, "
)


class ChainMoved(DatabaseError):
    """Rows linked ahead did not land where they were linked: the transaction rolls back
    and its rows go the locked way. Never leaves `Store.write_traces`."""


class ChainTail:
    """The chain head this process wrote last, as a guess of the head at its next write.

    Set inside the transaction that moves the head, before it commits: a guess that
    turns out wrong (rolled back, or moved on by another process) only costs a
    rolled-back attempt and the locked way."""

    __slots__ = ("head",)

    def __init__(self) -> None:
        self.head: ChainLink | None = None


@dataclass(frozen=True, slots=True)
class Ahead:
    """Final rows linked ahead from a remembered head: `links[i]` is what the i-th row stores
    of its place (`LINK_COLUMNS`); `check` ends the transaction that writes them, or
    `statement` writes and checks them at once."""

    before: ChainLink
    head: ChainLink
    links: list[tuple[int, str, int, str]]
    trace_ids: list[str]
    tail: ChainTail

    def check(self, settled_before: float) -> Followup:
        """The read that confirms, before commit, that the rows (written by a statement
        before it) landed where they were linked."""
        before = self.before
        n = len(self.links)
        marks = ", ".join("?" * n)
        read = (
            _AHEAD_PLACED.format(marks=marks) + _AFTER_AND_WAITING,
            (
                before.seq, self.head.seq, *self.trace_ids, *(place[1] for place in self.links),
                before.seq, before.link, settled_before,
            ),
        )  # fmt: skip

        def landed(read: list[list[Row]]) -> list[Statement]:
            found = read[0][0]
            placed = int(found["placed"]) == n
            after_head = before.seq == 0 or int(found["after"]) == 1
            if not (placed and after_head) or int(found["waiting"]):
                self.tail.head = None
                raise ChainMoved(f"the chain head is not {before.seq} any more, or a row was final")
            self.tail.head = self.head
            return []

        return Followup((read,), landed)

    def statement(
        self,
        settled_before: float,
        write: tuple[str, Params],
        before: tuple[str, Params] | None = None,
    ) -> tuple[str, Params]:
        """The rows' write (an INSERT of them) and its check as one statement, where the
        database runs a write inside a read (`Dialect.cte_writes`): the check fails the
        statement (`llmeu_chain_landed`, migration 9), so nothing of it commits unless
        the rows landed right after the remembered head and no other final row waits.
        `before`: another write (of another table) that is part of the same statement."""
        sql, params = write
        head = self.before
        after = " AND EXISTS (SELECT 1 FROM traces WHERE chain_seq = ? AND chain_link = ?)"
        if head.seq == 0:
            after = ""
        also, also_params = ("", ()) if before is None else (f"also AS ({before[0]}), ", before[1])
        return (
            f"WITH {also}written AS ({sql} RETURNING 1) SELECT llmeu_chain_landed("
            f"(SELECT COUNT(*) FROM written) = ?{after} "
            f"AND NOT EXISTS (SELECT 1 {_FINAL_UNCHAINED}LIMIT 1)) AS landed",
            (
                *also_params,
                *params,
                len(self.links),
                *(() if head.seq == 0 else (head.seq, head.link)),
                settled_before,
            ),
        )


def link_ahead(rows: Sequence[Mapping[str, Any]], tail: ChainTail) -> Ahead | None:
    """Links for `rows` (final rows, one per trace, in the order to chain them) from the
    head `tail` remembers; None when it remembers none, or the batch is large (then the
    locked way costs little per row)."""
    before = tail.head
    if before is None or not rows or len(rows) > AHEAD_LIMIT:
        return None
    links, head = _links(before, rows)
    return Ahead(before, head, [place[:4] for place in links], [place[5] for place in links], tail)


def chain_final_rows(
    dialect: Dialect,
    settled_before: float,
    written: Mapping[str, Row] | None = None,
    tail: ChainTail | None = None,
) -> Followup:
    """The end of a transaction that may have made rows final: link them to the head, the
    locked way.

    `written` holds the final rows this transaction wrote, as written (by trace id): the
    ids of the unchained final rows are read first, and when they are all among these —
    the usual case — their links are computed from them, sparing a read of every
    column. A row written again once final (a retried batch) is chained already, so
    never among those ids. Any other unchained row (a call found `interrupted`, a row
    written before the chain existed) sends the whole batch through a full read, and
    is marked `chain_suspect` unless the gateway admitted it (`chain_admitted`).

    An `interrupted` row joins the chain once it was marked before `settled_before`:
    until then the call's own process, judged stopped while only slow, may still
    record how the call ended (`Store.write_traces` replaces the row).
    """
    known = written or {}
    full_read = ((_UNCHAINED, (settled_before,)),)
    reads: list[tuple[str, tuple[Any, ...]]] = [(_HEAD, ()), (_UNCHAINED_IDS, (settled_before,))]
    if dialect.chain_lock:
        reads.insert(0, (dialect.chain_lock, ()))

    def link(read: list[list[Row]]) -> list[Statement] | Followup:
        heads, ids = read[-2:]
        if not ids:
            return []
        head = _head(heads)
        if all(row["trace_id"] in known for row in ids):
            return _link_rows(head, [known[row["trace_id"]] for row in ids], tail)
        return Followup(
            full_read, lambda rows: _link_rows(head, mark_suspects(rows[0], known), tail)
        )

    return Followup(reads=reads, build=link)


Place = tuple[int, str, int, str, int | None, str]
"""What `_SET_LINK` writes of a row: chain_seq, chain_link, chain_version, metadata_sha256,
chain_suspect, and the row's trace id."""


def _links(head: ChainLink, rows: Sequence[Mapping[str, Any]]) -> tuple[list[Place], ChainLink]:
    links: list[Place] = []
    for row in rows:
        head, digest = link_row(head, row)
        suspect = row.get("chain_suspect")
        links.append((head.seq, head.link, CHAIN_VERSION, digest, suspect, row["trace_id"]))
    return links, head


def _link_rows(
    head: ChainLink, rows: Sequence[Mapping[str, Any]], tail: ChainTail | None = None
) -> list[Statement]:
    if not rows:
        return []
    links, head = _links(head, rows)
    if tail is not None:
        tail.head = head
    return [(_SET_LINK, links)]


def _head(rows: list[Row]) -> ChainLink:
    if not rows:
        return GENESIS
    row = rows[0]
    return ChainLink(int(row["seq"]), row["link"], row["trace_id"])


async def chain_head(db: Reads) -> ChainLink:
    return _head(await db.fetch(_HEAD))


async def chain_pending(db: Database, settled_before: float) -> int:
    """Chain the final rows nobody chained yet: `interrupted` rows that settled since the
    last write, rows written before the chain existed, and rows nobody admitted (suspect)."""
    counts = await db.transaction([], chain_final_rows(db.dialect, settled_before))
    return counts[0] if counts else 0


async def chained_rows(db: Reads) -> list[Row]:
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
