"""The bytes a fake OpenAI upstream answers with, built once and reused.

Every response is rendered from a template whose id is a fixed-length
placeholder, so a response costs one `bytes.replace` per frame instead of a
JSON encode. Frames match what OpenAI sends: `chat.completion` objects, and for
streams a role chunk, one chunk per token, a finish chunk, the usage chunk when
`stream_options.include_usage` is set (with `"usage": null` on every other
chunk, as OpenAI does), then `data: [DONE]`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec

ID_PLACEHOLDER = b"chatcmpl-@@@@@@@@@@@@@@@@@@@@@@@@"
CREATED = 1_735_689_600
WORDS = ("Hello", " from", " the", " fake", " upstream", ", one", " token", " at", " a", " time")

_encode = msgspec.json.encode
_ids = itertools.count(1)


def next_completion_id() -> bytes:
    """A unique id exactly as long as the placeholder, so frame sizes never change."""
    return b"chatcmpl-%024x" % next(_ids)


def token(index: int) -> str:
    return WORDS[index % len(WORDS)]


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


def _chunk(model: str, choices: list[Any], usage: Any, with_usage: bool) -> bytes:
    frame: dict[str, Any] = {
        "id": ID_PLACEHOLDER.decode(),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": None,
        "choices": choices,
    }
    if with_usage:
        frame["usage"] = usage
    return b"data: " + _encode(frame) + b"\n\n"


def _delta(delta: dict[str, str], finish_reason: str | None = None) -> list[Any]:
    return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]


@lru_cache(maxsize=256)
def stream_frames(model: str, chunks: int, usage: Usage, include_usage: bool) -> tuple[bytes, ...]:
    """The SSE events of one streamed completion, each still holding the id placeholder."""
    frames = [_chunk(model, _delta({"role": "assistant", "content": ""}), None, include_usage)]
    frames.extend(
        _chunk(model, _delta({"content": token(i)}), None, include_usage) for i in range(chunks)
    )
    frames.append(_chunk(model, _delta({}, "stop"), None, include_usage))
    if include_usage:
        frames.append(_chunk(model, [], usage.as_dict(), True))
    frames.append(b"data: [DONE]\n\n")
    return tuple(frames)


@lru_cache(maxsize=256)
def completion_body(model: str, chunks: int, usage: Usage) -> bytes:
    """A non-streamed `chat.completion` whose content is the tokens a stream would carry."""
    content = "".join(token(i) for i in range(chunks))
    return _encode(
        {
            "id": ID_PLACEHOLDER.decode(),
            "object": "chat.completion",
            "created": CREATED,
            "model": model,
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": usage.as_dict(),
        }
    )


@lru_cache(maxsize=64)
def embeddings_body(model: str, inputs: int, dims: int, prompt_tokens: int) -> bytes:
    vector = [round(((i * 7919) % 1000) / 1000 - 0.5, 6) for i in range(dims)]
    return _encode(
        {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": vector} for i in range(inputs)
            ],
            "model": model,
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
        }
    )


def models_body(model: str) -> bytes:
    return _encode(
        {
            "object": "list",
            "data": [{"id": model, "object": "model", "created": CREATED, "owned_by": "bench"}],
        }
    )


def error_body(status: int, message: str) -> bytes:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return _encode({"error": {"message": message, "type": kind, "param": None, "code": None}})
