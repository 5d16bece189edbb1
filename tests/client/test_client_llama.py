"""The client against a third-party OpenAI-compatible server process (`llama_cpp.server`).

The answers of a real model are not known in advance, so these tests check
what must hold whatever it says: the deltas add up to the content, the stream
completes, a missing usage chunk stays `None`, and the official `openai` SDK
reads the same greedy answer as we do.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmeu.client import (
    AsyncClient,
    ChatResult,
    Client,
    ContentDelta,
    NotFoundError,
)
from tests.support.client_llama_server import llama_server

pytestmark = pytest.mark.local_model
pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python with its server extras")

GREEDY = {"temperature": 0, "seed": 7, "max_tokens": 12}
PROMPT = "Name three colours."


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(log) as url:
        yield url


@pytest.fixture(scope="module")
def greedy_answer(base_url: str) -> ChatResult:
    """The deterministic answer to PROMPT, as `Client.chat` reads it."""
    with Client(base_url) as client:
        return client.chat(PROMPT, model="smollm2", **GREEDY)


def test_stream_adds_up(base_url: str) -> None:
    deltas: list[str] = []
    with Client(base_url) as client, client.stream_chat(PROMPT, model="smollm2", **GREEDY) as s:
        for item in s:
            if isinstance(item, ContentDelta):
                deltas.append(item.text)
    result = s.result
    assert isinstance(result, ChatResult)
    assert result.complete
    assert deltas
    assert result.content == "".join(deltas)
    assert result.finish_reason in ("stop", "length")
    assert result.id is not None and result.id.startswith("chatcmpl")
    assert result.llmeu is None


def test_missing_usage_chunk_is_none_and_tokens_are_estimated(greedy_answer: ChatResult) -> None:
    assert greedy_answer.complete
    timings = greedy_answer.timings
    assert timings is not None and timings.ttft is not None
    if greedy_answer.usage is None:
        # This server ignores `stream_options.include_usage`: we must not invent counts.
        assert timings.tokens_estimated
    else:
        assert greedy_answer.usage.completion_tokens == timings.output_tokens


async def test_async_client_reads_the_same_greedy_answer(
    base_url: str, greedy_answer: ChatResult
) -> None:
    async with AsyncClient(base_url) as client:
        result = await client.chat(PROMPT, model="smollm2", **GREEDY)
    assert result.content == greedy_answer.content


def test_the_openai_sdk_reads_the_same_answer(base_url: str, greedy_answer: ChatResult) -> None:
    openai = pytest.importorskip("openai")
    sdk = openai.OpenAI(base_url=base_url, api_key="unused")
    try:
        stream = sdk.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": PROMPT}], stream=True, **GREEDY
        )
        sdk_text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    finally:
        sdk.close()
    assert greedy_answer.content == sdk_text


def test_leaving_early_leaves_the_server_usable(base_url: str) -> None:
    with Client(base_url) as client:
        with client.stream_chat(PROMPT, model="smollm2", max_tokens=32) as stream:
            first = next(item for item in stream if isinstance(item, ContentDelta))
        assert first.text
        assert client.chat(PROMPT, model="smollm2", **GREEDY).complete


def test_wrong_path_is_a_404(base_url: str) -> None:
    client = Client(base_url.removesuffix("/v1") + "/nowhere")
    with client, pytest.raises(NotFoundError) as caught:
        client.chat(PROMPT, model="smollm2", **GREEDY)
    assert caught.value.status == 404
