"""`x-llmeu-overhead-ms` and `server-timing`: the gateway's time apart from the upstream's."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from llmeu.observability.timing import ResponseTiming
from tests.observability.harness import AUTH, in_process
from tests.support.processes import FakeUpstream, config_yaml, fake_endpoint


def server_timing(header: str) -> dict[str, float]:
    """`name;dur=ms, …` → {name: ms}."""
    entries: dict[str, float] = {}
    for entry in header.split(","):
        name, *params = (part.strip() for part in entry.split(";"))
        durations = [float(p[4:]) for p in params if p.startswith("dur=")]
        entries[name] = durations[0]
    return entries


def split(response: httpx.Response) -> tuple[float, float]:
    timing = server_timing(response.headers["server-timing"])
    assert set(timing) == {"gateway", "upstream"}
    assert float(response.headers["x-llmeu-overhead-ms"]) == timing["gateway"]
    assert timing["gateway"] >= 0
    return timing["gateway"], timing["upstream"]


@pytest.mark.parametrize(
    ("elapsed", "upstream", "overhead_ms", "server_timing_value"),
    [
        (0.5, 0.4, "100.000", "gateway;dur=100.000, upstream;dur=400.000"),
        (0.0012345, 0.0, "1.234", "gateway;dur=1.234, upstream;dur=0.000"),
        (0.1, 0.1000001, "0.000", "gateway;dur=0.000, upstream;dur=100.000"),
    ],
    ids=["split", "no-upstream", "clock-rounding-never-negative"],
)
def test_header_values(
    elapsed: float, upstream: float, overhead_ms: str, server_timing_value: str
) -> None:
    headers = dict(ResponseTiming(elapsed, upstream).headers())
    assert headers == {
        b"x-llmeu-overhead-ms": overhead_ms.encode(),
        b"server-timing": server_timing_value.encode(),
    }


async def test_non_streaming_chat_and_embeddings(
    tmp_path: Path, fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    async with in_process(tmp_path, config) as gw:
        # The fake upstream sleeps 4 times 30 ms before it answers: at least that is upstream time.
        chat = await gw.chat("hello [[chunks=4;delay=30]]")
        embeddings = await gw.client.post(
            "/v1/embeddings", json={"model": "fake-model", "input": "a"}, headers=AUTH
        )
    assert chat.status_code == 200 and embeddings.status_code == 200
    _, upstream = split(chat)
    assert upstream >= 120
    split(embeddings)


async def test_stream_measures_up_to_the_response_start(
    tmp_path: Path, fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    async with in_process(tmp_path, config) as gw:
        response = await gw.chat("hello [[chunks=3;delay=40]]", stream=True)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    _, upstream = split(response)
    # The headers go out once the first delta arrived (one 40 ms pause), before the rest.
    assert upstream >= 40


async def test_fallback_counts_every_attempt_as_upstream_time(
    tmp_path: Path, fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(
        fake_endpoint(
            "fakeprov-fr-a",
            fake_upstream,
            model="fake;fault=stall_first;stall=30",
            timeouts={"first_token": 0.1},
        ),
        fake_endpoint("fakeprov-fr-b", fake_upstream, priority=20),
    )
    async with in_process(tmp_path, config) as gw:
        response = await gw.chat("hello", stream=True)
        call = next(span for span in gw.spans() if span.parent is None)
    assert response.status_code == 200
    assert call.attributes is not None and call.attributes["llmeu.attempts"] == 2
    _, upstream = split(response)
    assert upstream >= 100  # the first endpoint's 100 ms timeout is upstream time too


async def test_error_responses_carry_no_overhead_headers(
    tmp_path: Path, fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    async with in_process(tmp_path, config) as gw:
        response = await gw.chat("hello", model="no-such-model")
    assert response.status_code == 404
    assert "x-llmeu-trace-id" in response.headers
    assert "server-timing" not in response.headers
