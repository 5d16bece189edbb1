"""CORS against real gateways: off by default, exact-origin matching when configured."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.support.processes import ADMIN_KEY, FakeUpstream, Gateway, config_yaml, fake_endpoint

CONSOLE = "https://console.example.eu"
AUTH = {"authorization": f"Bearer {ADMIN_KEY}"}
CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}


def preflight(origin: str, headers: str = "authorization, content-type") -> dict[str, str]:
    return {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": headers,
    }


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


@pytest.fixture
def start(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> Iterator[Callable[..., httpx.Client]]:
    clients: list[httpx.Client] = []

    def started(*origins: str) -> httpx.Client:
        args = [arg for origin in origins for arg in ("--cors-origin", origin)]
        gateway = gateway_factory(
            config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)), args=args
        )
        client = httpx.Client(base_url=gateway.url, timeout=30)
        clients.append(client)
        return client

    yield started
    for client in clients:
        client.close()


@pytest.fixture
def cors_off(start: Callable[..., httpx.Client]) -> httpx.Client:
    return start()


@pytest.fixture
def cors_on(start: Callable[..., httpx.Client]) -> httpx.Client:
    return start(CONSOLE)


def test_without_configuration_no_response_carries_cors_headers(cors_off: httpx.Client) -> None:
    answered = [
        cors_off.options("/v1/chat/completions", headers=preflight(CONSOLE)),
        cors_off.get("/v1/models", headers={"origin": CONSOLE, **AUTH}),
        cors_off.post("/v1/chat/completions", json=CHAT, headers={"origin": CONSOLE, **AUTH}),
        cors_off.post("/v1/chat/completions", json=CHAT, headers={"origin": CONSOLE}),
    ]
    assert [r.status_code for r in answered] == [405, 200, 200, 401]
    assert [cors_headers(r) for r in answered] == [{}, {}, {}, {}]


def test_a_preflight_from_the_configured_origin_is_answered(cors_on: httpx.Client) -> None:
    response = cors_on.options("/v1/chat/completions", headers=preflight(CONSOLE))
    assert response.status_code == 204
    headers = cors_headers(response)
    assert headers["access-control-allow-origin"] == CONSOLE
    assert "POST" in headers["access-control-allow-methods"]
    assert headers["access-control-allow-headers"] == "authorization, content-type"
    assert int(headers["access-control-max-age"]) > 0
    assert "access-control-allow-credentials" not in headers
    assert response.headers["vary"].lower() == "origin"


@pytest.mark.parametrize(
    "origin",
    [
        "https://elsewhere.example.com",
        "http://console.example.eu",
        "https://console.example.eu.attacker.example",
        "https://console.example.eu:8443",
        "null",
    ],
    ids=["other-site", "other-scheme", "suffix", "other-port", "null"],
)
def test_a_preflight_from_any_other_origin_is_403(cors_on: httpx.Client, origin: str) -> None:
    response = cors_on.options("/v1/chat/completions", headers=preflight(origin))
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "cors_origin_not_allowed"
    assert cors_headers(response) == {}


def test_actual_responses_name_only_the_allowed_origin(cors_on: httpx.Client) -> None:
    allowed = cors_on.post("/v1/chat/completions", json=CHAT, headers={"origin": CONSOLE, **AUTH})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == CONSOLE
    assert "x-llmeu-trace-id" in allowed.headers["access-control-expose-headers"]
    refused = cors_on.post("/v1/chat/completions", json=CHAT, headers={"origin": CONSOLE})
    assert refused.status_code == 401  # the console can read why it was refused
    assert refused.headers["access-control-allow-origin"] == CONSOLE
    for headers in ({"origin": "https://elsewhere.example.com", **AUTH}, AUTH):
        other = cors_on.post("/v1/chat/completions", json=CHAT, headers=headers)
        assert other.status_code == 200
        assert cors_headers(other) == {}


def test_a_stream_to_the_allowed_origin_carries_the_header(cors_on: httpx.Client) -> None:
    with cors_on.stream(
        "POST", "/v1/chat/completions", json={**CHAT, "stream": True},
        headers={"origin": CONSOLE, **AUTH},
    ) as response:  # fmt: skip
        assert response.headers["access-control-allow-origin"] == CONSOLE
        assert response.read().endswith(b"data: [DONE]\n\n")


def test_requested_headers_are_echoed_only_within_bounds(cors_on: httpx.Client) -> None:
    long_list = ", ".join(f"x-custom-{i}" for i in range(200))
    response = cors_on.options("/v1/chat/completions", headers=preflight(CONSOLE, long_list))
    assert response.status_code == 204
    assert "access-control-allow-headers" not in response.headers


def test_any_origin_when_configured_with_a_star(start: Callable[..., httpx.Client]) -> None:
    client = start("*")
    response = client.options("/v1/models", headers=preflight("https://anywhere.example"))
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in response.headers
