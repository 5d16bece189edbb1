"""The hash chain in the ledger, on SQLite and on PostgreSQL: written with every final trace,
kept intact by purges and erasure, and `llmeu audit verify` naming each kind of tampering."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from llmeu.calls.record import CallStatus
from llmeu.evidence.chain import CHAIN_VERSION, CHAINED_COLUMNS, GENESIS, ChainLink, link_row
from llmeu.evidence.signing_keys import KeyRing, SigningKey
from llmeu.ledger.chaining import (
    CheckpointPolicy,
    Checkpoints,
    chain_head,
    chain_pending,
    chained_rows,
)
from llmeu.ledger.database import Database
from llmeu.ledger.retention import Retention, subject_digest
from llmeu.ledger.store import Store
from llmeu.ledger.trace_writes import open_row
from tests.ledger.conftest import trace, write
from tests.support.processes import REPO

KEY = SigningKey.generate()


def audit_verify(
    database_url: str, tmp_path: Path, checkpoints: Path | None = None
) -> tuple[int, str]:
    """`llmeu audit verify` as a real process; (exit status, output)."""
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(KeyRing(KEY).jwks()))
    command = [sys.executable, "-m", "llmeu.cli.main", "audit", "verify",
               "--database-url", database_url, "--jwks", str(jwks)]  # fmt: skip
    if checkpoints is not None:
        command += ["--checkpoints", str(checkpoints)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=60)
    return done.returncode, done.stdout + done.stderr


async def chain_ids(db: Database) -> list[tuple[int, str]]:
    rows = await db.fetch("SELECT chain_seq, trace_id FROM traces WHERE chain_seq IS NOT NULL "
                          "ORDER BY chain_seq")  # fmt: skip
    return [(r["chain_seq"], r["trace_id"]) for r in rows]


async def written(store: Store, count: int) -> list[str]:
    """`count` final traces in `count` transactions (commit order = chain order)."""
    ids = []
    for _ in range(count):
        record = trace(prompt='"hi"', completion="hello", content_expires_at=500.0,
                       subject_sha256="subject-a", metadata_expires_at=600.0)  # fmt: skip
        await write(store, record)
        ids.append(record.trace_id)
    return ids


async def test_final_rows_are_chained_in_commit_order_without_gaps(store: Store) -> None:
    running = trace(CallStatus.IN_PROGRESS)
    await store.write_traces([open_row(running)], [])
    ids = await written(store, 3)
    batch = [trace(), trace()]
    await write(store, *batch)
    assert await chain_ids(store.db) == list(
        enumerate([*ids, *(r.trace_id for r in batch)], start=1)
    )
    head = GENESIS
    for row in await chained_rows(store.db):
        head = head.next(row)
        assert (row["chain_seq"], row["chain_link"]) == (head.seq, head.link)
    assert await chain_head(store.db) == head
    assert (await store.get_trace(running.trace_id))["evidence"]["chain_seq"] is None  # type: ignore[index]


async def test_purge_erasure_and_metadata_purge_keep_the_chain_intact(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    await written(store, 4)
    await write(store, trace(prompt='"x"', completion="y", subject_sha256=subject_digest("b")))
    erasure = await Retention(store.db).erase_subject("b", "admin", 1000.0)
    assert erasure.traces == 1
    purge = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "ledger", "purge", "--database-url",
         database_url, "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert purge.returncode == 0, purge.stderr
    assert (await store.get_trace((await chained_rows(store.db))[0]["trace_id"]))[
        "request_model"
    ] == ""  # type: ignore[index]
    await written(store, 2)
    status, output = audit_verify(database_url, tmp_path)
    assert status == 0, output
    # The command's purge is an administrative change: an admin event in the same chain.
    assert output.startswith("OK: 7 traces and 1 admin event, chain intact up to trc_"), output


async def test_a_tombstone_cannot_hide_a_deleted_neighbour(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    ids = await written(store, 5)
    assert await Retention(store.db).purge_metadata(now=1000.0) == 5
    await store.db.execute("DELETE FROM traces WHERE trace_id = ?", (ids[2],))
    status, output = audit_verify(database_url, tmp_path)
    assert status == 1 and "deleted:" in output, output


async def test_interrupted_calls_join_the_chain_once_no_process_can_finish_them(
    store: Store,
) -> None:
    slow = trace(CallStatus.IN_PROGRESS, instance_id="gw_slow")
    await store.heartbeat("gw_slow", 0.0)  # processes the ledger knows
    await store.write_traces([open_row(slow)], [])
    await store.mark_interrupted(live_after=1e12, now=1e9)
    assert await chain_ids(store.db) == []  # settling: its process may still finish it
    slow.status = CallStatus.COMPLETED
    await write(store, slow)
    assert await chain_ids(store.db) == [(1, slow.trace_id)]

    stuck = trace(CallStatus.IN_PROGRESS, instance_id="gw_dead")
    await store.heartbeat("gw_dead", 0.0)
    await store.write_traces([open_row(stuck)], [])
    await store.mark_interrupted(live_after=1e12, now=1e9)
    assert await chain_pending(store.db, settled_before=1e9) == 1
    assert await chain_ids(store.db) == [(1, slow.trace_id), (2, stuck.trace_id)]
    stuck.status = CallStatus.COMPLETED
    await write(store, stuck)  # too late: the chain vouches for it as interrupted
    assert (await store.get_trace(stuck.trace_id))["status"] == "interrupted"  # type: ignore[index]
    assert not any(row["chain_suspect"] for row in await chained_rows(store.db))


async def test_checkpoints_every_n_traces_are_signed_stored_and_exported(
    store: Store, tmp_path: Path
) -> None:
    checkpoints = Checkpoints(store.db, KEY, CheckpointPolicy(3, 3600.0, tmp_path / "ckpt"))
    assert not await checkpoints.due(now=2e9)
    await written(store, 2)
    assert await checkpoints.due(now=2e9)  # the first: as soon as the chain has a row
    await checkpoints.make(now=2e9)
    assert not await checkpoints.due(now=2e9 + 10)
    await written(store, 2)
    assert not await checkpoints.due(now=2e9 + 10)  # 2 new traces, not 3, 10 s, not 3600
    assert await checkpoints.due(now=2e9 + 3600)
    await written(store, 1)
    assert await checkpoints.due(now=2e9 + 10)
    token = await checkpoints.make(now=2e9 + 11)
    assert token is not None and await checkpoints.make(now=2e9 + 12) is None  # same head
    assert await checkpoints.tokens() == [
        p.read_text().strip() for p in sorted((tmp_path / "ckpt").glob("*.jws"))
    ]
    assert [p.name for p in sorted((tmp_path / "ckpt").glob("*.jws"))] == [
        "checkpoint-000000000002.jws",
        "checkpoint-000000000005.jws",
    ]


Tamper = Callable[[Database, list[str], Path], Awaitable[None]]


async def _edit(db: Database, ids: list[str], _: Path) -> None:
    await db.execute("UPDATE traces SET cost_eur = 9.99 WHERE trace_id = ?", (ids[3],))


async def _delete(db: Database, ids: list[str], _: Path) -> None:
    await db.execute("DELETE FROM traces WHERE trace_id = ?", (ids[3],))


async def _insert(db: Database, ids: list[str], _: Path) -> None:
    """A forged row chained from a genuine link, the rows after it moved up one place."""
    copied = [c for c in CHAINED_COLUMNS if c != "trace_id"]
    await db.transaction([
        ("UPDATE traces SET chain_seq = chain_seq + 1000 WHERE chain_seq > 3", [()]),
        ("UPDATE traces SET chain_seq = chain_seq - 999 WHERE chain_seq > 1000", [()]),
        (f"INSERT INTO traces (trace_id, chain_seq, {', '.join(copied)}) "
         f"SELECT 'trc_forged', 4, {', '.join(copied)} FROM traces WHERE trace_id = ?",
         [(ids[2],)]),
        ("UPDATE traces SET cost_eur = 0.0 WHERE trace_id = 'trc_forged'", [()]),
    ])  # fmt: skip
    rows = {row["trace_id"]: row for row in await chained_rows(db)}
    genuine = rows[ids[2]]
    link, digest = link_row(
        ChainLink(genuine["chain_seq"], genuine["chain_link"]), rows["trc_forged"]
    )
    await db.execute(
        "UPDATE traces SET chain_link = ?, chain_version = ?, metadata_sha256 = ? "
        "WHERE trace_id = 'trc_forged'",
        (link.link, CHAIN_VERSION, digest),
    )


async def _swap(db: Database, ids: list[str], _: Path) -> None:
    await db.transaction([
        ("UPDATE traces SET chain_seq = -1 WHERE trace_id = ?", [(ids[2],)]),
        ("UPDATE traces SET chain_seq = 3 WHERE trace_id = ?", [(ids[5],)]),
        ("UPDATE traces SET chain_seq = 6 WHERE trace_id = ?", [(ids[2],)]),
    ])  # fmt: skip


async def _truncate(db: Database, ids: list[str], export: Path) -> None:
    """The last two rows cut, with the stored checkpoints: the exported ones remain."""
    await db.transaction([
        ("DELETE FROM traces WHERE trace_id IN (?, ?)", [(ids[-1], ids[-2])]),
        ("DELETE FROM chain_checkpoints", [()]),
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("tamper", "kind", "named"),
    [
        (_edit, "edited", 3),
        (_delete, "deleted", 4),
        (_insert, "inserted", None),
        (_swap, "reordered", None),
        (_truncate, "truncated after checkpoint", 5),
    ],
    ids=["edited", "deleted", "inserted", "reordered", "truncated-after-checkpoint"],
)
async def test_audit_verify_names_each_kind_of_tampering(
    store: Store, database_url: str, tmp_path: Path, tamper: Tamper, kind: str, named: int | None
) -> None:
    ids = await written(store, 8)
    export = tmp_path / "checkpoints"
    await Checkpoints(store.db, KEY, CheckpointPolicy(export_dir=export)).make()
    status, output = audit_verify(database_url, tmp_path, export)
    assert status == 0 and output.startswith("OK: 8 traces"), output
    await tamper(store.db, ids, export)
    status, output = audit_verify(database_url, tmp_path, export)
    assert status == 1, output
    lines = output.splitlines()
    assert any(line.startswith(f"{kind}:") for line in lines), output
    if named is not None:
        assert ids[named] in output, output
    if kind == "inserted":
        assert "trc_forged" in output, output
    if kind == "reordered":
        assert ids[2] in output or ids[5] in output, output
