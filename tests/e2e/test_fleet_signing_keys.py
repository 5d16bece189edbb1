"""A fleet's key directory with real gateway processes: a key added under load signs after
SIGHUP with no failed call or receipt, and `llmeu keys rotate-signing` on a directory that
two gateways share (one of them with two workers) makes all of them sign with the new key,
without a restart. Receipts signed before still verify against every gateway's JWKS."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from llmeu.evidence import SigningKey, verify_receipt
from llmeu.evidence.key_directory import key_file_name
from tests.support.processes import (
    ADMIN_KEY,
    REPO,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
)
from tests.support.waiting import wait_for

NOV_1 = 1_604_232_000 * 1_000_000_000  # 2020-11-01T12:00:00Z
DAY = 86_400 * 1_000_000_000
QUESTION = {"model": "fake-model", "messages": [{"role": "user", "content": "Bonjour"}],
            "llmeu": {"receipt": True}}  # fmt: skip
WORKER_STARTED = re.compile(r"worker (\d+) started: (gw_[0-9a-f]+), pid (\d+)")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Outcome:
    after_switch: bool  # the call began once the JWKS listed the new key
    status: int
    receipt: str | None
    detail: str


def add_key(directory: Path, key: SigningKey, now_ns: int) -> None:
    """As an operator or a Secret update would: a whole file appears under its final name."""
    name = key_file_name(key, now_ns)
    temporary = directory / f".{name}.tmp"
    temporary.write_bytes(key.private_pem())
    temporary.chmod(0o600)
    temporary.rename(directory / name)


def key_directory(tmp_path: Path) -> tuple[Path, SigningKey]:
    directory = tmp_path / "fleet-keys"
    directory.mkdir(mode=0o700)
    first = SigningKey.generate()
    add_key(directory, first, NOV_1)
    return directory, first


def fleet_gateway(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path, poll: str
) -> tuple[Gateway, Path, SigningKey]:
    """A gateway signing from a new key directory holding one key, looking at it every
    `poll` seconds: the gateway, the directory and the key."""
    directory, first = key_directory(tmp_path)
    gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)),
        args=["--signing-key-dir", str(directory), "--signing-key-poll", poll],
    )
    return gateway, directory, first


def jwks(gateway: Gateway) -> dict[str, list[dict[str, str]]]:
    response = httpx.get(f"{gateway.url}/.well-known/llmeu/jwks.json", timeout=30)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def kids(gateway: Gateway) -> list[str]:
    return [key["kid"] for key in jwks(gateway)["keys"]]


def kid_of(receipt: str, published: dict[str, list[dict[str, str]]]) -> str:
    check = verify_receipt(receipt, published)
    assert check.valid, check.line
    assert check.kid is not None
    return check.kid


def client(gateway: Gateway) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    )


def call(http: httpx.Client, after_switch: bool = False) -> Outcome:
    try:
        response = http.post("/v1/chat/completions", json=QUESTION)
    except httpx.HTTPError as error:
        return Outcome(after_switch, 0, None, repr(error))
    return Outcome(
        after_switch, response.status_code, response.headers.get("x-llmeu-receipt"), response.text
    )


@contextmanager
def load(
    gateways: list[Gateway], switched: threading.Event, per_gateway: int = 2
) -> Iterator[list[Outcome]]:
    """Client loops calling with receipts until the block ends; yields what they got."""
    outcomes: list[Outcome] = []
    stop = threading.Event()

    def loop(gateway: Gateway) -> None:
        with client(gateway) as http:
            while not stop.is_set():
                outcomes.append(call(http, switched.is_set()))

    threads = [
        threading.Thread(target=loop, args=(g,)) for g in gateways for _ in range(per_gateway)
    ]
    for thread in threads:
        thread.start()
    try:
        yield outcomes
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)


def calls_around(
    gateways: list[Gateway], switch: Callable[[], T], per_gateway: int = 2, enough: int = 10
) -> tuple[list[Outcome], T]:
    """Client loops on `gateways` make `enough` calls, then `switch` runs, then `enough` more
    begin after it returned; every call answered with a receipt. What the calls got, and
    what `switch` returned."""
    switched = threading.Event()
    with load(gateways, switched, per_gateway) as outcomes:
        wait_for(lambda: len(outcomes) >= enough, what="calls before the switch")
        switched_to = switch()
        switched.set()
        wait_for(lambda: sum(o.after_switch for o in outcomes) >= enough, what="calls after it")
    failed = [o for o in outcomes if o.status != 200 or o.receipt is None]
    assert failed == [], failed[:3]
    return outcomes, switched_to


def call_once(gateway: Gateway) -> Outcome:
    with client(gateway) as http:
        return call(http)


def rotate_signing(*args: str) -> dict[str, Any]:
    """`llmeu keys rotate-signing … --json`: what it printed."""
    rotated = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "keys", "rotate-signing", *args, "--json"],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
    )  # fmt: skip
    assert rotated.returncode == 0, rotated.stderr
    result: dict[str, Any] = json.loads(rotated.stdout)
    return result


def receipt_verify_cli(receipt: str, jwks_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "receipt", "verify", receipt, "--jwks", jwks_url],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
    )  # fmt: skip


def test_a_key_added_under_load_signs_after_sighup_and_nothing_fails(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    # No poll within the test: the new key must come from SIGHUP alone.
    gateway, directory, first = fleet_gateway(gateway_factory, fake_upstream, tmp_path, "3600")
    assert kids(gateway) == [first.kid]
    second = SigningKey.generate()

    def add_and_signal() -> None:
        add_key(directory, second, NOV_1 + DAY)
        assert kids(gateway) == [first.kid]  # files alone change nothing before a look
        gateway.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: kids(gateway) == [second.kid, first.kid], what="the new key published")

    outcomes, _ = calls_around([gateway], add_and_signal, per_gateway=4, enough=20)
    published = jwks(gateway)
    signed_by = [(o.after_switch, kid_of(o.receipt or "", published)) for o in outcomes]
    assert {kid for after, kid in signed_by if after} == {second.kid}
    assert (False, first.kid) in signed_by  # under load before the switch too
    old = next(o.receipt for o in outcomes if not o.after_switch)
    assert old is not None and kid_of(old, published) == first.kid
    checked = receipt_verify_cli(old, f"{gateway.url}/.well-known/llmeu/jwks.json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("valid: ")
    assert "signing keys reloaded" in gateway.output()
    assert gateway.proc.poll() is None


def test_a_broken_key_file_keeps_the_keys_in_use_and_names_the_file(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    gateway, directory, first = fleet_gateway(gateway_factory, fake_upstream, tmp_path, "0.2")
    broken = directory / key_file_name(SigningKey.generate(), NOV_1 + DAY)
    broken.write_text("-----BEGIN PRIVATE KEY-----\ncut short\n")
    broken.chmod(0o600)
    wait_for(lambda: str(broken) in gateway.output(), what="the broken file named in the log")
    assert "signing keys not reloaded, the previous ones stay" in gateway.output()
    outcome = call_once(gateway)
    assert outcome.status == 200 and outcome.receipt is not None
    assert kid_of(outcome.receipt, jwks(gateway)) == first.kid

    broken.unlink()
    second = SigningKey.generate()
    add_key(directory, second, NOV_1 + 2 * DAY)
    wait_for(lambda: kids(gateway) == [second.kid, first.kid], what="the next good key")


def test_a_broken_key_directory_stops_the_start_naming_the_file(tmp_path: Path) -> None:
    directory, _ = key_directory(tmp_path)
    (directory / "notes.txt").write_text("remember to rotate")
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "serve", "--no-local", "--port", "0",
         "--data-dir", str(tmp_path / "data"), "--signing-key-dir", str(directory)],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
        env={**os.environ, "LLMEU_ADMIN_KEY": ADMIN_KEY},
    )  # fmt: skip
    assert done.returncode != 0
    assert f"{directory / 'notes.txt'}: neither a PEM private key" in done.stdout + done.stderr


@pytest.mark.redis
def test_rotate_signing_reaches_every_gateway_sharing_the_directory_without_a_restart(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    directory, first = key_directory(tmp_path)
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    keys = ["--signing-key-dir", str(directory), "--signing-key-poll", "0.5"]
    single = gateway_factory(config=config, args=keys)
    workers = gateway_factory(
        config=config,
        args=[*keys, "--workers", "2", "--redis-url", "redis://127.0.0.1:6379/0",
              "--log-level", "info"],
    )  # fmt: skip
    wait_for(lambda: workers.output().count("Application startup complete") == 2,
             what="both workers ready")  # fmt: skip
    worker_pids = set(WORKER_STARTED.findall(workers.output()))
    old_receipts = []
    for gateway in (single, workers):
        outcome = call_once(gateway)
        assert outcome.receipt is not None
        assert kid_of(outcome.receipt, jwks(gateway)) == first.kid
        old_receipts.append(outcome.receipt)

    def rotate() -> str:
        result = rotate_signing("--signing-key-dir", str(directory))
        new_kid: str = result["active"]
        assert result["published"] == [new_kid, first.kid]
        # Each process says when it read the new key: the worker processes too.
        reloaded = f"signing keys reloaded: {new_kid} signs"
        wait_for(lambda: reloaded in single.output(), what="the single process reading it")
        wait_for(lambda: workers.output().count(reloaded) == 2, what="both workers reading it")
        return new_kid

    outcomes, new_kid = calls_around([single, workers], rotate)
    for gateway in (single, workers):
        published = jwks(gateway)
        assert [k["kid"] for k in published["keys"]] == [new_kid, first.kid]
        for receipt in old_receipts:
            assert kid_of(receipt, published) == first.kid
        assert {kid_of(o.receipt or "", published) for o in outcomes if o.after_switch} == {new_kid}
    assert single.proc.poll() is None and workers.proc.poll() is None
    assert set(WORKER_STARTED.findall(workers.output())) == worker_pids  # no worker restarted
    assert len(list(directory.glob(".*"))) == 0  # the temporary file was renamed


def signs_with(gateway: Gateway, kid: str) -> bool:
    outcome = call_once(gateway)
    assert outcome.status == 200 and outcome.receipt is not None, outcome.detail
    return header_kid(outcome.receipt) == kid


def header_kid(receipt: str) -> str:
    """The `kid` a receipt names, read without verifying (a worker that has not read the
    new key yet serves a JWKS without it)."""
    header = receipt.split(".")[0]
    kid: str = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"]
    return kid


def test_rotating_the_data_dirs_key_needs_no_restart_either(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    """One machine's generated key (no --signing-key-dir): the same look at the files."""
    data_dir = tmp_path / "data"
    gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)),
        data_dir=data_dir, args=["--signing-key-poll", "0.2"],
    )  # fmt: skip
    [first] = kids(gateway)
    before = call_once(gateway).receipt
    new_kid = rotate_signing("--data-dir", str(data_dir))["active"]
    wait_for(partial(signs_with, gateway, new_kid), what="the rotated key signing")
    published = jwks(gateway)
    assert [k["kid"] for k in published["keys"]] == [new_kid, first]
    assert before is not None and kid_of(before, published) == first


