"""Fixtures shared by the whole suite: real processes on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import FakeUpstream, Gateway, start_fake_upstream, start_gateway


@pytest.fixture(scope="session")
def upstream_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    upstream = start_fake_upstream(tmp_path_factory.mktemp("upstream"))
    yield upstream
    upstream.stop()


@pytest.fixture
def fake_upstream(upstream_process: FakeUpstream) -> FakeUpstream:
    """The session's fake upstream, with its request log cleared."""
    upstream_process.reset()
    return upstream_process


@pytest.fixture
def second_upstream(tmp_path: Path) -> Iterator[FakeUpstream]:
    upstream = start_fake_upstream(tmp_path)
    yield upstream
    upstream.stop()


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator[Callable[..., Gateway]]:
    """Start `llmeu serve` processes; all are stopped when the test ends."""
    started: list[Gateway] = []

    def start(**kwargs: Any) -> Gateway:
        gateway = start_gateway(tmp_path, **kwargs)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.kill()
