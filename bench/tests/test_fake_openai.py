from __future__ import annotations

import msgspec
import pytest

import fake_openai
from fake_openai import ID_PLACEHOLDER, Usage


def _events(frames: tuple[bytes, ...]) -> list[object]:
    events: list[object] = []
    for frame in frames:
        assert frame.startswith(b"data: ")
        assert frame.endswith(b"\n\n")
        data = frame[6:-2]
        events.append("[DONE]" if data == b"[DONE]" else msgspec.json.decode(data))
    return events


@pytest.mark.parametrize("include_usage", [False, True], ids=["no-usage", "usage"])
def test_stream_has_openai_shape(include_usage: bool) -> None:
    frames = fake_openai.stream_frames("m", 3, Usage(5, 3), include_usage)
    events = _events(frames)
    assert events[-1] == "[DONE]"
    chunks = [e for e in events[:-1] if isinstance(e, dict)]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    contents = [c["choices"][0]["delta"]["content"] for c in chunks[1:4]]
    assert "".join(contents) == "".join(fake_openai.token(i) for i in range(3))
    assert chunks[4]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }
    if include_usage:
        assert chunks[5]["choices"] == []
        assert chunks[5]["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
        assert all(c["usage"] is None for c in chunks[:5])
    else:
        assert len(chunks) == 5
        assert all("usage" not in c for c in chunks)
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}


def test_completion_ids_keep_the_frame_length() -> None:
    completion_id = fake_openai.next_completion_id()
    assert len(completion_id) == len(ID_PLACEHOLDER)
    body = fake_openai.completion_body("m", 2, Usage(1, 2))
    decoded = msgspec.json.decode(body.replace(ID_PLACEHOLDER, completion_id))
    assert decoded["id"] == completion_id.decode()
    assert decoded["choices"][0]["message"]["content"] == "Hello from"
    assert decoded["usage"]["total_tokens"] == 3


def test_embeddings_one_vector_per_input() -> None:
    decoded = msgspec.json.decode(fake_openai.embeddings_body("e", 3, 4, 2))
    assert [d["index"] for d in decoded["data"]] == [0, 1, 2]
    assert {len(d["embedding"]) for d in decoded["data"]} == {4}
