"""Bad input gets a clear OpenAI-shaped 4xx and a `rejected` trace — never a 500."""

from __future__ import annotations

import httpx
import pytest

CHAT = "/v1/chat/completions"
OK_MESSAGES = [{"role": "user", "content": "hi"}]


def assert_openai_error(
    response: httpx.Response, status: int, param: str | None = None
) -> dict[str, object]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "param", "code"}
    assert error["message"]
    if param is not None:
        assert error["param"] == param
    return error  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        (b"{not json", None, "invalid_json"),
        (b"[]", None, None),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "model", None),
        (b'{"model": "fake-model", "messages": []}', "messages", None),
        (
            b'{"model": "fake-model", "messages": [{"role": "user", "content": 3}]}',
            "messages[0].content",
            None,
        ),
        (b'{"model": "fake-model", "messages": [{"role": "user"}]}', "messages[0].content", None),
        (b'{"model": 5, "messages": [{"role": "user", "content": "x"}]}', "model", None),
        (
            b'{"model": "fake-model", "messages": [{"role": "user", "content": "x"}], "top_p": 2}',
            "top_p",
            None,
        ),
        (
            b'{"model": "fake-model", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0}',
            "max_tokens",
            None,
        ),
        (
            b'{"model": "fake-model", "messages": [{"role": "user", "content": "x"}], "stop": ["a","b","c","d","e"]}',
            "stop",
            None,
        ),
        (
            b'{"model": "fake-model", "messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}}',
            "stream_options",
            None,
        ),
        (
            b'{"model": "fake-model", "messages": [{"role": "user", "content": "x"}], "logprobs": true}',
            "logprobs",
            None,
        ),
        (
            b'{"model": "fake-model", "messages": [{"role": "user", "content": "x"}], "llmeu": {"bogus": 1}}',
            "llmeu.bogus",
            None,
        ),
        (
            b'{"model": "fake-model", "messages": [{"role": "user", "content": [{"type": "video"}]}]}',
            "messages[0].content[0].type",
            None,
        ),
        (
            '{"model": "fake-model", "messages": [{"role": "user", "content": "\udcff"}]}'.encode(
                "utf-8", "surrogatepass"
            ),
            None,
            "invalid_json",
        ),
    ],
    ids=[
        "malformed-json",
        "not-an-object",
        "missing-model",
        "empty-messages",
        "content-wrong-type",
        "content-missing",
        "model-wrong-type",
        "top-p-range",
        "max-tokens-zero",
        "too-many-stops",
        "stream-options-without-stream",
        "logprobs",
        "unknown-llmeu-field",
        "unknown-part-type",
        "invalid-utf8",
    ],
)
async def test_invalid_chat_requests_are_400_with_param(
    client: httpx.AsyncClient, body: bytes, param: str | None, code: str | None
) -> None:
    response = await client.post(CHAT, content=body)
    error = assert_openai_error(response, 400, param)
    if code is not None:
        assert error["code"] == code
    trace_id = response.headers["x-llmeu-trace-id"]
    trace = (await client.get(f"/v1/platform/traces/{trace_id}")).json()
    assert trace["status"] == "rejected"
    assert trace["error"]["http_status"] == 400


async def test_unknown_model_is_404(client: httpx.AsyncClient) -> None:
    response = await client.post(CHAT, json={"model": "nope", "messages": OK_MESSAGES})
    assert_openai_error(response, 404, "model")


async def test_oversize_body_is_413_declared_or_streamed(client: httpx.AsyncClient) -> None:
    big = (
        b'{"model": "fake-model", "messages": [{"role": "user", "content": "'
        + b"x" * 70_000
        + b'"}]}'
    )
    assert_openai_error(await client.post(CHAT, content=big), 413)

    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(20):
            yield b"x" * 8192

    response = await client.post(CHAT, content=chunks())
    assert_openai_error(response, 413)


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "missing_api_key"),
        ({"authorization": "Bearer sk-llmeu-kxxxx-wrong"}, "invalid_api_key"),
        ({"authorization": "Basic abc"}, "invalid_api_key"),
    ],
    ids=["missing", "wrong", "not-bearer"],
)
async def test_bad_keys_are_401_without_a_trace(
    client: httpx.AsyncClient, headers: dict[str, str], code: str
) -> None:
    before = (await client.get("/v1/platform/traces")).json()["data"]
    response = await client.post(
        CHAT, json={"model": "fake-model", "messages": OK_MESSAGES},
        headers={"authorization": "", **headers},
    )  # fmt: skip
    error = assert_openai_error(response, 401)
    assert error["code"] == code
    assert (await client.get("/v1/platform/traces")).json()["data"] == before


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/v1/embeddings", {"model": "fake-model", "input": "x", "stream": True}),
        ("/v1/embeddings?stream=true", {"model": "fake-model", "input": "x"}),
    ],
    ids=["body", "query"],
)
async def test_stream_true_on_embeddings_is_400_naming_stream(
    client: httpx.AsyncClient, url: str, body: dict[str, object]
) -> None:
    assert_openai_error(await client.post(url, json=body), 400, "stream")


async def test_embeddings_refuse_mixed_inputs(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/embeddings", json={"model": "fake-model", "input": ["a", 1]})
    assert_openai_error(response, 400, "input")


async def test_routes_and_methods(client: httpx.AsyncClient) -> None:
    assert_openai_error(await client.get(CHAT), 405)
    assert_openai_error(await client.get("/v1/nothing-here"), 404)
    assert (await client.get("/healthz")).json()["status"] == "ok"


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/v1/models/a/b", 404),
        ("GET", "/v1/platform/traces/a/b", 404),
        ("POST", "/v1/models/smollm2", 405),
        ("DELETE", "/v1/platform/traces/trc_x", 405),
    ],
    ids=["nested-model-path", "nested-trace-path", "post-on-a-model", "delete-on-a-trace"],
)
async def test_unknown_paths_are_404_and_wrong_methods_405(
    client: httpx.AsyncClient, method: str, path: str, status: int
) -> None:
    assert_openai_error(await client.request(method, path), status)
