"""Which ledger schemas this release runs on, and when a contract step may run.

A rolling upgrade replaces gateway processes one at a time, so for a while
release N-1 and release N write one PostgreSQL ledger together. Every schema
change from migration 15 on is split for that (docs/extending.md):

- an **expand** step adds (a table, a nullable column or one with a default,
  an index) and leaves all that an older release reads and writes in place:
  the older release runs beside it unharmed, whether or not it knows it;
- a **contract** step (`CONTRACT`) removes or narrows what an older release
  still uses. It runs only once no live process runs a release that does not
  know it: `instances.schema_version` records the highest migration each
  process's release knows (NULL: a release before migration 15, older than any
  contract step), and a process whose heartbeat is older than three heartbeats
  is gone, as for the interrupted-call sweep. A deferred contract step holds
  back every step after it, so the applied steps are always the first ones.
  The check reads `instances` before the step's transaction: a process of an
  older release started after it is not waited for, which is why an older
  release is never started again once its successor's rollout has ended.

What "supports" means, then: this release runs on a schema that

- has every expand step it knows applied — its code writes what they add. Its
  own contract steps come last in its release and may still wait for the older
  processes to leave: `LOWEST_SCHEMA` up to `SCHEMA_VERSION`;
- holds no contract step it does not know. Later releases' expand steps are
  fine: that is release N-1 running beside release N's expand step.

Migrations 9 and 11, from before the rule, broke older releases (docs/ledger.md).
"""

from __future__ import annotations

from collections.abc import Collection

from llmeu.errors import SchemaMismatch
from llmeu.ledger.migrations import CONTRACT, MIGRATIONS

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The highest migration this release knows; what its processes record in `instances`."""
LOWEST_SCHEMA = max(version for version, _, _ in MIGRATIONS if version not in CONTRACT)
"""The lowest schema this release runs on: its expand steps applied, its contract steps
perhaps not yet."""


def supported_range() -> str:
    """The schemas this release runs on, in words."""
    own = (
        str(SCHEMA_VERSION)
        if LOWEST_SCHEMA == SCHEMA_VERSION
        else f"{LOWEST_SCHEMA} to {SCHEMA_VERSION}"
    )
    return f"this release supports version {own} and later releases' expand steps"


def mismatch(applied: Collection[int], contracts: Collection[int]) -> SchemaMismatch | None:
    """Why this release must not run on a ledger whose `schema_migrations` holds `applied`,
    of which `contracts` are contract steps; None when it may."""
    version = max(applied, default=0)
    missing = [v for v, _, _ in MIGRATIONS if v <= LOWEST_SCHEMA and v not in applied]
    if missing:
        schema = (
            "the database holds no ledger schema yet"
            if not applied
            else f"the ledger's schema is version {version}"
        )
        return SchemaMismatch(f"{schema}, {supported_range()}: run `llmeu migrate`")
    newer = sorted(v for v in contracts if v > SCHEMA_VERSION)
    if newer:
        return SchemaMismatch(
            f"the ledger's schema is version {version}, {supported_range()}, and {newer[0]} "
            f"is a contract step of a newer release: run a release that knows version {version}"
        )
    return None
