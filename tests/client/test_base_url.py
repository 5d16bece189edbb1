"""A base URL may be the gateway's root or its API root (`…/v1`): both reach the same routes."""

from __future__ import annotations

import json

import pytest

from llmeu.client import Client
from llmeu.protocol.base_url import api_root, gateway_root
from tests.support.client_wire_server import Reply, WireServer, sse

URLS = [
    pytest.param("http://h:8080", "http://h:8080/v1", "http://h:8080", id="root"),
    pytest.param("http://h:8080/", "http://h:8080/v1", "http://h:8080", id="root-slash"),
    pytest.param("http://h:8080/v1", "http://h:8080/v1", "http://h:8080", id="api-root"),
    pytest.param("http://h:8080/v1/", "http://h:8080/v1", "http://h:8080", id="api-root-slash"),
    pytest.param(" http://h:8080/v1 ", "http://h:8080/v1", "http://h:8080", id="pasted-spaces"),
    pytest.param("https://h/llmeu/v1", "https://h/llmeu/v1", "https://h/llmeu", id="mounted"),
    pytest.param(
        "https://h/openai/v1beta", "https://h/openai/v1beta", "https://h/openai/v1beta", id="other"
    ),
]


@pytest.mark.parametrize(("given", "api", "root"), URLS)
def test_both_forms_mean_the_same_gateway(given: str, api: str, root: str) -> None:
    assert api_root(given) == api
    assert gateway_root(given) == root


@pytest.mark.parametrize("suffix", ["", "/v1"], ids=["root", "api-root"])
def test_the_client_posts_to_the_api_root_either_way(suffix: str) -> None:
    frames = sse(json.dumps({"choices": [{"index": 0, "delta": {"content": "ok"}}]}), "[DONE]")
    with WireServer(Reply(frames)) as server:
        root = server.url.removesuffix("/v1")
        with Client(root + suffix, "sk-t") as client:
            assert client.chat("hi", model="m").content == "ok"
    [seen] = server.requests
    assert seen.path == "/v1/chat/completions"
