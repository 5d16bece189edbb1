"""`llmeu migrate` as a step of its own, and `llmeu serve --no-migrate` refusing a schema its
release does not run on, with one line naming both versions."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from llmeu.ledger import migration_runner
from llmeu.ledger.migrations import MIGRATIONS
from llmeu.ledger.opening import open_database
from llmeu.ledger.schema import SCHEMA_VERSION
from llmeu.ledger.store import Store
from tests.cli.test_platform_cli import llmeu
from tests.support.processes import Gateway, free_port

PREVIOUS = MIGRATIONS[-2][0]


def serve_no_migrate(data_dir: Path) -> tuple[int, str]:
    done = llmeu("serve", "--no-migrate", "--no-local", "--port", str(free_port()),
                 "--data-dir", str(data_dir), "--log-level", "warning")  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def previous_ledger(data_dir: Path) -> None:
    """A SQLite ledger as the previous release left it: without this release's migration."""

    async def migrate() -> None:
        db = open_database(f"sqlite:///{data_dir / 'llmeu.db'}")
        await db.open()
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(migration_runner, "MIGRATIONS", MIGRATIONS[:-1])
                await Store(db).migrate()
        finally:
            await db.close()

    data_dir.mkdir()
    asyncio.run(migrate())


def test_migrate_creates_the_data_dirs_ledger_then_finds_nothing_to_do(tmp_path: Path) -> None:
    first = llmeu("migrate", env={"LLMEU_DATA_DIR": str(tmp_path)})
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[:-1] == [f"applied {version}: {name}" for version, name, _ in MIGRATIONS]
    assert lines[-1] == (
        f"schema version {SCHEMA_VERSION} in sqlite:///{tmp_path / 'llmeu.db'} "
        f"(this release knows {SCHEMA_VERSION})"
    )
    again = llmeu("migrate", "--data-dir", str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [lines[-1] + "; nothing to apply"]


def test_migrate_says_in_one_line_that_the_database_is_unreachable() -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/llmeu"
    done = llmeu("migrate", "--database-url", url)
    assert done.returncode == 1
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("llmeu migrate: postgresql://postgres@127.0.0.1:"), done.stderr


def test_serve_no_migrate_refuses_the_previous_releases_schema_until_migrated(
    tmp_path: Path, gateway_factory: Callable[..., Gateway]
) -> None:
    data_dir = tmp_path / "data"
    previous_ledger(data_dir)
    status, output = serve_no_migrate(data_dir)
    assert status != 0
    refusal = (
        f"the ledger's schema is version {PREVIOUS}, this release supports version "
        f"{SCHEMA_VERSION} and later releases' expand steps: run `llmeu migrate`"
    )
    assert output == f"llmeu serve: {refusal}\n"
    migrated = llmeu("migrate", "--data-dir", str(data_dir))
    assert migrated.stdout.splitlines()[0] == f"applied {SCHEMA_VERSION}: {MIGRATIONS[-1][1]}"
    gateway = gateway_factory(data_dir=data_dir, args=["--no-migrate"])
    assert gateway.stop() == 0


def test_serve_refuses_a_newer_releases_contract_step_and_an_empty_database(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty"
    status, output = serve_no_migrate(empty)
    assert status != 0
    assert output.startswith(
        "llmeu serve: the database holds no ledger schema yet, this release supports version"
    )
    newer = tmp_path / "newer"
    assert llmeu("migrate", "--data-dir", str(newer)).returncode == 0
    with sqlite3.connect(newer / "llmeu.db") as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at, contract) "
            "VALUES (?, 'a newer release drops a column', 1.0, 1)",
            (SCHEMA_VERSION + 1,),
        )
    status, output = serve_no_migrate(newer)
    assert status != 0
    assert output == (
        f"llmeu serve: the ledger's schema is version {SCHEMA_VERSION + 1}, this release "
        f"supports version {SCHEMA_VERSION} and later releases' expand steps, and "
        f"{SCHEMA_VERSION + 1} is a contract step of a newer release: run a release that knows "
        f"version {SCHEMA_VERSION + 1}\n"
    )
    refused = llmeu("migrate", "--data-dir", str(newer))
    assert refused.returncode == 1
    message = output.removeprefix("llmeu serve: ").rstrip("\n")
    assert refused.stderr == f"llmeu migrate: sqlite:///{newer / 'llmeu.db'}: {message}\n"
    migrating = llmeu("serve", "--no-local", "--port", str(free_port()), "--data-dir", str(newer))
    assert migrating.returncode != 0
    assert f"startup failed: {message}" in migrating.stdout + migrating.stderr
