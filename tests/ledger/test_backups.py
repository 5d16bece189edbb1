"""`llmeu ledger backup` and `restore` on a SQLite file and on the real PostgreSQL: a backup
restores and verifies, a restore never replaces a ledger in use or with rows unasked, and every
failure — an unwritable path, a corrupt or foreign file, no `pg_dump` — is named, exits 1 and
writes nothing."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from llmeu.api.services.admin_log import Actor, AdminLog
from llmeu.evidence.signing_keys import KeyRing
from llmeu.ledger.chaining import CheckpointPolicy, Checkpoints
from llmeu.ledger.migrations import MIGRATIONS
from llmeu.ledger.opening import open_database
from llmeu.ledger.pg_backups import libpq_connection
from llmeu.ledger.store import Store
from tests.ledger.conftest import sqlite_path, trace, write
from tests.ledger.test_chain import KEY
from tests.support.databases import postgres_database
from tests.support.processes import REPO


def ledger_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "ledger", *args],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def as_json(out: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(out)
    return result


@contextlib.asynccontextmanager
async def fresh(database_url: str, tmp_path: Path, name: str) -> AsyncIterator[str]:
    """Another ledger of the same kind, not created yet (SQLite) or empty (PostgreSQL)."""
    if sqlite_path(database_url) is not None:
        yield f"sqlite:///{tmp_path / name / 'llmeu.db'}"
        return
    async with postgres_database() as url:
        yield url


async def tables(url: str) -> list[str]:
    """The ledger tables in a database (none when it holds no ledger, or does not exist)."""
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return []
    database = open_database(url)
    await database.open(create=False)
    try:
        store = Store(database)
        return ["schema_migrations"] if await store.has_schema() else []
    finally:
        await database.close()


async def traces_in(url: str) -> int:
    """Counted on a connection of its own: the file a SQLite restore put in place."""
    database = open_database(url)
    await database.open(create=False)
    try:
        rows = await database.fetch("SELECT COUNT(*) AS n FROM traces")
        return int(rows[0]["n"])
    finally:
        await database.close()


async def test_a_backup_restores_into_a_fresh_ledger_that_verifies(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    records = [trace(), trace(), trace()]
    await write(store, *records)
    await Checkpoints(store.db, KEY, CheckpointPolicy()).make()
    await write(store, trace())
    backup = tmp_path / "ledger.backup"
    status, out, err = ledger_cli("backup", "--to", str(backup), "--database-url", database_url,
                                  "--json")  # fmt: skip
    assert status == 0, out + err
    held = as_json(out)
    assert (held["traces"], held["chain_head"]["position"], held["checkpoint"]["position"],
            held["chain_intact"]) == (4, 4, 3, True)  # fmt: skip
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]

    async with fresh(database_url, tmp_path, "restored") as target:
        status, out, err = ledger_cli("restore", "--from", str(backup), "--database-url", target)
        assert status == 0, out + err
        assert "4 traces, chain head at position 4" in out, out
        assert "newest signed checkpoint: position 3" in out and "hash chain intact" in out, out
        jwks = tmp_path / "jwks.json"
        jwks.write_text(json.dumps(KeyRing(KEY).jwks()))
        done = subprocess.run(
            [sys.executable, "-m", "llmeu.cli.main", "audit", "verify", "--database-url", target,
             "--jwks", str(jwks)],
            capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("OK: 4 traces, chain intact up to "), done.stdout


async def test_a_restore_never_replaces_a_ledger_with_rows_unasked_nor_one_in_use(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    await write(store, trace(), trace())
    backup = tmp_path / "ledger.backup"
    assert ledger_cli("backup", "--to", str(backup), "--database-url", database_url)[0] == 0
    await write(store, trace())

    status, out, err = ledger_cli("restore", "--from", str(backup), "--database-url", database_url)
    assert (status, out) == (1, ""), out + err
    assert "holds a ledger with traces, checkpoints or keys" in err and "--force" in err, err
    assert await traces_in(database_url) == 3  # untouched

    await store.register_instance("gw_running", time.time())
    status, out, err = ledger_cli(
        "restore", "--from", str(backup), "--database-url", database_url, "--force"
    )
    assert (status, out) == (1, ""), out + err
    assert "a gateway is running on" in err and "stop every gateway process" in err, err

    await store.unregister_instance("gw_running")
    status, out, err = ledger_cli(
        "restore", "--from", str(backup), "--database-url", database_url, "--force"
    )
    assert status == 0, out + err
    assert "2 traces, chain head at position 2" in out, out
    assert await traces_in(database_url) == 2


async def test_a_backup_to_a_path_that_cannot_be_written_fails_and_leaves_nothing(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    await write(store, trace())
    not_a_directory = tmp_path / "a-file"
    not_a_directory.write_text("")
    for target in (not_a_directory / "ledger.backup", tmp_path / "missing" / "ledger.backup"):
        status, out, err = ledger_cli("backup", "--to", str(target), "--database-url",
                                      database_url)  # fmt: skip
        assert (status, out) == (1, ""), out + err
        assert err.startswith(f"llmeu ledger backup: cannot write {target}: "), err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "ledger.db") == [
        "a-file", *(["ledger.db-shm", "ledger.db-wal"] if sqlite_path(database_url) else [])
    ]  # fmt: skip


async def test_a_corrupt_or_foreign_backup_is_refused_and_the_target_left_as_it_was(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    await write(store, *(trace() for _ in range(200)))
    backup = tmp_path / "ledger.backup"
    assert ledger_cli("backup", "--to", str(backup), "--database-url", database_url)[0] == 0
    whole = backup.read_bytes()
    truncated = tmp_path / "truncated.backup"
    truncated.write_bytes(whole[: len(whole) // 2])
    garbled = tmp_path / "garbled.backup"
    keep = len(whole) // 4  # the start and the end intact, zeros between
    garbled.write_bytes(whole[:keep] + bytes(len(whole) - 2 * keep) + whole[-keep:])
    noise = tmp_path / "noise.backup"
    noise.write_bytes(os.urandom(8192))
    sqlite = sqlite_path(database_url) is not None
    foreign = tmp_path / "foreign.backup"
    foreign.write_bytes(b"PGDMP" + os.urandom(100) if sqlite else b"SQLite format 3\x00" + whole)

    async with fresh(database_url, tmp_path, "restored") as target:
        for broken, said in (
            (truncated, ""),
            (garbled, ""),
            (noise, "neither a SQLite file nor a pg_dump archive"),
            (foreign, "is a PostgreSQL backup" if sqlite else "is a SQLite ledger"),
            (tmp_path / "absent.backup", "cannot read"),
        ):
            status, out, err = ledger_cli("restore", "--from", str(broken), "--database-url",
                                          target)  # fmt: skip
            assert (status, out) == (1, ""), f"{broken.name}: {out}{err}"
            assert err.startswith("llmeu ledger restore: ") and said in err, f"{broken.name}: {err}"
            assert await tables(target) == [], broken.name
        if sqlite:
            assert not [p for p in (tmp_path / "restored").iterdir() if p.name != "llmeu.db"]


@pytest.mark.postgres
async def test_without_pg_dump_on_path_the_backup_names_what_is_missing(
    tmp_path: Path,
) -> None:
    async with postgres_database() as url:
        database = open_database(url)
        await database.open()
        try:
            await Store(database).migrate()
        finally:
            await database.close()
        target = tmp_path / "ledger.backup"
        empty = tmp_path / "bin"
        empty.mkdir()
        for action, file in (("backup", "--to"), ("restore", "--from")):
            status, out, err = ledger_cli(action, file, str(target), "--database-url", url,
                                          env={"PATH": str(empty)})  # fmt: skip
            assert (status, out) == (1, ""), out + err
            tool = "pg_dump" if action == "backup" else "pg_restore"
            assert f"{tool} is not on PATH" in err and "postgresql-client" in err, err
        assert list(tmp_path.iterdir()) == [empty]


@pytest.mark.parametrize(
    ("url", "dsn", "password"),
    [
        ("postgresql://llmeu@db:5432/ledger", "postgresql://llmeu@db:5432/ledger", None),
        ("postgresql://llmeu:s%40cret@db/ledger?sslmode=require",
         "postgresql://llmeu@db/ledger?sslmode=require", "s@cret"),
        ("postgres://u:p@[::1]:5433/l", "postgres://u@[::1]:5433/l", "p"),
    ],
    ids=["no-password", "password-and-query", "ipv6"],
)  # fmt: skip
def test_the_password_reaches_the_tools_through_the_environment_only(
    url: str, dsn: str, password: str | None
) -> None:
    command_line, env = libpq_connection(url, {"PATH": "/usr/bin"})
    assert (command_line, env.get("PGPASSWORD"), env["PATH"]) == (dsn, password, "/usr/bin")


async def test_a_sqlite_backup_is_one_self_contained_file(store: Store, tmp_path: Path) -> None:
    if store.db.dialect.name != "sqlite":
        pytest.skip("SQLite only")
    await write(store, trace())
    backup = tmp_path / "ledger.backup"
    assert ledger_cli("backup", "--to", str(backup), "--database-url", store.db.describe())[0] == 0
    header = backup.read_bytes()[:20]
    assert header.startswith(b"SQLite format 3\x00") and header[18:20] == b"\x01\x01"  # no WAL
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ledger.backup")) == [
        "ledger.backup"
    ]


async def test_a_backup_counts_admin_events_apart_from_calls(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    await write(store, trace(), trace())
    await AdminLog(store, "gw_test").record(
        Actor("admin", "admin", None), "key.create", "k1", before=None, after={"id": "k1"}
    )
    backup = tmp_path / "ledger.backup"
    status, out, err = ledger_cli("backup", "--to", str(backup), "--database-url", database_url,
                                  "--json")  # fmt: skip
    assert status == 0, out + err
    held = as_json(out)
    assert (held["traces"], held["admin_events"], held["chain_head"]["position"]) == (2, 1, 3)
    status, out, err = ledger_cli("backup", "--to", str(tmp_path / "again.backup"),
                                  "--database-url", database_url)  # fmt: skip
    assert status == 0, out + err
    assert "2 traces and 1 admin event, chain head at position 3" in out, out


async def test_a_backup_of_a_newer_schema_is_not_restored_by_an_older_release(
    store: Store, database_url: str, tmp_path: Path
) -> None:
    await write(store, trace())
    newer = MIGRATIONS[-1][0] + 1  # what the next release's migration would leave
    await store.db.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        (newer, "a later release's step", time.time()),
    )
    backup = tmp_path / "ledger.backup"
    assert ledger_cli("backup", "--to", str(backup), "--database-url", database_url)[0] == 0
    async with fresh(database_url, tmp_path, "restored") as target:
        status, out, err = ledger_cli("restore", "--from", str(backup), "--database-url", target)
        assert (status, out) == (1, ""), out + err
        assert f"holds schema version {newer}, newer than this release's {newer - 1}" in err, err
        assert await tables(target) == []  # nothing was restored
