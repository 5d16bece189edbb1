"""Bounded input against a real gateway: the request head, the body, JSON nesting,
arrays, and very long names and keys each get a 4xx — never a 500, never a hang.

The request head is bounded by the HTTP layer (`llmeu.cli.server`), so only a
real `llmeu serve` process shows it; raw sockets send what no HTTP client would.
Every socket has a timeout: a gateway that hung would fail the test, not block it.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.protocol.json_codec import MAX_NESTING
from llmeu.server.http_protocol import MAX_HEAD_BYTES
from tests.support.processes import (
    ADMIN_KEY,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_gateway,
)
from tests.support.streams import dechunk

MAX_BODY = 100_000
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def gateway(
    upstream_process: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    tmp: Path = tmp_path_factory.mktemp("bounds")
    gateway = start_gateway(
        tmp,
        config=config_yaml(fake_endpoint("fakeprov-fr-a", upstream_process)),
        args=["--max-body-bytes", str(MAX_BODY)],
    )
    yield gateway
    gateway.kill()


@pytest.fixture
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=gateway.url, timeout=30, headers={"authorization": f"Bearer {ADMIN_KEY}"}
    ) as c:
        yield c


def raw_exchange(gateway: Gateway, pieces: list[bytes]) -> tuple[int, bytes]:
    """Send `pieces` on one connection, then read until the gateway closes it."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        for piece in pieces:
            sock.sendall(piece)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        body = dechunk(body)
    return int(head.split(b" ", 2)[1]), body


def request_head(path: str = "/v1/models", headers: str = "", key: str = ADMIN_KEY) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer {key}\r\n{headers}\r\n"
    ).encode()


