"""A rolling upgrade as it happens: the previous release and this one on one PostgreSQL.

The previous release is taken from this repository's history
(tests/support/releases.py) and runs from its own tree and environment. It
creates the ledger; this release starts beside it under load and migrates the
schema (`llmeu migrate`, then `llmeu serve --no-migrate`, as deploy/kubernetes
does) while the older process serves; then each process is restarted in turn
(SIGTERM, start again) while clients keep calling both, streaming and not.
Every call a client got a trace id for has exactly one trace, final; the
ledger verifies with this release's `llmeu audit verify` and with the previous
release's; no process logged a database or schema error.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.evidence.signing_keys import SigningKey
from llmeu.ledger.schema import SCHEMA_VERSION
from tests.support.databases import fetch, postgres_database_sync
from tests.support.processes import (
    REPO,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_gateway,
)
from tests.support.releases import NoHistory, Release, install_previous
from tests.support.waiting import wait_for

pytestmark = pytest.mark.postgres

CLIENTS = 3
CALLS_PER_PHASE = 5  # completed calls of each kind each live process serves in every phase
# What a process must never log: a failed statement, a missing table or column, a
# refused schema, a traceback.
TROUBLE = re.compile(
    r"traceback|database|schema|migrat|column|relation|does not exist|ledger_unavailable|"
    r"startup failed|\berror\b",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory) -> Release:
    try:
        return install_previous(SCHEMA_VERSION, tmp_path_factory.mktemp("previous"))
    except NoHistory as error:
        pytest.skip(f"no previous release to upgrade from: {error}")


@dataclass(frozen=True)
class Seen:
    process: str
    trace_id: str
    stream: bool
    status: int
    complete: bool


class Load:
    """Client threads calling the live processes, streaming and not, until stopped; each
    call on a fresh connection, as from many clients."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.targets: dict[str, Gateway] = {}
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, args=(i,)) for i in range(CLIENTS)]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def serve(self, name: str, gateway: Gateway) -> None:
        with self._lock:
            self.targets[name] = gateway

    def withdraw(self, name: str) -> None:
        with self._lock:
            del self.targets[name]

    def completed(self, name: str) -> Counter[bool]:
        """Calls of process `name` that completed, by streaming or not."""
        with self._lock:
            return Counter(s.stream for s in self.seen if s.process == name and s.complete)

    def served(self, *names: str) -> bool:
        return all(min(self.completed(n)[k] for k in (True, False)) >= CALLS_PER_PHASE
                   for n in names)  # fmt: skip

    def _client(self, index: int) -> None:
        rng = random.Random(index)
        # No connection is kept: every call opens its own, as from many clients, and none
        # is left to a process that has stopped.
        with httpx.Client(
            headers={"authorization": f"Bearer {self.token}"},
            limits=httpx.Limits(max_keepalive_connections=0),
            timeout=30,
        ) as client:
            while not self._stop.is_set():
                with self._lock:
                    targets = list(self.targets.items())
                if not targets:
                    self._stop.wait(0.01)
                    continue
                name, gateway = rng.choice(targets)
                stream, chunks = rng.random() < 0.5, rng.randint(2, 6)
                seen = _call(client, name, gateway, stream=stream, chunks=chunks)
                if seen is not None:
                    with self._lock:
                        self.seen.append(seen)


def _call(
    client: httpx.Client, name: str, gateway: Gateway, *, stream: bool, chunks: int
) -> Seen | None:
    """The call's trace id and how it ended; None when it never reached a process (the one
    it was sent to had stopped)."""
    body: dict[str, Any] = {"model": "fake-model", "stream": stream,
                            "messages": [{"role": "user", "content": f"u [[chunks={chunks}]]"}]}  # fmt: skip
    trace_id, status, complete = None, 0, False
    try:
        with client.stream("POST", f"{gateway.base_url}/chat/completions", json=body) as response:
            trace_id = response.headers.get("x-llmeu-trace-id")
            status = response.status_code
            text = response.read().decode()
        complete = status == 200 and (not stream or "data: [DONE]" in text)
    except httpx.TransportError:
        pass
    return None if trace_id is None else Seen(name, trace_id, stream, status, complete)


class Fleet:
    """The processes of both releases on one ledger; each start in a directory of its own,
    so that each keeps its log."""

    def __init__(self, tmp: Path, release: Release, config: str, url: str, key: Path) -> None:
        self.tmp, self.release, self.config, self.url = tmp, release, config, url
        self.args = ["--database-url", url, "--signing-key-file", str(key),
                     "--checkpoint-every", "20", "--shutdown-grace", "10"]  # fmt: skip
        self.started: list[tuple[str, Gateway]] = []
        self._count = itertools.count(1)

    def start(self, kind: str) -> tuple[str, Gateway]:
        name = f"{kind}-{next(self._count)}"
        where = self.tmp / name
        if kind == "previous":
            gateway = start_gateway(where, config=self.config, args=self.args,
                                    python=str(self.release.python), code=self.release.code,
                                    env=self.release.env)  # fmt: skip
        else:  # migrated by `llmeu migrate` first, as in deploy/kubernetes
            gateway = start_gateway(where, config=self.config, args=[*self.args, "--no-migrate"])
        self.started.append((name, gateway))
        return name, gateway

    def logs(self) -> dict[str, str]:
        return {name: gateway.output() for name, gateway in self.started}

    def kill_all(self) -> None:
        for _, gateway in self.started:
            gateway.kill()


@pytest.fixture
def fleet(tmp_path: Path, previous: Release, fake_upstream: FakeUpstream) -> Iterator[Fleet]:
    key = tmp_path / "signing.pem"
    key.write_bytes(SigningKey.generate().private_pem())
    key.chmod(0o600)
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    with postgres_database_sync() as url:
        fleet = Fleet(tmp_path, previous, config, url, key)
        try:
            yield fleet
        finally:
            fleet.kill_all()


