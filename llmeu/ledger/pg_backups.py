"""PostgreSQL ledger backups: `pg_dump` in custom format, checked; `pg_restore` in one transaction.

The PostgreSQL client tools are not a Python dependency: they are looked up
on the PATH of the environment the command passes in (the module reads no
environment itself), and a missing one is named before anything is written. Their major
version must be the server's or newer (`pg_dump` refuses an older one).

Backup: a read-only repeatable-read transaction exports its snapshot
(`llmeu.ledger.postgres.exported_snapshot`); the ledger's contents are read
and its hash chain walked in that snapshot, and `pg_dump --snapshot` dumps
exactly that snapshot, so what is printed is what the file holds, however
many gateways write meanwhile. The archive is then read back
(`pg_restore --list`) and must list the data of the ledger's tables before it
is renamed into place.

Restore: into an existing database (create it first), in one transaction
(`--single-transaction --exit-on-error`): a failed restore leaves the
database as it was. Ownership and grants are not restored (`--no-owner
--no-privileges`): the restoring role owns what it creates. A database
holding a ledger schema is cleaned first (`--clean --if-exists`, the objects
the archive holds), with `--force` when that ledger has rows.

A password in the URL goes to the tools through `PGPASSWORD`, never on their
command line (where any user of the machine could read it).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from llmeu.errors import BackupFailed, DatabaseError
from llmeu.ledger.backups import (
    PG_DUMP_HEADER,
    Contents,
    expect_header,
    occupant,
    partial_file,
    read_contents,
    refuse_newer,
    refuse_occupied,
)
from llmeu.ledger.postgres import PostgresDatabase, exported_snapshot

LEDGER_TABLES = ("schema_migrations", "traces", "chain_checkpoints")
"""Tables whose data a ledger backup must hold."""


async def backup_postgres(url: str, target: Path, environ: Mapping[str, str]) -> Contents:
    """`environ`: the environment the tools run in (the command's own), PATH included."""
    pg_dump, pg_restore = tool("pg_dump", environ), tool("pg_restore", environ)
    dsn, env = libpq_connection(url, environ)
    with partial_file(target) as partial:
        try:
            async with exported_snapshot(url) as (snapshot, reads):
                contents = await read_contents(reads, _safe(url))
                await _run(
                    pg_dump, "--format=custom", f"--snapshot={snapshot}", f"--file={partial}",
                    f"--dbname={dsn}", env=env,
                )  # fmt: skip
        except DatabaseError as error:
            raise BackupFailed(f"cannot back up {_safe(url)}: {error}") from None
        await _check_archive(pg_restore, partial, target, environ)
        os.replace(partial, target)
    return contents


async def restore_postgres(
    url: str, source: Path, environ: Mapping[str, str], *, force: bool
) -> Contents:
    pg_restore = tool("pg_restore", environ)
    expect_header(source, PG_DUMP_HEADER, "a PostgreSQL ledger backup (pg_dump, custom format)")
    await _check_archive(pg_restore, source, source, environ)
    refuse_newer(await _archive_schema_version(pg_restore, source, environ), source)
    dsn, env = libpq_connection(url, environ)
    database = PostgresDatabase(url, pool_size=1)
    try:
        await database.open(create=False)
        try:
            found = await occupant(database, time.time())
        finally:
            await database.close()
    except DatabaseError as error:
        raise BackupFailed(f"cannot restore into {_safe(url)}: {error}") from None
    refuse_occupied(found, _safe(url), force)
    clean = ("--clean", "--if-exists") if found is not None else ()
    await _run(
        pg_restore, "--single-transaction", "--exit-on-error", "--no-owner", "--no-privileges",
        *clean, f"--dbname={dsn}", str(source), env=env,
    )  # fmt: skip
    database = PostgresDatabase(url, pool_size=1)
    try:
        await database.open(create=False)
        try:
            return await read_contents(database, _safe(url))
        finally:
            await database.close()
    except DatabaseError as error:
        raise BackupFailed(f"restored, but {_safe(url)} cannot be read back: {error}") from None


def tool(name: str, environ: Mapping[str, str]) -> str:
    found = shutil.which(name, path=environ.get("PATH", ""))
    if found is None:
        raise BackupFailed(
            f"{name} is not on PATH: install the PostgreSQL client tools of the server's major "
            "version or newer (Debian/Ubuntu: postgresql-client; they live in "
            "/usr/lib/postgresql/<version>/bin) and put them on PATH; nothing was written"
        )
    return found


async def _check_archive(
    pg_restore: str, archive: Path, named: Path, environ: Mapping[str, str]
) -> None:
    """The archive reads back and holds the data of every ledger table."""
    listing = await _run(pg_restore, "--list", str(archive), env=environ, what=f"read {named}")
    missing = [t for t in LEDGER_TABLES if f" TABLE DATA public {t} " not in listing]
    if missing:
        raise BackupFailed(f"{named} holds no data of {', '.join(missing)}: not a ledger backup")


async def _archive_schema_version(
    pg_restore: str, archive: Path, environ: Mapping[str, str]
) -> int:
    """The highest migration in the archive's `schema_migrations`, read from its data."""
    data = await _run(
        pg_restore, "--data-only", "--table=schema_migrations", "--file=-", str(archive),
        env=environ, what=f"read {archive}",
    )  # fmt: skip
    lines = iter(data.splitlines())
    for line in lines:
        if line.startswith("COPY ") and "schema_migrations" in line:
            columns = [c.strip() for c in line[line.index("(") + 1 : line.index(")")].split(",")]
            at = columns.index("version")
            versions = [int(row.split("\t")[at]) for row in iter(lines.__next__, "\\.")]
            return max(versions, default=0)
    raise BackupFailed(f"{archive} holds no data of schema_migrations: not a ledger backup")


async def _run(*command: str, env: Mapping[str, str], what: str = "") -> str:
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
        )
    except OSError as error:
        raise BackupFailed(f"cannot run {command[0]}: {error}") from None
    out, err = await process.communicate()
    if process.returncode != 0:
        name = Path(command[0]).name
        said = err.decode(errors="replace").strip().splitlines()[-3:]
        doing = f" ({what})" if what else ""
        raise BackupFailed(
            f"{name} failed{doing}, exit status {process.returncode}: {' / '.join(said)}"
        )
    return out.decode(errors="replace")


def libpq_connection(url: str, environ: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The URL for libpq without its password, and the environment that carries it."""
    parts = urlsplit(url)
    if parts.password is None:
        return url, dict(environ)
    user = parts.username or ""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{user}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc)), {
        **environ,
        "PGPASSWORD": unquote(parts.password),
    }


def _safe(url: str) -> str:
    return PostgresDatabase(url).describe()
