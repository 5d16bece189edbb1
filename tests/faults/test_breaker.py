"""The circuit breaker: stops sending to an endpoint that keeps failing, probes it back."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults.helpers import api_get, chat, trace
from tests.support.processes import (
    REPO,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    free_port,
)
from tests.support.waiting import wait_for


class Restartable:
    """A fake upstream that can be stopped and started again on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fake_upstream", "--port", str(self.port)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def answers() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{self.port}/_stats", timeout=1).is_success
            except httpx.HTTPError:
                return False

        wait_for(answers, what="the upstream to start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def restartable() -> Iterator[Restartable]:
    upstream = Restartable()
    yield upstream
    upstream.stop()


def health(gateway: Gateway, endpoint_id: str) -> dict[str, Any]:
    endpoints = api_get(gateway, "/v1/platform/endpoints").json()["data"]
    found: dict[str, Any] = next(e for e in endpoints if e["endpoint_id"] == endpoint_id)["health"]
    return found


def served_by(gateway: Gateway) -> list[str]:
    outcome = chat(gateway, "hi")
    assert outcome.status == 200
    return [a["endpoint_id"] for a in trace(gateway, outcome.trace_id)["attempts"]]


def test_opens_after_the_threshold_and_closes_after_a_good_probe(
    gateway_factory: Callable[..., Gateway],
    fake_upstream: FakeUpstream,
    restartable: Restartable,
    tmp_path: Path,
) -> None:
    flaky = fake_endpoint("flaky-fr-a", restartable)  # type: ignore[arg-type]
    backup = fake_endpoint("backup-fr-b", fake_upstream, priority=20)
    gateway = gateway_factory(
        config=config_yaml(flaky, backup),
        args=["--breaker-threshold", "3", "--breaker-cooldown", "1"],
    )
    # The flaky upstream is down: connections are refused.
    for _ in range(3):
        assert served_by(gateway) == ["flaky-fr-a", "backup-fr-b"]
    assert health(gateway, "flaky-fr-a")["state"] == "open"
    assert served_by(gateway) == ["backup-fr-b"]  # no attempt on the open circuit
    restartable.start()
    wait_for(lambda: health(gateway, "flaky-fr-a")["state"] == "half_open", what="the cooldown")
    assert served_by(gateway) == ["flaky-fr-a"]  # the probe, and it succeeded
    assert health(gateway, "flaky-fr-a") == {"state": "closed", "consecutive_failures": 0}
    assert served_by(gateway) == ["flaky-fr-a"]


def test_a_failed_probe_opens_the_circuit_again(
    gateway_factory: Callable[..., Gateway],
    fake_upstream: FakeUpstream,
    restartable: Restartable,
) -> None:
    flaky = fake_endpoint("flaky-fr-a", restartable)  # type: ignore[arg-type]
    backup = fake_endpoint("backup-fr-b", fake_upstream, priority=20)
    gateway = gateway_factory(
        config=config_yaml(flaky, backup),
        args=["--breaker-threshold", "2", "--breaker-cooldown", "1"],
    )
    for _ in range(2):
        served_by(gateway)
    wait_for(lambda: health(gateway, "flaky-fr-a")["state"] == "half_open", what="the cooldown")
    assert served_by(gateway) == ["flaky-fr-a", "backup-fr-b"]  # the probe failed
    assert health(gateway, "flaky-fr-a")["state"] == "open"
    assert served_by(gateway) == ["backup-fr-b"]


def test_a_request_error_does_not_count_against_the_endpoint(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)),
        args=["--breaker-threshold", "2"],
    )
    for _ in range(3):
        assert chat(gateway, "bad [[fault=status_400]]").status == 400
    assert health(gateway, "fakeprov-fr-a")["state"] == "closed"
