"""Backups of a ledger a real gateway process is writing: `llmeu ledger backup` runs while a
client keeps calling, the backup restores into a fresh ledger, and `llmeu audit verify` passes
on it. Verified against the checkpoints the gateway exported after the backup was taken, the
same restored ledger names exactly the chain positions it lacks. A restore onto the ledger
the gateway is running on is refused, even with `--force`."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.evidence.signing_keys import KeyRing, SigningKey
from tests.support.databases import postgres_database_sync
from tests.support.processes import REPO, FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for


def llmeu(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", *args],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False, env=os.environ,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


class ClientLoop:
    """Calls the gateway one after another, streamed or not, until stopped."""

    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        self.answered: list[str] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="client-loop")

    def __enter__(self) -> ClientLoop:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        headers = {"authorization": f"Bearer {self.gateway.admin_key}"}
        with httpx.Client(base_url=self.gateway.url, headers=headers, timeout=30) as client:
            n = 0
            while not self._stop.is_set():
                body = {"model": "fake-model", "stream": n % 2 == 0,
                        "messages": [{"role": "user", "content": f"call {n}"}]}  # fmt: skip
                response = client.post("/v1/chat/completions", json=body)
                if response.status_code == 200:
                    self.answered.append(response.headers["x-llmeu-trace-id"])
                else:
                    self.failures.append(f"{response.status_code} {response.text[:200]}")
                n += 1


def exported_positions(directory: Path) -> list[int]:
    return sorted(int(p.stem.removeprefix("checkpoint-")) for p in directory.glob("*.jws"))


@pytest.mark.parametrize("ledger", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_backup_taken_under_load_restores_verifies_and_names_what_came_after(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path,
    ledger: str,
) -> None:  # fmt: skip
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    key = SigningKey.generate()
    env = {"LLMEU_SIGNING_KEY": key.private_pem().decode()}
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(KeyRing(key).jwks()))
    exported = tmp_path / "checkpoints"  # outside the database: what no backup carries
    backup = tmp_path / "ledger.backup"
    with contextlib.ExitStack() as stack:
        url, restored = (
            (f"sqlite:///{tmp_path / 'data' / 'llmeu.db'}",
             f"sqlite:///{tmp_path / 'restored' / 'llmeu.db'}")
            if ledger == "sqlite"
            else (stack.enter_context(postgres_database_sync()),
                  stack.enter_context(postgres_database_sync()))
        )  # fmt: skip
        args = ["--database-url", url, "--checkpoint-every", "5",
                "--audit-checkpoint-dir", str(exported)]  # fmt: skip
        gateway = gateway_factory(config=config, data_dir=tmp_path / "data", args=args, env=env)
        with ClientLoop(gateway) as load:
            wait_for(lambda: len(load.answered) >= 20, what="calls before the backup")
            during = len(load.answered)
            status, output = llmeu("ledger", "backup", "--to", str(backup),
                                   "--database-url", url, "--json")  # fmt: skip
            assert status == 0, output
            held: dict[str, Any] = json.loads(output)
            assert len(load.answered) > during, "the gateway answered no call during the backup"
            head = held["chain_head"]["position"]
            wait_for(lambda: max(exported_positions(exported), default=0) > head + 5,
                     what="a checkpoint exported well after the backup")  # fmt: skip
            status, output = llmeu("ledger", "restore", "--from", str(backup),
                                   "--database-url", url, "--force")  # fmt: skip
            assert status == 1 and "a gateway is running on" in output, output
        gateway.stop()
        assert not load.failures, load.failures
        assert held["chain_intact"] and held["traces"] >= head >= 20, held

        status, output = llmeu("audit", "verify", "--database-url", url, "--jwks", str(jwks),
                               "--checkpoints", str(exported))  # fmt: skip
        assert status == 0, output  # the ledger itself: every checkpoint matches

        status, output = llmeu("ledger", "restore", "--from", str(backup),
                               "--database-url", restored)  # fmt: skip
        assert status == 0, output
        assert f"chain head at position {head} ({held['chain_head']['trace_id']})" in output

        status, output = llmeu("audit", "verify", "--database-url", restored, "--jwks", str(jwks))
        assert status == 0, output
        assert output.startswith(
            f"OK: {head} traces, chain intact up to {held['chain_head']['trace_id']}"
        ), output

        newest = max(exported_positions(exported))
        status, output = llmeu("audit", "verify", "--database-url", restored, "--jwks", str(jwks),
                               "--checkpoints", str(exported))  # fmt: skip
    assert status == 1, output
    findings = [line for line in output.splitlines() if not line.startswith("checkpoints ")]
    assert len(findings) == 1, output
    assert findings[0].startswith(
        f"truncated after checkpoint: the ledger ends at chain position {head}; the checkpoint "
        f"signed 20"
    ), output
    assert f": positions {head + 1}..{newest} are missing ({newest - head} row(s))" in output