def restart(load: Load, fleet: Fleet, name: str, gateway: Gateway, kind: str) -> str:
    """SIGTERM under load (clients still call it while it drains), then a new process of the
    same release; returns its name."""
    assert gateway.stop() == 0, gateway.output()
    load.withdraw(name)
    new_name, new_gateway = fleet.start(kind)
    load.serve(new_name, new_gateway)
    return new_name


def run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_previous_release_and_this_one_share_a_ledger_through_restarts(
    fleet: Fleet, previous: Release, tmp_path: Path
) -> None:
    assert previous.highest_migration < SCHEMA_VERSION
    old, old_gateway = fleet.start("previous")  # it creates the ledger, at its schema
    versions = {
        r["version"] for r in fetch_sync(fleet.url, "SELECT version FROM schema_migrations")
    }
    assert max(versions) == previous.highest_migration
    with Load(old_gateway.admin_key) as load:
        load.serve(old, old_gateway)
        wait_for(lambda: load.served(old), 60, "calls to the previous release")
        # This release's migrations, while the older one serves, as its own step.
        migrated = run([sys.executable, "-m", "llmeu.cli.main", "migrate",
                        "--database-url", fleet.url], REPO, {**os.environ})  # fmt: skip
        assert f"applied {SCHEMA_VERSION}: " in migrated
        assert migrated.splitlines()[-1].startswith(f"schema version {SCHEMA_VERSION} in ")
        new, new_gateway = fleet.start("current")
        load.serve(new, new_gateway)
        instances = fetch_sync(fleet.url, "SELECT schema_version FROM instances")
        # A release from before migration 15 records no schema version (NULL).
        older = previous.highest_migration if previous.highest_migration >= 15 else 0
        assert sorted(r["schema_version"] or 0 for r in instances) == [older, SCHEMA_VERSION]
        wait_for(lambda: load.served(old, new), 60, "calls to both releases")
        changes(new_gateway)
        old = restart(load, fleet, old, old_gateway, "previous")
        wait_for(lambda: load.served(old, new), 60, "calls after the older one restarted")
        new = restart(load, fleet, new, new_gateway, "current")
        wait_for(lambda: load.served(old, new), 60, "calls after the newer one restarted")
        jwks = httpx.get(f"{load.targets[new].url}/.well-known/llmeu/jwks.json").json()
        last = dict(load.targets)
    for gateway in last.values():
        assert gateway.stop() == 0, gateway.output()

    seen = {s.trace_id: s for s in load.seen}
    assert len(seen) == len(load.seen)  # a trace id is never handed out twice
    assert [s for s in load.seen if not s.complete] == []  # nobody saw a call fail
    traces = {r["trace_id"]: r["status"] for r in fetch_sync(fleet.url,
              "SELECT trace_id, status FROM traces")}  # fmt: skip
    assert {t: traces.get(t) for t in seen} == dict.fromkeys(seen, "completed")
    # Both stopped cleanly: nothing is left in progress. An in-progress row that committed
    # after its call's final row (PostgreSQL writes them side by side) is shadowed by the
    # final one when read, and removed at the next sweep (llmeu.ledger.trace_writes).
    left = {r["trace_id"] for r in fetch_sync(fleet.url, "SELECT trace_id FROM open_calls")}
    assert {t: traces.get(t) for t in left} == dict.fromkeys(left, "completed")
    by_release = Counter(s.process.split("-")[0] for s in load.seen)
    assert min(by_release["previous"], by_release["current"]) >= 4 * CALLS_PER_PHASE

    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(jwks))
    verify = ["audit", "verify", "--database-url", fleet.url, "--jwks", str(jwks_file)]
    with ThreadPoolExecutor(2) as pool:  # this release's verifier and the previous one's
        reports = pool.map(lambda args: run(*args), [
            ([sys.executable, "-m", "llmeu.cli.main", *verify], REPO, {**os.environ}),
            (previous.command(*verify), previous.code, {**os.environ, **previous.env}),
        ])  # fmt: skip
        ours, theirs = reports
    # The admin events are rows of the one chain: this release counts them apart, and so
    # does a previous one that knows them; one from before them verifies them as the
    # traces they are to it.
    events = len(fetch_sync(fleet.url, "SELECT trace_id FROM admin_events"))
    assert events == 2
    apart = f"OK: {len(traces) - events} traces and {events} admin events"
    assert ours.startswith(apart), ours
    assert theirs.startswith((apart, f"OK: {len(traces)} traces")), theirs
    # Checkpoints (whichever process of either release signed first) checked against the key.
    assert ours.splitlines()[-1] == f"checkpoints checked against the keys of --jwks {jwks_file}"

    trouble = {name: [line for line in log.splitlines() if TROUBLE.search(line)]
               for name, log in fleet.logs().items()}  # fmt: skip
    assert trouble == {name: [] for name in trouble}


def changes(gateway: Gateway) -> None:
    """Administrative changes through this release while the previous one serves and
    chains calls: a key created and revoked (the older process applies the revocation)."""
    admin = httpx.Client(base_url=gateway.url, timeout=30,
                         headers={"authorization": f"Bearer {gateway.admin_key}"})  # fmt: skip
    with admin:
        created = admin.post("/v1/platform/keys", json={"name": "rolled"})
        assert created.status_code == 201, created.text
        revoked = admin.delete(f"/v1/platform/keys/{created.json()['id']}")
        assert revoked.status_code == 200, revoked.text


def fetch_sync(url: str, sql: str) -> list[dict[str, object]]:
    return asyncio.run(fetch(url, sql))
