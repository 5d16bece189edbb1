"""Which driver serves a database URL."""

from __future__ import annotations

from pathlib import Path

from llmeu.errors import ConfigError
from llmeu.ledger.database import Database


def open_database(url: str) -> Database:
    """`sqlite:///path/to/file.db` or `postgresql://…`; nothing is connected yet."""
    if url.startswith(("postgresql://", "postgres://")):
        from llmeu.ledger.postgres import PostgresDatabase

        return PostgresDatabase(url)
    if url.startswith("sqlite:///"):
        from llmeu.ledger.sqlite import SqliteDatabase

        return SqliteDatabase(Path(url.removeprefix("sqlite:///")))
    raise ConfigError(
        f"unsupported database URL {url!r} (sqlite:///… or postgresql://…)", field="database_url"
    )
