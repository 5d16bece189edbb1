"""Every surface served from the cache speaks its own wire: the same frames, events and bodies
as a live answer, with the routing block naming where the answer came from."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cache.conftest import CHAT, Client, Tenant, body, chat, upstream_calls
from tests.support.processes import FakeUpstream


def events(text: str) -> list[tuple[str | None, Any]]:
    """(event name, data) of each SSE event; `[DONE]` as its text."""
    found: list[tuple[str | None, Any]] = []
    for block in text.split("\n\n"):
        if not block:
            continue
        name, data = None, None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                raw = line[len("data: ") :]
                data = raw if raw == "[DONE]" else json.loads(raw)
        found.append((name, data))
    return found


async def streamed(
    client: Client, path: str, payload: dict[str, Any]
) -> list[tuple[str | None, Any]]:
    async with client.stream("POST", path, json={**payload, "stream": True}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        return events((await response.aread()).decode())


def chunks(frames: list[tuple[str | None, Any]]) -> list[dict[str, Any]]:
    return [data for _, data in frames if isinstance(data, dict)]


def without_ids(frame: Any, ids: set[str]) -> Any:
    """A frame with the call's own ids, times and routing block taken out."""
    if isinstance(frame, dict):
        return {k: without_ids(v, ids) for k, v in frame.items()
                if k not in ("created", "created_at", "llmeu", "completed_at")}  # fmt: skip
    if isinstance(frame, list):
        return [without_ids(v, ids) for v in frame]
    if isinstance(frame, str):
        for own in ids:
            frame = frame.replace(own, "<id>")
    return frame


@pytest.mark.parametrize("include_usage", [True, False], ids=["with-usage", "without-usage"])
async def test_a_chat_stream_from_the_cache_is_the_live_streams_frames(
    tenant: Tenant, fake_upstream: FakeUpstream, include_usage: bool
) -> None:
    client, _ = await tenant("cached")
    payload = body("stream me [[chunks=5]]", stream_options={"include_usage": include_usage})
    live, hit = await streamed(client, CHAT, payload), await streamed(client, CHAT, payload)
    assert upstream_calls(fake_upstream) == 1
    assert live[-1] == hit[-1] == (None, "[DONE]")
    live_chunks, hit_chunks = chunks(live), chunks(hit)
    ids = {live_chunks[0]["id"][9:], hit_chunks[0]["id"][9:]}
    assert [without_ids(c, ids) for c in hit_chunks] == [without_ids(c, ids) for c in live_chunks]
    finish = [c for c in hit_chunks if "llmeu" in c]
    assert len(finish) == 1 and finish[0]["choices"][0]["finish_reason"] == "stop"
    assert finish[0]["llmeu"]["cache"]["source_trace_id"] == live_chunks[-1 - include_usage][
        "llmeu"]["trace_id"]  # fmt: skip
    assert finish[0]["llmeu"]["trace_id"] == "trc_" + hit_chunks[0]["id"][len("chatcmpl-") :]


async def test_a_whole_answer_serves_a_stream_in_chunks_and_back(
    tenant: Tenant, fake_upstream: FakeUpstream
) -> None:
    client, _ = await tenant("cached")
    whole = (await chat(client, "first whole [[chunks=4]]")).json()
    text = whole["choices"][0]["message"]["content"]
    frames = chunks(await streamed(client, CHAT, body("first whole [[chunks=4]]")))
    pieces = [f["choices"][0]["delta"].get("content") for f in frames[1:-1]]
    assert frames[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert len(pieces) == 4 and "".join(pieces) == text
    assert frames[-1]["llmeu"]["cache"]["kind"] == "exact"
    live = chunks(await streamed(client, CHAT, body("then streamed [[chunks=3]]")))
    again = (await chat(client, "then streamed [[chunks=3]]")).json()
    content = "".join(f["choices"][0]["delta"].get("content", "") for f in live[1:-1])
    assert again["choices"][0]["message"]["content"] == content
    assert again["llmeu"]["cache"]["hit"] is True
    assert upstream_calls(fake_upstream) == 2


MESSAGES = {"model": "fake-model", "max_tokens": 64,
            "messages": [{"role": "user", "content": "hello claude [[chunks=3]]"}]}  # fmt: skip


async def test_messages_from_the_cache(tenant: Tenant, fake_upstream: FakeUpstream) -> None:
    client, _ = await tenant("cached")
    live = await streamed(client, "/v1/messages", MESSAGES)
    hit = await streamed(client, "/v1/messages", MESSAGES)
    whole = await client.post("/v1/messages", json=MESSAGES)
    assert upstream_calls(fake_upstream) == 1
    assert [name for name, _ in hit] == [name for name, _ in live]
    ids = {d["message"]["id"] for n, d in (*live, *hit) if n == "message_start"}
    assert [without_ids(d, ids) for _, d in hit] == [without_ids(d, ids) for _, d in live]
    delta = next(d for n, d in hit if n == "message_delta")
    assert delta["llmeu"]["cache"]["kind"] == "exact"
    message = whole.json()
    text = "".join(d["delta"]["text"] for n, d in live if n == "content_block_delta")
    assert message["content"] == [{"type": "text", "text": text}]
    assert message["llmeu"]["cache"]["hit"] is True


RESPONSES = {"model": "fake-model", "input": "hello responses [[chunks=3]]"}


async def test_responses_from_the_cache(tenant: Tenant, fake_upstream: FakeUpstream) -> None:
    client, _ = await tenant("cached")
    live = await streamed(client, "/v1/responses", RESPONSES)
    hit = await streamed(client, "/v1/responses", RESPONSES)
    whole = (await client.post("/v1/responses", json=RESPONSES)).json()
    assert upstream_calls(fake_upstream) == 1
    assert [name for name, _ in hit] == [name for name, _ in live]
    ids = {d["response"]["id"][5:] for n, d in (*live, *hit) if n == "response.created"}
    assert [without_ids(d, ids) for _, d in hit] == [without_ids(d, ids) for _, d in live]
    done = next(d for n, d in hit if n == "response.completed")["response"]
    assert done["llmeu"]["cache"]["kind"] == "exact"
    assert whole["llmeu"]["cache"]["hit"] is True
    assert without_ids(whole["output"], {whole["id"][5:]}) == without_ids(
        done["output"], {done["id"][5:]}
    )


async def test_embeddings_from_the_cache(tenant: Tenant, fake_upstream: FakeUpstream) -> None:
    client, _ = await tenant("cached")
    ask = {"model": "fake-model", "input": ["one text", "another"]}
    live = (await client.post("/v1/embeddings", json=ask)).json()
    hit = (await client.post("/v1/embeddings", json=ask)).json()
    encoded = (
        await client.post("/v1/embeddings", json={**ask, "encoding_format": "base64"})
    ).json()
    assert len([r for r in fake_upstream.stats() if r["path"].endswith("/embeddings")]) == 1
    assert hit["data"] == live["data"] and hit["usage"] == live["usage"]
    assert hit["llmeu"]["cache"]["source_trace_id"] == live["llmeu"]["trace_id"]
    assert isinstance(encoded["data"][0]["embedding"], str)
    assert encoded["llmeu"]["cache"]["hit"] is True
    other = (await client.post("/v1/embeddings", json={**ask, "input": ["one text"]})).json()
    assert "cache" not in other["llmeu"]
