"""The hash chain under real gateway processes: kill -9 and a restart, two processes writing
one PostgreSQL ledger at once, checkpoints exported as the gateway runs. `llmeu audit verify`
finds each ledger intact."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from llmeu.evidence.signing_keys import KeyRing, SigningKey
from llmeu.ledger.opening import open_database
from llmeu.ledger.trace_writes import TRACE_COLUMNS
from tests.support.databases import postgres_database_sync
from tests.support.processes import REPO, FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for


def audit_verify(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "audit", "verify", *args],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def calls(gateway: Gateway, count: int, *, stream: bool = False) -> list[str]:
    """`count` answered calls; their trace ids."""
    ids = []
    headers = {"authorization": f"Bearer {gateway.admin_key}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as client:
        for n in range(count):
            body = {"model": "fake-model", "stream": stream,
                    "messages": [{"role": "user", "content": f"call {n}"}]}  # fmt: skip
            response = client.post("/v1/chat/completions", json=body)
            assert response.status_code == 200, response.text
            ids.append(response.headers["x-llmeu-trace-id"])
    return ids


def test_kill_9_and_restart_leave_the_chain_intact_with_interrupted_calls_in_it(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    exported = tmp_path / "checkpoints"
    args = ["--audit-checkpoint-dir", str(exported), "--checkpoint-every", "5"]
    gateway = gateway_factory(config=config, data_dir=tmp_path / "data", args=args)
    answered = calls(gateway, 12)
    wait_for(lambda: len(list(exported.glob("*.jws"))) >= 1, what="a checkpoint export")
    held: list[str] = []

    def hold() -> None:
        headers = {"authorization": f"Bearer {gateway.admin_key}"}
        body = {"model": "fake-model", "stream": True,
                "messages": [{"role": "user", "content": "held [[chunks=1000;delay=500]]"}]}  # fmt: skip
        try:
            with httpx.stream("POST", f"{gateway.url}/v1/chat/completions", json=body,
                              headers=headers, timeout=30) as response:  # fmt: skip
                held.append(response.headers["x-llmeu-trace-id"])
                for _ in response.iter_lines():
                    pass
        except httpx.HTTPError:
            pass

    holder = threading.Thread(target=hold)
    holder.start()
    wait_for(lambda: bool(held), what="the held stream to start")
    gateway.stop(signal.SIGKILL)
    holder.join()

    restarted = gateway_factory(config=config, data_dir=tmp_path / "data", args=args)
    answered += calls(restarted, 3)
    restarted.stop()
    status, output = audit_verify("--data-dir", str(tmp_path / "data"),
                                  "--checkpoints", str(exported))  # fmt: skip
    assert status == 0, output
    assert output.startswith(f"OK: {len(answered) + 1} traces, chain intact up to "), output
    assert "(checkpoint 20" in output, output


@pytest.mark.postgres
def test_two_processes_writing_at_once_make_one_chain(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    key = SigningKey.generate()  # processes on several machines share their key (docs)
    env = {"LLMEU_SIGNING_KEY": key.private_pem().decode()}
    with postgres_database_sync() as url, ThreadPoolExecutor(8) as pool:
        args = ["--database-url", url, "--checkpoint-every", "10"]
        a, b = (
            f.result()
            for f in [pool.submit(gateway_factory, config=config, args=args, env=env)
                      for _ in range(2)]
        )  # fmt: skip
        work = [pool.submit(calls, gw, 15, stream=n % 2 == 0)
                for n, gw in enumerate([a, b, a, b, a, b])]  # fmt: skip
        ids = [trace_id for future in work for trace_id in future.result()]
        assert len(set(ids)) == 90
        a.stop()
        b.stop()
        jwks = tmp_path / "jwks.json"
        jwks.write_text(json.dumps(KeyRing(key).jwks()))
        status, output = audit_verify("--database-url", url, "--jwks", str(jwks))
    assert status == 0, output
    assert output.startswith("OK: 90 traces, chain intact up to trc_"), output
    assert "no checkpoint" not in output, output


async def _forge(database_url: str, copied_from: str) -> None:
    """A final row written straight into the database: a copy of a genuine one, moved."""
    database = open_database(database_url)
    await database.open(create=False)
    columns = [c for c in TRACE_COLUMNS if c != "trace_id"]
    try:
        await database.execute(
            f"INSERT INTO traces (trace_id, {', '.join(columns)}) "
            f"SELECT 'trc_forged', {', '.join(columns)} FROM traces WHERE trace_id = ?",
            (copied_from,),
        )
        await database.execute(
            "UPDATE traces SET endpoint_id = 'us-east-1', sovereignty_class = 'global' "
            "WHERE trace_id = 'trc_forged'"
        )
    finally:
        await database.close()


@pytest.mark.parametrize("ledger", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_row_forged_into_the_database_is_chained_as_suspect_and_named(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path,
    ledger: str,
) -> None:  # fmt: skip
    """The row has no place in the chain when the gateway starts again: it is chained (so
    that it can never leave the chain unnoticed), marked suspect, and `audit verify` names
    it — rather than vouched for as the gateway's own."""
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    key = SigningKey.generate()
    env = {"LLMEU_SIGNING_KEY": key.private_pem().decode()}
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(KeyRing(key).jwks()))
    data = tmp_path / "data"
    with contextlib.ExitStack() as stack:
        url = (
            f"sqlite:///{data / 'llmeu.db'}"
            if ledger == "sqlite"
            else stack.enter_context(postgres_database_sync())
        )
        args = ["--database-url", url, "--checkpoint-every", "2"]
        gateway = gateway_factory(config=config, data_dir=data, args=args, env=env)
        genuine = calls(gateway, 3)
        gateway.stop()
        asyncio.run(_forge(url, genuine[1]))
        restarted = gateway_factory(config=config, data_dir=data, args=args, env=env)
        genuine += calls(restarted, 1)
        restarted.stop()
        assert "trc_forged is final but has no place in the chain" in restarted.output()
        status, output = audit_verify("--database-url", url, "--jwks", str(jwks))
    assert status == 1, output
    findings = [line for line in output.splitlines() if not line.startswith("checkpoints ")]
    assert len(findings) == 1 and findings[0].startswith("suspect: trc_forged (seq 4): "), output
    assert f"between {genuine[2]} and {genuine[3]}" in findings[0], output
