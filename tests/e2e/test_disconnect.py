"""A client that hangs up stops the upstream at once: before the upstream's next chunk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.streams import open_stream, read_until
from tests.support.waiting import wait_for

# The upstream pauses this long before each chunk: far longer than a gateway needs to pass a
# hang-up on, so one more chunk sent would mean the hang-up waited for upstream data.
DELAY_MS = 300


def closed(upstream: FakeUpstream) -> dict[str, Any] | None:
    seen = upstream.stats()
    return seen[-1] if seen and seen[-1]["closed_at"] is not None else None


def test_the_upstream_sees_the_close_before_its_next_chunk(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    gateway = gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))
    sock = open_stream(gateway, f"long [[chunks=2000;delay={DELAY_MS}]]")
    received = read_until(sock, b'"content"', 3).count(b'"content"')
    sock.close()
    seen = wait_for(lambda: closed(fake_upstream), what="the upstream connection to close")
    assert seen["completed"] is False
    # The upstream sent nothing after what the client had when it left: the close reached it
    # while it waited to send the next chunk.
    assert seen["chunks_sent"] == received
