"""Admin events in the hash chain, on SQLite and on PostgreSQL: chained among calls, left out
of what counts calls, verified by the chain's unchanged walk (what a release from before
them runs), and every edit, deletion or reordering named by `llmeu audit verify` (a real
process) with the event's trace id, place and action."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from llmeu.api.services.admin_log import Actor, AdminLog
from llmeu.api.services.auth import KeyRing
from llmeu.evidence.admin_events import AdminEvent, object_digest
from llmeu.evidence.audit import verify_chain
from llmeu.evidence.signing_keys import load_directory_keys
from llmeu.ledger.admin_event_rows import all_events
from llmeu.ledger.chaining import chained_rows
from llmeu.ledger.database import Database
from llmeu.ledger.retention import calls_between
from llmeu.ledger.store import Store
from tests.ledger.conftest import trace, write
from tests.ledger.test_chain import audit_verify, chain_ids
from tests.support.processes import REPO

ADMIN = Actor("admin", "admin", "192.0.2.7")


async def calls_and_events(store: Store) -> tuple[list[str], list[AdminEvent]]:
    """call, key.create, call, policy.put, call, hold.place, call — in commit order."""
    log = AdminLog(store, "gw_test")
    calls: list[str] = []
    events: list[AdminEvent] = []
    changes = [
        ("key.create", "k1", None, {"id": "k1", "name": "ci"}),
        ("policy.put", "eu", {"policy_id": "eu"}, {"policy_id": "eu", "allow_classes": ["x"]}),
        ("hold.place", "hold_1", None, {"id": "hold_1"}),
    ]
    for action, target, before, after in changes:
        record = trace()
        await write(store, record)
        calls.append(record.trace_id)
        events.append(await log.record(ADMIN, action, target, before=before, after=after))
    record = trace()
    await write(store, record)
    calls.append(record.trace_id)
    return calls, events


async def test_events_are_chained_among_calls_and_never_counted_as_calls(store: Store) -> None:
    calls, events = await calls_and_events(store)
    order = [i for _, i in await chain_ids(store.db)]
    assert order == [calls[0], events[0].trace_id, calls[1], events[1].trace_id, calls[2],
                     events[2].trace_id, calls[3]]  # fmt: skip
    stored = {r["trace_id"]: r for r in await all_events(store.db)}
    assert [AdminEvent.of_row(stored[e.trace_id]) for e in events] == events
    event = events[1]
    assert event.before_sha256 == object_digest({"policy_id": "eu"})
    assert event.after_sha256 == object_digest({"policy_id": "eu", "allow_classes": ["x"]})
    assert (event.actor, event.role, event.source) == ("admin", "admin", "192.0.2.7")

    usage = await store.usage(group_by="key", since=None, until=None, key_id=None)
    assert [(u["key"], u["requests"]) for u in usage] == [("kalice", 4)]
    page = await store.list_traces(filters={}, since=None, until=None, limit=50, cursor=None,
                                   key_id=None)  # fmt: skip
    assert sorted(t["id"] for t in page.traces) == sorted(calls)
    assert await store.get_trace(event.trace_id) is None
    assert set(await store.spend_by_key()) == {"kalice"}
    exported = await calls_between(store.db, 0.0, 4e9)
    assert sorted(c["trace_id"] for c in exported) == sorted(calls)

    rows = await chained_rows(store.db)
    assert verify_chain(rows).ok  # the chain's own walk, as a release without events runs it


Tamper = Callable[[Database, AdminEvent], Awaitable[None]]


async def _edit_event_record(db: Database, event: AdminEvent) -> None:
    await db.execute("UPDATE admin_events SET actor = 'k9' WHERE trace_id = ?", (event.trace_id,))


async def _edit_event_row(db: Database, event: AdminEvent) -> None:
    await db.execute(
        "UPDATE traces SET request_model = 'key.revoke' WHERE trace_id = ?", (event.trace_id,)
    )


async def _edit_event_and_its_digest(db: Database, event: AdminEvent) -> None:
    """The record edited and its row's digest made to match: the chain's link shows it."""
    forged = dataclasses.replace(event, target="k9")
    await db.execute("UPDATE admin_events SET target = 'k9' WHERE trace_id = ?", (event.trace_id,))
    await db.execute(
        "UPDATE traces SET request_sha256 = ? WHERE trace_id = ?", (forged.digest(), event.trace_id)
    )


async def _delete_event_record(db: Database, event: AdminEvent) -> None:
    await db.execute("DELETE FROM admin_events WHERE trace_id = ?", (event.trace_id,))


async def _delete_event_row(db: Database, event: AdminEvent) -> None:
    await db.execute("DELETE FROM traces WHERE trace_id = ?", (event.trace_id,))


async def _move_to_the_end(db: Database, event: AdminEvent) -> None:
    """The event's row moved after the last call, the rows after it moved up one place."""
    found = await db.fetch("SELECT chain_seq FROM traces WHERE trace_id = ?", (event.trace_id,))
    seq = found[0]["chain_seq"]
    last = (await db.fetch("SELECT MAX(chain_seq) AS last FROM traces"))[0]["last"]
    await db.transaction([
        ("UPDATE traces SET chain_seq = -1 WHERE trace_id = ?", [(event.trace_id,)]),
        ("UPDATE traces SET chain_seq = chain_seq + 1000 WHERE chain_seq > ?", [(seq,)]),
        ("UPDATE traces SET chain_seq = chain_seq - 1001 WHERE chain_seq > 1000", [()]),
        ("UPDATE traces SET chain_seq = ? WHERE trace_id = ?", [(last, event.trace_id)]),
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (_edit_event_record, ("edited: admin event {id} (seq {seq}, policy.put)",)),
        (_edit_event_row, ("edited: ", "[admin event {id}: key.revoke]")),
        (_edit_event_and_its_digest, ("edited: ", "[admin event {id}: policy.put]")),
        (_delete_event_record, ("deleted: admin event {id} (seq {seq}, policy.put)",)),
        (_delete_event_row, ("deleted: admin event {id} (policy.put by admin)",
                             "deleted: 1 row(s) missing (seq {seq})")),
        (_move_to_the_end, ("reordered: ", "[admin event {id}: policy.put]")),
    ],
    ids=["record-edited", "row-edited", "record-and-digest-edited", "record-deleted",
         "row-deleted", "reordered"],
)  # fmt: skip
async def test_a_tampered_event_is_named(
    store: Store, database_url: str, tmp_path: Path, tamper: Tamper, expected: tuple[str, ...]
) -> None:
    _, events = await calls_and_events(store)
    status, output = audit_verify(database_url, tmp_path)
    assert status == 0, output
    assert output.startswith("OK: 4 traces and 3 admin events, chain intact up to trc_"), output
    event = events[1]
    seq = dict((i, s) for s, i in await chain_ids(store.db))[event.trace_id]
    await tamper(store.db, event)
    status, output = audit_verify(database_url, tmp_path)
    assert status == 1, output
    for part in expected:
        assert part.format(id=event.trace_id, seq=seq) in output, output
    assert "OK:" not in output


