"""One gateway for the fault tests, in front of the session's fake upstream.

Aliases pick the situation: `fake-model` takes its fault from the message
(`[[fault=...]]`); `flaky-model` and `stall-model` have a failing first endpoint
and a healthy second one; `stall-only` has only the stalling one; `short-total`
has a total timeout a slow stream overruns. The circuit breaker is set out of
reach here so that repeated failures never change which endpoint is tried.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_gateway,
)

STREAM_TIMEOUTS = {"connect": 2, "first_token": 2, "idle": 1, "total": 30}
STALL_TIMEOUTS = {"connect": 2, "first_token": 0.5, "idle": 1, "total": 30}


def faults_config(upstream: FakeUpstream) -> str:
    return config_yaml(
        fake_endpoint("fakeprov-fr-main", upstream, timeouts=STREAM_TIMEOUTS),
        fake_endpoint(
            "fakeprov-fr-flaky", upstream, model="fake;fault=status_503", aliases=["flaky-model"]
        ),
        fake_endpoint(
            "backup-fr-flaky", upstream, aliases=["flaky-model", "stall-model"], priority=20
        ),
        fake_endpoint(
            "fakeprov-fr-stall",
            upstream,
            model="fake;fault=stall_first;stall=30",
            aliases=["stall-model", "stall-only"],
            timeouts=STALL_TIMEOUTS,
        ),
        fake_endpoint(
            "fakeprov-fr-short",
            upstream,
            aliases=["short-total"],
            timeouts={"first_token": 2, "idle": 1, "total": 1.5},
        ),
    )


@pytest.fixture(scope="module")
def faults_gateway(
    upstream_process: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    tmp: Path = tmp_path_factory.mktemp("faults")
    gateway = start_gateway(
        tmp,
        config=faults_config(upstream_process),
        args=["--breaker-threshold", "1000000"],
    )
    yield gateway
    gateway.kill()
