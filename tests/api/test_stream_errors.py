"""Whatever fails once a stream has begun, the stream ends with an error frame and no
`[DONE]` — never a bare close — and the call has its one trace."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from llmeu.protocol.chat_stream import ChatFrames


def frames_of(body: bytes) -> list[str]:
    return [block.removeprefix("data: ") for block in body.decode().split("\n\n") if block]


async def stream(client: httpx.AsyncClient) -> httpx.Response:
    return await client.post(
        "/v1/chat/completions",
        json={"model": "fake-model", "stream": True,
              "messages": [{"role": "user", "content": "hi [[chunks=4]]"}]},
    )  # fmt: skip


def explode(*args: Any, **kwargs: Any) -> bytes:
    raise OverflowError("a value too large to encode")


@pytest.mark.parametrize(
    ("method", "status"),
    [("delta", "failed"), ("finish", "completed")],
    ids=["while-streaming", "building-the-end"],
)
async def test_an_exception_on_a_stream_ends_it_with_an_error_frame(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, method: str, status: str
) -> None:
    monkeypatch.setattr(ChatFrames, method, explode)
    response = await stream(client)
    assert response.status_code == 200
    frames = frames_of(response.content)
    assert "[DONE]" not in frames
    last = json.loads(frames[-1])
    assert last["error"]["code"] == "internal_error"
    trace_id = response.headers["x-llmeu-trace-id"]
    assert last["llmeu"]["trace_id"] == trace_id
    recorded = (await client.get(f"/v1/platform/traces/{trace_id}")).json()
    # Building the end fails after the trace is final: the call did complete upstream.
    assert recorded["status"] == status


async def test_an_error_frame_that_cannot_carry_its_routing_block_goes_without_it(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ChatFrames, "delta", explode)
    monkeypatch.setattr(ChatFrames, "error", explode)
    response = await stream(client)
    frames = frames_of(response.content)
    assert "[DONE]" not in frames
    last = json.loads(frames[-1])
    assert last["error"]["code"] == "internal_error"
    assert last["llmeu"] == {"trace_id": response.headers["x-llmeu-trace-id"]}
