"""The admin key: generated at first start when unset, printed once, stored only as a hash."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

KEY = re.compile(r"sk-llmeu-admin-[A-Za-z0-9_-]{20,}")


def test_generated_admin_key_is_printed_once_and_stored_hashed(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    first = gateway_factory(config=config, env={"LLMEU_ADMIN_KEY": ""}, data_dir=data_dir)
    printed = KEY.findall(first.output())
    assert len(printed) == 1  # in the `export LLMEU_API_KEY=` line of the notice, once
    token = printed[0]
    models = httpx.get(f"{first.base_url}/models", headers={"authorization": f"Bearer {token}"})
    assert models.status_code == 200
    first.stop()

    second = gateway_factory(config=config, env={"LLMEU_ADMIN_KEY": ""}, data_dir=data_dir)
    assert KEY.findall(second.output()) == []
    models = httpx.get(f"{second.base_url}/models", headers={"authorization": f"Bearer {token}"})
    assert models.status_code == 200
    second.stop()

    database = (data_dir / "llmeu.db").read_bytes()
    assert token.encode() not in database
    with sqlite3.connect(data_dir / "llmeu.db") as conn:
        (stored,) = conn.execute(
            "SELECT secret_hash FROM api_keys WHERE key_id = 'admin'"
        ).fetchone()
    assert len(stored) == 64 and stored not in token


def pasted_export(output: str) -> str:
    """The notice's `export LLMEU_API_KEY=…` line, as a person would paste it."""
    return next(line.strip() for line in output.splitlines() if "export LLMEU_API_KEY=" in line)


def pasted_curl(output: str) -> str:
    """The curl of the start-up notice, as a person would select and paste it."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("curl "))
    command = []
    for line in lines[start:]:
        command.append(line.strip())
        if not line.endswith("\\"):
            break
    return "\n".join(command)


def run_shell(command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})}, check=False)  # fmt: skip


def test_start_up_says_where_the_console_is_and_gives_a_curl_that_works(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    first = gateway_factory(config=config, env={"LLMEU_ADMIN_KEY": ""}, data_dir=data_dir)
    output = first.output()
    assert f"console   {first.url}/console" in output
    curl = pasted_curl(output)
    assert "$LLMEU_API_KEY" in curl and not KEY.search(curl)  # one name for the key
    assert KEY.search(pasted_export(output))
    answered = run_shell(pasted_export(output) + "\n" + curl, {"LLMEU_API_KEY": ""})
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["llmeu"]["endpoint_id"] == "fakeprov-fr-a"
    token = KEY.findall(output)[0]
    first.stop()

    # A restart cannot show the key again: it says so, and how to get a new one.
    second = gateway_factory(config=config, env={"LLMEU_ADMIN_KEY": ""}, data_dir=data_dir)
    output = second.output()
    assert "An admin key already exists" in output and "llmeu keys reset-admin" in output
    curl = pasted_curl(output)
    assert "$LLMEU_API_KEY" in curl and not KEY.search(curl)
    assert json.loads(run_shell(curl, {"LLMEU_API_KEY": token}).stdout)["llmeu"]
    second.stop()

    reset = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "keys", "reset-admin", "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert reset.returncode == 0, reset.stderr
    [new_token] = KEY.findall(reset.stdout)
    assert new_token != token
    third = gateway_factory(config=config, env={"LLMEU_ADMIN_KEY": ""}, data_dir=data_dir)
    for key, status in ((token, 401), (new_token, 200)):
        models = httpx.get(f"{third.base_url}/models", headers={"authorization": f"Bearer {key}"})
        assert models.status_code == status


def test_reset_admin_refuses_a_place_without_a_ledger(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "keys", "reset-admin", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "no ledger" in done.stderr
    assert not KEY.search(done.stdout)


def test_a_configured_admin_key_is_read_from_its_variable(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    gateway = gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))
    output = gateway.output()
    curl = pasted_curl(output)
    assert "$LLMEU_API_KEY" in curl
    assert pasted_export(output) == 'export LLMEU_API_KEY="$LLMEU_ADMIN_KEY"'
    answered = run_shell(pasted_export(output) + "\n" + curl,
                         {"LLMEU_ADMIN_KEY": gateway.admin_key, "LLMEU_API_KEY": ""})  # fmt: skip
    assert json.loads(answered.stdout)["llmeu"]["endpoint_id"] == "fakeprov-fr-a"


def test_an_admin_key_in_the_issued_shape_must_name_the_admin(tmp_path: Path) -> None:
    """`sk-llmeu-example-…` would be looked up as key `example` and never match: refused at
    start with what to write instead, rather than every call failing as an invalid key."""
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "serve", "--data-dir", str(tmp_path),
         "--no-local", "--port", "0"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "LLMEU_ADMIN_KEY": "sk-llmeu-example-admin"},
    )  # fmt: skip
    assert done.returncode != 0
    assert "LLMEU_ADMIN_KEY names key `example`" in done.stderr
    assert "sk-llmeu-admin-" in done.stderr
