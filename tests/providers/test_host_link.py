"""The gateway's side of the model host: a host that is not there, and its error frames."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmeu.errors import (
    LocalModelUnavailable,
    UnsupportedByEndpoint,
    UpstreamError,
    UpstreamTimeout,
)
from llmeu.providers.host_link import HostLink, host_error


@pytest.mark.parametrize(
    ("kind", "error", "code", "status"),
    [
        ("context", UnsupportedByEndpoint, "context_length_exceeded", 400),
        ("grammar", UnsupportedByEndpoint, "upstream_rejected_request", 400),
        ("timeout", UpstreamTimeout, "local_call_timeout", 504),
        ("memory", UpstreamError, "local_memory_limit", 502),
        ("failed", UpstreamError, "upstream_error", 502),
    ],
    ids=["context", "grammar", "timeout", "memory", "failed"],
)
def test_an_error_frame_fails_the_call_alone(
    kind: str, error: type[UpstreamError], code: str, status: int
) -> None:
    raised = host_error({"ev": "error", "kind": kind, "message": "why"})
    assert type(raised) is error and raised.code == code and raised.status == status
    assert not isinstance(raised, LocalModelUnavailable), "the host itself is fine"


async def test_a_host_that_is_not_there_refuses_calls_at_once(tmp_path: Path) -> None:
    link = HostLink(tmp_path / "gone.sock")
    with pytest.raises(LocalModelUnavailable) as refused:
        await link.ask({"op": "count", "messages": []})
    assert refused.value.status == 503 and refused.value.retryable
    with pytest.raises(LocalModelUnavailable):
        await link.ask({"op": "ping"}, refuse_when_down=False)
    assert not link.up and "refused" in (link.down_reason or "")
