"""A throwaway PostgreSQL database for one benchmark run, created and dropped with psql."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator

HOST = "127.0.0.1"
PORT = 5432
USER = "postgres"


def _psql(sql: str) -> None:
    subprocess.run(
        ["psql", "-h", HOST, "-p", str(PORT), "-U", USER, "-d", "postgres", "-qAt", "-c", sql],
        check=True,
        capture_output=True,
    )


@contextlib.contextmanager
def temporary_database(suffix: str = "") -> Iterator[str]:
    """Yield the URL of a fresh database; it is dropped on exit."""
    name = f"llmeu_bench_{os.getpid()}" + (f"_{suffix}" if suffix else "")
    _psql(f"DROP DATABASE IF EXISTS {name}")
    _psql(f"CREATE DATABASE {name}")
    try:
        yield f"postgresql://{USER}@{HOST}:{PORT}/{name}"
    finally:
        _psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextlib.contextmanager
def temporary_database_if(enabled: bool) -> Iterator[str | None]:
    if not enabled:
        yield None
        return
    with temporary_database() as url:
        yield url