def command(database_url: str, data_dir: Path, *args: str) -> dict[str, Any]:
    """A command of the CLI as a real process, on this ledger; its JSON answer."""
    environ = {**os.environ, "LLMEU_DATABASE_URL": database_url}
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", *args, "--data-dir", str(data_dir), "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=60, env=environ,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


async def test_the_commands_that_act_on_the_ledger_record_their_events(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    keys = KeyRing(store)
    await keys.ensure_admin("sk-llmeu-admin-" + "1" * 40, "eu-strict")
    admin_before = await store.get_key("admin")
    command(database_url, tmp_path, "keys", "reset-admin")
    admin_after = await store.get_key("admin")
    assert admin_before is not None and admin_after is not None
    assert admin_after.secret_hash != admin_before.secret_hash

    signing = tmp_path / "signing-keys"
    first = load_directory_keys(signing).jwks()
    rotated = command(database_url, tmp_path, "keys", "rotate-signing")
    purged = command(database_url, tmp_path, "ledger", "purge")
    stored = [AdminEvent.of_row(r) for r in await all_events(store.db)]
    assert [(e.action, e.target) for e in stored] == [
        ("key.reset", "admin"),
        ("signing.rotate", rotated["new"]),
        ("ledger.purge", purged["database"]),
    ]
    reset, rotation, purge = stored
    counts = {"content_purged": purged["purged"], "metadata_purged": purged["metadata_purged"]}
    assert purge.after_sha256 == object_digest(counts)
    assert reset.before_sha256 == object_digest(admin_before.public())
    assert reset.after_sha256 == object_digest(admin_after.public())
    assert rotation.trace_id == rotated["admin_event"]
    assert rotation.before_sha256 == object_digest(first)
    assert rotation.after_sha256 == object_digest(load_directory_keys(signing).jwks())
    for event in stored:
        assert event.actor.startswith("local:") and event.role == "admin"
        assert event.source is None
    status, output = audit_verify(database_url, tmp_path)
    assert status == 0, output
    assert output.startswith("OK: 0 traces and 3 admin events"), output
