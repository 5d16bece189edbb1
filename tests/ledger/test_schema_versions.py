"""Expand/contract: each process records the schema its release knows; a contract step
waits for the live processes of older releases; a release names the schemas it refuses."""

from __future__ import annotations

import pytest

from llmeu.cli.migrate import migrate as migrate_command
from llmeu.errors import SchemaMismatch
from llmeu.ledger import migration_runner
from llmeu.ledger.database import Database
from llmeu.ledger.migrations import MIGRATIONS
from llmeu.ledger.opening import open_database
from llmeu.ledger.schema import LOWEST_SCHEMA, SCHEMA_VERSION, mismatch
from llmeu.ledger.store import Store

NOW = 1_000.0
LIVE_AFTER = NOW - 15
KNOWN = {version for version, _, _ in MIGRATIONS}
# A later release's steps: an expand, its contract, and a step after it.
LATER = (
    (SCHEMA_VERSION + 1, "expand: a new table", ("CREATE TABLE later_things (thing TEXT)",)),
    (SCHEMA_VERSION + 2, "contract: the old column goes", ("DROP TABLE later_things",)),
    (SCHEMA_VERSION + 3, "after the contract step", ("CREATE TABLE later_more (x TEXT)",)),
)
CONTRACT_STEP = SCHEMA_VERSION + 2


async def test_a_process_records_the_schema_its_release_knows(store: Store) -> None:
    await store.register_instance("gw_new", NOW)
    await store.db.execute("DELETE FROM instances WHERE instance_id = 'gw_new'")
    await store.heartbeat("gw_new", NOW + 5)  # a sweep removed it: it registers again
    await store.register_instance("gw_other", NOW)
    rows = await store.db.fetch("SELECT instance_id, schema_version FROM instances")
    assert {r["instance_id"]: r["schema_version"] for r in rows} == {
        "gw_new": SCHEMA_VERSION,
        "gw_other": SCHEMA_VERSION,
    }


# Who else is there when the later release migrates: (instance, heartbeat, schema_version).
OTHERS = {
    "nobody": ([], True),
    "an older release, alive": ([("gw_old", NOW, SCHEMA_VERSION)], False),
    "a release before migration 15, alive": ([("gw_older", NOW, None)], False),
    "an older release, heartbeat stale": ([("gw_gone", LIVE_AFTER - 1, SCHEMA_VERSION)], True),
    "the same release": ([("gw_peer", NOW, CONTRACT_STEP)], True),
    "a newer release": ([("gw_next", NOW, CONTRACT_STEP + 5)], True),
}


@pytest.mark.parametrize(("others", "contracts"), OTHERS.values(), ids=OTHERS.keys())
async def test_a_contract_step_waits_for_live_processes_of_older_releases(
    db: Database, others: list[tuple[str, float, int | None]], contracts: bool
) -> None:
    await Store(db).migrate()
    for instance_id, heartbeat, version in others:
        await db.execute(
            "INSERT INTO instances (instance_id, started_at, heartbeat_at, schema_version) "
            "VALUES (?, ?, ?, ?)",
            (instance_id, heartbeat, heartbeat, version),
        )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(migration_runner, "MIGRATIONS", (*MIGRATIONS, *LATER))
        patch.setattr(migration_runner, "CONTRACT", frozenset({CONTRACT_STEP}))
        applied = await Store(db).migrate(live_after=LIVE_AFTER)
        expand, *rest = (version for version, _, _ in LATER)
        assert applied == ([expand, *rest] if contracts else [expand])
        if not contracts:
            (waiting,) = others
            assert await Store(db).older_processes(CONTRACT_STEP, LIVE_AFTER) == [waiting[0]]
            # Gone (its heartbeat stopped, or it left): the next migrate applies the rest.
            assert await Store(db).migrate(live_after=NOW + 1) == rest
    marked = await db.fetch("SELECT version FROM schema_migrations WHERE contract = 1")
    assert marked == [{"version": CONTRACT_STEP}]


SCHEMAS = {
    "this release's": (KNOWN, set(), None),
    "a later release's expand step": (KNOWN | {SCHEMA_VERSION + 1}, set(), None),
    "no schema yet": (
        set(),
        set(),
        f"the database holds no ledger schema yet, this release supports version {LOWEST_SCHEMA}",
    ),
    "the previous release's": (
        KNOWN - {SCHEMA_VERSION},
        set(),
        f"the ledger's schema is version {max(KNOWN - {SCHEMA_VERSION})}, this release "
        f"supports version {LOWEST_SCHEMA}",
    ),
    "a later release's contract step": (
        KNOWN | {SCHEMA_VERSION + 1, SCHEMA_VERSION + 2},
        {SCHEMA_VERSION + 2},
        f"the ledger's schema is version {SCHEMA_VERSION + 2}, this release supports version "
        f"{LOWEST_SCHEMA}",
    ),
}


@pytest.mark.parametrize(("applied", "contracts", "message"), SCHEMAS.values(), ids=SCHEMAS.keys())
def test_a_release_names_the_schema_it_refuses_and_its_own(
    applied: set[int], contracts: set[int], message: str | None
) -> None:
    problem = mismatch(applied, contracts)
    if message is None:
        assert problem is None
        return
    assert isinstance(problem, SchemaMismatch)
    assert str(problem).startswith(message)
    fix = "run a release that knows" if contracts else "run `llmeu migrate`"
    assert fix in str(problem)


async def test_check_schema_refuses_a_ledger_of_the_previous_release(db: Database) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(migration_runner, "MIGRATIONS", MIGRATIONS[:-1])
        await Store(db).migrate()
    with pytest.raises(SchemaMismatch, match=r"run `llmeu migrate`"):
        await Store(db).check_schema()
    assert await Store(db).migrate() == [SCHEMA_VERSION]
    await Store(db).check_schema()


async def test_migrate_says_which_processes_a_contract_step_waits_for(
    database_url: str, db: Database
) -> None:
    await Store(db).migrate()
    await db.execute(
        "INSERT INTO instances (instance_id, started_at, heartbeat_at) VALUES ('gw_old', ?, ?)",
        (NOW, NOW),
    )  # as a release before migration 15 registers
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(migration_runner, "MIGRATIONS", (*MIGRATIONS, *LATER))
        patch.setattr(migration_runner, "CONTRACT", frozenset({CONTRACT_STEP}))
        lines = await migrate_command(open_database(database_url), LIVE_AFTER)
    expand = SCHEMA_VERSION + 1
    assert lines == [
        f"applied {expand}: expand: a new table",
        f"waiting: {CONTRACT_STEP}, {CONTRACT_STEP + 1} (contract step {CONTRACT_STEP} runs once "
        "no process of an older release is alive; alive now: gw_old)",
        f"schema version {expand} in {db.describe()} (this release knows {SCHEMA_VERSION})",
    ]