def assert_openai_error(body: bytes, code: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(body)["error"]
    assert set(error) >= {"message", "type", "param", "code"}
    if code is not None:
        assert error["code"] == code
    return error


HEADS = {
    "one-header-too-long": (request_head(headers=f"x-big: {'a' * MAX_HEAD_BYTES}\r\n"), 431),
    "too-many-headers": (
        request_head(headers="".join(f"x-h{i}: {'b' * 90}\r\n" for i in range(800))), 431),
    "url-too-long": (request_head(path="/v1/models/" + "m" * MAX_HEAD_BYTES), 414),
    "key-too-long-for-a-header": (request_head(key="sk-llmeu-k" + "a" * MAX_HEAD_BYTES), 431),
}  # fmt: skip


@pytest.mark.parametrize("head", HEADS)
def test_an_oversized_request_head_is_refused(gateway: Gateway, head: str) -> None:
    raw, expected = HEADS[head]
    status, body = raw_exchange(gateway, [raw])
    assert status == expected
    assert_openai_error(body)
    assert httpx.get(f"{gateway.url}/healthz").status_code == 200


def test_a_head_that_never_ends_is_refused_before_it_ends(gateway: Gateway) -> None:
    """A header line growing to four times the limit: the 431 comes without a line end,
    and reaches a client that was still sending (no reset destroys it)."""
    start = b"GET /v1/models HTTP/1.1\r\nhost: gateway\r\nx-endless: "
    pieces = [start] + [b"z" * 8192] * (4 * MAX_HEAD_BYTES // 8192)
    status, body = raw_exchange(gateway, pieces)
    assert status == 431
    assert_openai_error(body, "request_header_fields_too_large")


def test_a_large_head_within_the_limit_is_served(gateway: Gateway) -> None:
    headers = "".join(f"x-h{i}: {i}\r\n" for i in range(100))
    headers += f"x-big: {'a' * (MAX_HEAD_BYTES // 2)}\r\nconnection: close\r\n"
    status, body = raw_exchange(gateway, [request_head(headers=headers)])
    assert status == 200 and json.loads(body)["object"] == "list"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/embeddings"])
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_body_over_max_body_bytes_is_413(client: httpx.Client, path: str, declared: bool) -> None:
    body = json.dumps({"model": "fake-model", "messages": MESSAGES, "input": "x" * MAX_BODY})
    content: Any = body.encode() if declared else iter([body.encode()[i : i + 4096]
                                                         for i in range(0, len(body), 4096)])  # fmt: skip
    response = client.post(path, content=content, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert_openai_error(response.content, "request_too_large")
    assert response.headers["x-llmeu-trace-id"]


def test_a_body_just_under_max_body_bytes_is_read(client: httpx.Client) -> None:
    filler = "x" * (MAX_BODY - 200)
    response = client.post("/v1/chat/completions",
                           json={"model": "fake-model", "messages": [{"role": "user", "content": filler}]})  # fmt: skip
    assert response.status_code == 200


def nested_text(depth: int) -> str:
    return "[" * depth + "]" * depth


def tool_with_parameters(depth: int) -> str:
    return (
        '{"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "tools": '
        '[{"type": "function", "function": {"name": "f", "parameters": {"a": '
        + nested_text(depth - 1)
        + "}}}]}"
    )


@pytest.mark.parametrize(
    ("depth", "status", "param"),
    [
        (MAX_NESTING, 200, None),
        (MAX_NESTING + 1, 400, "tools[0].function.parameters"),
        (900, 400, "tools[0].function.parameters"),
        (20_000, 400, None),
    ],
    ids=["at-the-limit", "one-over", "near-the-recursion-limit", "far-beyond"],
)
def test_deeply_nested_tool_parameters(
    client: httpx.Client, depth: int, status: int, param: str | None
) -> None:
    response = client.post("/v1/chat/completions", content=tool_with_parameters(depth).encode())
    assert response.status_code == status, response.text
    if status == 400:
        assert assert_openai_error(response.content)["param"] == param


DEEP = nested_text(20_000)
DEEP_BODIES = {
    "chat-ignored-message-field": ("POST", "/v1/chat/completions",
        '{"model": "fake-model", "messages": [{"role": "user", "content": "hi", "x": ' + DEEP + "}]}"),
    "chat-json-schema": ("POST", "/v1/chat/completions",
        '{"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "response_format": '
        '{"type": "json_schema", "json_schema": {"schema": ' + nested_text(MAX_NESTING) + "}}}"),
    "chat-whole-body": ("POST", "/v1/chat/completions", DEEP),
    "embeddings-input": ("POST", "/v1/embeddings", '{"model": "fake-model", "input": ' + DEEP + "}"),
    "platform-key": ("POST", "/v1/platform/keys", '{"name": ' + DEEP + "}"),
    "platform-policy": ("PUT", "/v1/platform/policies/deep", '{"allow_classes": ' + DEEP + "}"),
    "platform-policy-within-the-body-limit": (
        "PUT", "/v1/platform/policies/deep", '{"allow_classes": ' + nested_text(200) + "}"),
}  # fmt: skip


@pytest.mark.parametrize("case", DEEP_BODIES)
def test_deeply_nested_bodies_are_400(client: httpx.Client, case: str) -> None:
    method, path, body = DEEP_BODIES[case]
    response = client.request(method, path, content=body.encode())
    assert response.status_code == 400, response.text
    assert_openai_error(response.content)


def test_a_deep_body_on_a_route_that_takes_none_is_ignored(client: httpx.Client) -> None:
    response = client.request("GET", "/v1/platform/me", content=DEEP.encode())
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/chat/completions", {"model": "fake-model", "messages": MESSAGES,
                                  "stop": ["s"] * 20_000}, "stop"),
        ("/v1/embeddings", {"model": "fake-model", "input": ["x"] * 20_000}, "input"),
        ("/v1/chat/completions", {"model": "fake-model", "messages": MESSAGES,
                                  "metadata": {"k": "v" * 20_000}}, "metadata[...]"),
    ],
    ids=["stop", "embeddings-input", "metadata-value"],
)  # fmt: skip
def test_huge_arrays_and_values_in_bounded_fields_are_400(
    client: httpx.Client, path: str, body: dict[str, Any], param: str
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert assert_openai_error(response.content)["param"] == param


def test_a_huge_array_over_the_body_limit_is_413(client: httpx.Client) -> None:
    messages = [{"role": "user", "content": "hi"}] * (MAX_BODY // 20)
    response = client.post(
        "/v1/chat/completions", json={"model": "fake-model", "messages": messages}
    )
    assert response.status_code == 413


@pytest.mark.parametrize("length", [257, 50_000])
def test_a_long_model_name_is_400(client: httpx.Client, length: int) -> None:
    response = client.post(
        "/v1/chat/completions", json={"model": "m" * length, "messages": MESSAGES}
    )
    assert response.status_code == 400
    assert assert_openai_error(response.content)["param"] == "model"


def test_a_long_model_id_in_the_path_is_404(client: httpx.Client) -> None:
    response = client.get("/v1/models/" + "m" * 10_000)
    assert response.status_code == 404
    assert_openai_error(response.content)


@pytest.mark.parametrize("length", [513, 10_000, 60_000])
def test_a_long_key_is_401(gateway: Gateway, length: int) -> None:
    token = "sk-llmeu-k" + "a" * length
    response = httpx.get(f"{gateway.url}/v1/models", headers={"authorization": f"Bearer {token}"})
    assert response.status_code == 401
    assert "a" * 100 not in response.text
