"""Schema migrations: numbered steps recorded in `schema_migrations`.

One DDL text serves SQLite and PostgreSQL (TEXT, BIGINT, INTEGER and DOUBLE
PRECISION mean the same in both); a step for one database only names it.
Timestamps are seconds since the epoch, JSON is stored as TEXT. A migration
is applied once, in order, inside a transaction; add new steps at the end,
never edit an applied one. From migration 15 on every step is an expand step
unless `CONTRACT` names it (docs/extending.md, "Changing the ledger's schema").
This module numbers and names the steps; their DDL is in `migrations_early`
(1 to 10) and `migrations_later` (11 on), where a new step's goes.
"""

from __future__ import annotations

from llmeu.ledger import migrations_early, migrations_later

Step = str | tuple[str, str]
"""DDL for every database, or (database name, DDL) for one only."""

MIGRATIONS: tuple[tuple[int, str, tuple[Step, ...]], ...] = (
    (1, "traces, keys, policies, instances", migrations_early.STEPS_1),
    (3, "hash chain over final traces, its checkpoints, receipt digests", migrations_early.STEPS_3),
    (4, "personal data found in a call's prompt", migrations_early.STEPS_4),
    (6, "cache tokens and ignored protocol features on traces", migrations_early.STEPS_6),
    (
        7,
        "metadata retention, legal holds, erasure by data subject, key purposes",
        migrations_early.STEPS_7,
    ),
    (8, "stored responses of the Responses API", migrations_early.STEPS_8),
    (
        9,
        "the hash chain's lock and check inside a statement (PostgreSQL)",
        migrations_early.STEPS_9,
    ),
    (
        10,
        "index content expiry and data subjects only where a trace has them",
        migrations_early.STEPS_10,
    ),
    (11, "calls in progress in a table of their own", migrations_later.STEPS_11),
    (
        12,
        "chain version 2: every metadata column, purged rows checkable, suspect rows",
        migrations_later.STEPS_12,
    ),
    (13, "calls answered from the answer cache", migrations_later.STEPS_13),
    (14, "MCP tool calls on traces, tool-server and tool lists on keys", migrations_later.STEPS_14),
    (
        15,
        "the schema each gateway process runs on, contract steps marked",
        migrations_later.STEPS_15,
    ),
    (16, "a role on each key", migrations_later.STEPS_16),
    (17, "teams, and the team of each key", migrations_later.STEPS_17),
    (18, "console sign-ins: pending logins and sessions", migrations_later.STEPS_18),
    (19, "administrative changes on the evidence chain", migrations_later.STEPS_19),
    (
        20,
        "the organisation's directory (SCIM users, groups, members) and each key's owner",
        migrations_later.STEPS_20,
    ),
    (21, "rate limits of a team", migrations_later.STEPS_21),
)

CONTRACT: frozenset[int] = frozenset()
"""The versions of `MIGRATIONS` that are contract steps: they remove or narrow what an
older release still reads or writes, so they run only once no process of a release that
does not know them is alive (`llmeu.ledger.schema`, docs/extending.md). Every other step
is an expand step, which an older release runs beside unharmed."""

CREATE_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at DOUBLE PRECISION NOT NULL
)
"""