def test_a_key_rotated_in_ahead_is_published_at_once_and_does_not_sign_yet(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    gateway, directory, first = fleet_gateway(gateway_factory, fake_upstream, tmp_path, "0.2")
    result = rotate_signing("--signing-key-dir", str(directory), "--activate-in", "3600")
    assert result["active"] == first.kid and result["published"] == [first.kid, result["new"]]
    wait_for(lambda: kids(gateway) == [first.kid, result["new"]], what="the key published")
    outcome = call_once(gateway)
    assert outcome.receipt is not None and header_kid(outcome.receipt) == first.kid


@pytest.mark.redis
def test_the_reload_route_reads_the_keys_again_in_every_worker_and_says_what_changed(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    directory, first = key_directory(tmp_path)
    # No poll within the test: the new key must come from the route alone.
    workers = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)),
        args=["--signing-key-dir", str(directory), "--signing-key-poll", "3600",
              "--workers", "2", "--redis-url", "redis://127.0.0.1:6379/0", "--log-level", "info"],
    )  # fmt: skip
    wait_for(lambda: workers.output().count("Application startup complete") == 2,
             what="both workers ready")  # fmt: skip
    second = SigningKey.generate()
    add_key(directory, second, NOV_1 + DAY)
    with client(workers) as http:
        reloaded = http.post("/v1/platform/reload")
        assert reloaded.status_code == 200, reloaded.text
        assert reloaded.json()["signing_keys"] == {
            "changed": True, "active_kid": second.kid, "previous_active_kid": first.kid,
            "added": [second.kid], "removed": [],
        }  # fmt: skip
        event = http.get("/v1/platform/admin-events", params={"limit": 1}).json()["data"][0]
        assert event["action"] == "config.reload"
        assert event["before_sha256"] != event["after_sha256"], "the keys changed"
        # The other worker reads them on the route's notice, with no poll and no signal.
        read = f"signing keys reloaded: {second.kid} signs"
        wait_for(lambda: workers.output().count(read) == 2, what="both workers reading it")
        for _ in range(6):  # new connections: both workers answer some
            assert signs_with(workers, second.kid)

        again = http.post("/v1/platform/reload").json()["signing_keys"]
        assert again["changed"] is False and again["active_kid"] == second.kid
        broken = directory / key_file_name(SigningKey.generate(), NOV_1 + 2 * DAY)
        broken.write_text("-----BEGIN PRIVATE KEY-----\ncut short\n")
        broken.chmod(0o600)
        failed = http.post("/v1/platform/reload")
        assert failed.status_code == 200, "the configuration was reloaded; the keys stay"
        keys = failed.json()["signing_keys"]
        assert keys["changed"] is False and keys["active_kid"] == second.kid
        assert (
            keys["error"].startswith("the signing keys in use stay: ")
            and str(broken) in (keys["error"])
        )
