"""`llmeu serve --workers 2`: one port, two processes, one ledger; a dead worker's calls are
recorded at once and the worker replaced; SIGTERM drains both; SIGHUP and the reload route
change the configuration for new calls only."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.faults.helpers import parse_sse, trace
from tests.support.processes import (
    ADMIN_KEY,
    REPO,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    free_port,
)
from tests.support.streams import dechunk, open_stream, read_to_end, read_until
from tests.support.waiting import wait_for

pytestmark = pytest.mark.redis

REDIS = ["--redis-url", "redis://127.0.0.1:6379/0"]
READY = "Application startup complete"
STARTED = re.compile(r"worker (\d+) started: (gw_[0-9a-f]+), pid (\d+)")


@pytest.fixture
def workers(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    gateway = gateway_factory(config=config, args=["--workers", "2", *REDIS, "--log-level", "info"])
    wait_for(lambda: len(started(gateway)) == 2, what="both workers")
    # Forked is not serving yet: each worker says when its start-up is complete.
    wait_for(lambda: gateway.output().count(READY) == 2, what="both workers ready")
    return gateway


def started(gateway: Gateway) -> dict[str, int]:
    """instance id → pid, of every worker the supervisor started."""
    return {m[2]: int(m[3]) for m in STARTED.finditer(gateway.output())}


def admin(gateway: Gateway) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    )


def test_more_than_one_worker_needs_redis(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "serve", "--workers", "2", "--no-local",
         "--port", str(free_port()), "--data-dir", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
        env={**os.environ, "LLMEU_ADMIN_KEY": ADMIN_KEY},
    )  # fmt: skip
    assert done.returncode == 2
    assert "--workers 2 needs --redis-url" in done.stderr


def test_two_workers_serve_one_port_and_the_ledger_counts_every_call(workers: Gateway) -> None:
    served: set[str] = set()
    for _ in range(40):  # a new connection each time: the workers take turns accepting
        with admin(workers) as client:
            response = client.post(
                "/v1/chat/completions",
                json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert response.status_code == 200
            served.add(trace(workers, response.headers["x-llmeu-trace-id"])["instance_id"])
    assert served <= set(started(workers)) and len(served) == 2
    with admin(workers) as client:
        totals = client.get("/v1/platform/usage", params={"group_by": "status"}).json()["totals"]
    assert totals["requests"] == totals["completed"] == 40


def test_a_killed_worker_is_replaced_and_its_calls_recorded_at_once(workers: Gateway) -> None:
    sock = open_stream(workers, "long [[chunks=2000;delay=50]]")
    head = read_until(sock, b'"content"', 2)
    trace_id = re.search(rb"x-llmeu-trace-id: (trc_\w+)", head)
    assert trace_id is not None
    serving = trace(workers, trace_id[1].decode())["instance_id"]
    os.kill(started(workers)[serving], signal.SIGKILL)
    assert b"[DONE]" not in head + read_to_end(sock)  # the stream is cut
    sock.close()
    found = wait_for(
        lambda: (t := trace(workers, trace_id[1].decode()))["status"] == "interrupted" and t,
        timeout=10,
        what="the call recorded interrupted",
    )
    assert found["error"]["code"] == "gateway_interrupted"
    wait_for(lambda: len(started(workers)) == 3, what="a new worker")
    with admin(workers) as client:
        assert client.get("/readyz").status_code == 200


def test_sigterm_drains_both_workers(workers: Gateway) -> None:
    streams = [open_stream(workers, "[[chunks=20;delay=50]]") for _ in range(4)]
    try:
        heads = [read_until(sock, b'"content"', 1) for sock in streams]
        assert workers.stop(signal.SIGTERM) == 0
        for sock, head in zip(streams, heads, strict=True):
            body = dechunk((head + read_to_end(sock)).partition(b"\r\n\r\n")[2])
            _, done = parse_sse(body)
            assert done  # finished within the grace, not cut
    finally:
        for sock in streams:
            sock.close()


def test_sighup_reloads_every_worker_for_new_calls(
    workers: Gateway, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    config_path = tmp_path / f"config-{workers.port}.yaml"
    sock = open_stream(workers, "[[chunks=30;delay=50]]")
    head = read_until(sock, b'"content"', 1)
    extra = fake_endpoint("fakeprov-fr-b", fake_upstream, aliases=("second-model",))
    config_path.write_text(config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), extra))
    workers.proc.send_signal(signal.SIGHUP)

    def reloaded_everywhere() -> bool:
        for _ in range(6):  # new connections reach both workers
            with admin(workers) as client:
                models = [m["id"] for m in client.get("/v1/models").json()["data"]]
            if "second-model" not in models:
                return False
        return True

    wait_for(reloaded_everywhere, what="both workers to reload")
    body = dechunk((head + read_to_end(sock)).partition(b"\r\n\r\n")[2])
    sock.close()
    _, done = parse_sse(body)
    assert done  # the call in flight finished on the configuration it started with

    def reload_events() -> list[dict[str, object]]:
        with admin(workers) as client:
            found = client.get("/v1/platform/admin-events", params={"action": "config.reload"})
        return list(found.json()["data"])

    # Each worker that reloaded on the signal records it: an admin event without a key.
    wait_for(lambda: len(reload_events()) == 2, what="an admin event per worker")
    for event in reload_events():
        assert (event["actor"], event["role"], event["source"]) == ("signal:SIGHUP", None, None)
        assert event["before_sha256"] != event["after_sha256"]  # an endpoint came


def test_an_invalid_reload_keeps_serving_and_says_why(workers: Gateway, tmp_path: Path) -> None:
    config_path = tmp_path / f"config-{workers.port}.yaml"
    valid = config_path.read_text()
    config_path.write_text(valid.replace("sovereignty_class: eu_sovereign", "sovereignty_class: x"))
    with admin(workers) as client:
        refused = client.post("/v1/platform/reload")
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["code"] == "invalid_configuration" and "sovereignty_class" in error["message"]
        answered = client.post(
            "/v1/chat/completions",
            json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert answered.status_code == 200


def test_the_reload_route_reaches_the_other_worker(
    workers: Gateway, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    config_path = tmp_path / f"config-{workers.port}.yaml"
    extra = fake_endpoint("fakeprov-fr-b", fake_upstream, aliases=("third-model",))
    config_path.write_text(config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), extra))
    with admin(workers) as client:
        reloaded = client.post("/v1/platform/reload")
    assert reloaded.status_code == 200 and reloaded.json()["endpoints"] == 2
    for _ in range(8):  # new connections reach both workers, each at once
        with admin(workers) as client:
            models = [m["id"] for m in client.get("/v1/models").json()["data"]]
        assert "third-model" in models


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status  # reparented and ended, not yet reaped: gone


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux tells of a parent's end")
def test_workers_end_with_a_supervisor_killed_outright(workers: Gateway) -> None:
    """Orphaned workers would go on accepting on the port, which a new start could not bind."""
    # The newest worker of each slot: one replaced meanwhile (a start that failed on a
    # loaded machine) is the supervisor's to restart, not what this test is about.
    pids = list({int(m[1]): int(m[3]) for m in STARTED.finditer(workers.output())}.values())
    assert len(pids) == 2 and all(_running(pid) for pid in pids), workers.output()
    workers.kill()
    wait_for(lambda: not any(_running(pid) for pid in pids), timeout=30, what="workers ended")
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{workers.url}/healthz", timeout=2)
