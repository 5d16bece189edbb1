"""Hosted tools as a data flow, through a real `llmeu serve`: dropped, refused, or passed on.

A hosted tool (`web_search`, Anthropic's `web_search_20250305`…) reaches only
an endpoint that passes the surface through natively, declares the tool among
its capabilities, and serves under a policy whose `allow_hosted_tools` names
it. Elsewhere it is dropped — the routing block (`llmeu.dropped_tools`), the
`x-llmeu-dropped-tools` header and the trace say so — or, under `hosted_tools:
reject`, the call is refused with a 400 naming it. The fake upstreams record
what they received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from tests.support.anthropic_upstream import (
    FAKE_ANTHROPIC_KEY,
    anthropic_endpoint,
    start_fake_anthropic,
)
from tests.support.client_traces import settled_trace
from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
    start_gateway,
)

CODEX = Path(__file__).parents[1] / "support"
WEB_SEARCH = {"type": "web_search", "filters": {"allowed_domains": ["meteo.example.eu"]}}
WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
SERVER_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2,
                 "user_location": {"type": "approximate", "city": "Lyon", "country": "FR"}}  # fmt: skip
POLICIES = """
  - policy_id: eu-web
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    allow_hosted_tools: [web_search, file_search]
  - policy_id: eu-reject
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    allow_hosted_tools: [web_search]
    hosted_tools: reject
"""


@pytest.fixture(scope="module")
def responses_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    upstream = start_fake_upstream(tmp_path_factory.mktemp("native"), "fake_responses_upstream.py")
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def anthropic_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    upstream = start_fake_anthropic(tmp_path_factory.mktemp("anthropic"))
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def gateway(
    upstream_process: FakeUpstream,
    responses_upstream: FakeUpstream,
    anthropic_upstream: FakeUpstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway]:
    native = ("chat", "tools", "responses", "web_search")
    claude = anthropic_endpoint("anthro-fr-a", anthropic_upstream)
    claude = claude.replace("[chat, tools, embeddings]", "[chat, tools, web_search]")
    config = config_yaml(
        fake_endpoint("fakeprov-fr-a", upstream_process, capabilities=("chat", "tools")),
        fake_endpoint("nativeprov-fr-a", responses_upstream, model="up-model",
                      aliases=("native-model",), capabilities=native),
        claude,
        policies=POLICIES,
    )  # fmt: skip
    started = start_gateway(tmp_path_factory.mktemp("hosted"), config=config,
                            env={"FAKE_ANTHROPIC_KEY": FAKE_ANTHROPIC_KEY})  # fmt: skip
    yield started
    started.kill()


def key(gateway: Gateway, policy_id: str) -> str:
    created = httpx.post(f"{gateway.url}/v1/platform/keys", json={"name": policy_id,
                         "policy_id": policy_id},
                         headers={"authorization": f"Bearer {gateway.admin_key}"})  # fmt: skip
    assert created.status_code == 201, created.text
    return str(created.json()["key"])


@pytest.fixture(scope="module")
def keys(gateway: Gateway) -> dict[str, str]:
    """A key per policy: the default `eu-strict` (no hosted tool, drop), `eu-web`
    (web_search and file_search allowed, drop), `eu-reject` (web_search allowed, reject)."""
    found = {policy: key(gateway, policy) for policy in ("eu-web", "eu-reject")}
    return {"eu-strict": gateway.admin_key, **found}


def respond(gateway: Gateway, api_key: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{gateway.base_url}/responses", json=body, timeout=60,
                      headers={"authorization": f"Bearer {api_key}"})  # fmt: skip


def events(response: httpx.Response) -> list[dict[str, Any]]:
    lines = response.text.splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("policy", "model"),
    [("eu-strict", "native-model"), ("eu-web", "fake-model")],
    ids=["policy-allows-none", "endpoint-runs-none"],
)
def test_a_hosted_tool_that_cannot_go_is_dropped_and_the_answer_says_so(
    gateway: Gateway,
    keys: dict[str, str],
    responses_upstream: FakeUpstream,
    fake_upstream: FakeUpstream,
    policy: str,
    model: str,
    stream: bool,
) -> None:
    responses_upstream.reset()
    answer = respond(gateway, keys[policy], model=model, input="weather? [[chunks=2]]",
                     tools=[WEATHER, WEB_SEARCH], stream=stream)  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-llmeu-dropped-tools"] == "web_search"
    response = events(answer)[-1]["response"] if stream else answer.json()
    routing = response["llmeu"]
    assert routing["dropped_tools"] == ["web_search"]
    assert [t["type"] for t in response["tools"]] == ["function"]
    upstream = responses_upstream if model == "native-model" else fake_upstream
    sent = upstream.stats()[-1]["body"]
    sent = sent if isinstance(sent, dict) else json.loads(sent)
    assert [t.get("type") for t in sent["tools"]] == ["function"]
    trace = settled_trace(gateway, routing["trace_id"])
    assert "dropped tools: web_search" in trace["ignored_features"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_hosted_tool_goes_whole_to_a_native_endpoint_that_runs_it_when_allowed(
    gateway: Gateway, keys: dict[str, str], responses_upstream: FakeUpstream, stream: bool
) -> None:
    responses_upstream.reset()
    answer = respond(gateway, keys["eu-web"], model="native-model", stream=stream,
                     input="weather? [[web_search=1;chunks=2]]", tools=[WEATHER, WEB_SEARCH],
                     tool_choice={"type": "web_search"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert "x-llmeu-dropped-tools" not in answer.headers
    response = events(answer)[-1]["response"] if stream else answer.json()
    assert "dropped_tools" not in response["llmeu"]
    assert [item["type"] for item in response["output"]] == ["message"]
    assert response["output"][0]["content"][0]["text"] == "tok0 tok1 "
    (sent,) = responses_upstream.stats()
    assert sent["body"]["tools"] == [WEATHER, WEB_SEARCH]
    assert sent["body"]["tool_choice"] == {"type": "web_search"}


def test_a_hosted_tool_is_dropped_from_the_choice_where_it_is_dropped(
    gateway: Gateway, keys: dict[str, str], responses_upstream: FakeUpstream
) -> None:
    responses_upstream.reset()
    answer = respond(gateway, keys["eu-strict"], model="native-model", input="go [[chunks=1]]",
                     tools=[WEATHER, WEB_SEARCH], tool_choice={"type": "web_search"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert responses_upstream.stats()[-1]["body"]["tool_choice"] == "auto"


@pytest.mark.parametrize(
    ("model", "tools", "param", "why"),
    [
        ("fake-model", [WEATHER, WEB_SEARCH], "tools[1]", "no endpoint for `fake-model`"),
        ("native-model", [{"type": "file_search", "vector_store_ids": ["vs_1"]}], "tools[0]",
         "allows only [web_search]"),
    ],
    ids=["no-endpoint-runs-it", "policy-does-not-allow-it"],
)  # fmt: skip
def test_under_reject_a_hosted_tool_that_cannot_go_is_a_400_naming_it(
    gateway: Gateway,
    keys: dict[str, str],
    responses_upstream: FakeUpstream,
    model: str,
    tools: list[Any],
    param: str,
    why: str,
) -> None:
    responses_upstream.reset()
    answer = respond(gateway, keys["eu-reject"], model=model, input="x", tools=tools)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["param"], error["code"]) == (param, "hosted_tool_refused")
    assert why in error["message"] and "hosted_tools: reject" in error["message"]
    assert responses_upstream.stats() == []
    trace = settled_trace(gateway, answer.headers["x-llmeu-trace-id"])
    assert trace["status"] == "rejected"


def test_under_reject_an_allowed_hosted_tool_goes_to_an_endpoint_that_runs_it(
    gateway: Gateway, keys: dict[str, str], responses_upstream: FakeUpstream
) -> None:
    responses_upstream.reset()
    answer = respond(gateway, keys["eu-reject"], model="native-model", input="x [[chunks=1]]",
                     tools=[WEB_SEARCH])  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert responses_upstream.stats()[-1]["body"]["tools"] == [WEB_SEARCH]


def test_a_request_may_narrow_the_hosted_tools_never_widen_them(
    gateway: Gateway, keys: dict[str, str], responses_upstream: FakeUpstream
) -> None:
    narrowed = respond(gateway, keys["eu-web"], model="native-model", input="x [[chunks=1]]",
                       tools=[WEB_SEARCH], llmeu={"allow_hosted_tools": ["file_search"]})  # fmt: skip
    assert narrowed.status_code == 200 and narrowed.json()["llmeu"]["dropped_tools"] == [
        "web_search"
    ]
    widened = respond(gateway, keys["eu-strict"], model="native-model", input="x",
                      tools=[WEB_SEARCH], llmeu={"allow_hosted_tools": ["web_search"]})  # fmt: skip
    assert widened.status_code == 403
    assert widened.json()["error"]["code"] == "policy_widening"


@pytest.mark.parametrize("name", ["codex_exec_request.json", "codex_exec_multi_agent_request.json"])
def test_codex_first_request_is_served_without_its_hosted_tools(
    gateway: Gateway, fake_upstream: FakeUpstream, name: str
) -> None:
    body = json.loads((CODEX / name).read_bytes())
    body["model"] = "fake-model"
    answer = respond(gateway, gateway.admin_key, **body)
    assert answer.status_code == 200, answer.text
    assert events(answer)[-1]["type"] == "response.completed"
    dropped = answer.headers["x-llmeu-dropped-tools"].split(", ")
    assert set(dropped) == {"web_search", "tool_search"} & {t["type"] for t in body["tools"]}
    sent = json.loads(fake_upstream.stats()[-1]["body"])
    names = {t["function"]["name"] for t in sent["tools"]}
    assert "apply_patch" in names and "exec_command" in names
    assert all(t["type"] == "function" for t in sent["tools"])


def claude(gateway: Gateway, api_key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=api_key, max_retries=0)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_server_tool_goes_whole_to_an_anthropic_endpoint_when_allowed(
    gateway: Gateway, keys: dict[str, str], anthropic_upstream: FakeUpstream, stream: bool
) -> None:
    anthropic_upstream.reset()
    kwargs: dict[str, Any] = {
        "model": "claude-eu", "max_tokens": 50, "tools": [SERVER_SEARCH],
        "messages": [{"role": "user", "content": "weather? [[server=1;chunks=2]]"}],
    }  # fmt: skip
    client = claude(gateway, keys["eu-web"])
    if stream:
        with client.messages.stream(**kwargs) as streamed:
            message = streamed.get_final_message()
            headers = streamed.response.headers
    else:
        raw = client.messages.with_raw_response.create(**kwargs)
        message, headers = raw.parse(), raw.headers
        assert "dropped_tools" not in message.model_extra["llmeu"]
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "tok0 tok1 "  # type: ignore[union-attr]
    assert "x-llmeu-dropped-tools" not in headers
    sent = anthropic_upstream.stats()[-1]["body"]
    assert sent["tools"] == [SERVER_SEARCH]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_server_tool_that_cannot_go_is_dropped_and_the_answer_says_so(
    gateway: Gateway, keys: dict[str, str], anthropic_upstream: FakeUpstream, stream: bool
) -> None:
    anthropic_upstream.reset()
    body = {"model": "claude-eu", "max_tokens": 50, "stream": stream,
            "tools": [{"name": "f", "input_schema": {"type": "object"}}, SERVER_SEARCH],
            "messages": [{"role": "user", "content": "weather? [[chunks=2]]"}]}  # fmt: skip
    answer = httpx.post(f"{gateway.url}/v1/messages", json=body, timeout=60,
                        headers={"x-api-key": keys["eu-strict"]})  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-llmeu-dropped-tools"] == "web_search_20250305"
    if stream:
        (delta,) = [e for e in events(answer) if e["type"] == "message_delta"]
        routing = delta["llmeu"]
    else:
        routing = answer.json()["llmeu"]
    assert routing["dropped_tools"] == ["web_search_20250305"]
    sent = anthropic_upstream.stats()[-1]["body"]
    assert [t["name"] for t in sent["tools"]] == ["f"]


def test_under_reject_a_server_tool_not_allowed_is_an_anthropic_400_naming_it(
    gateway: Gateway, keys: dict[str, str], anthropic_upstream: FakeUpstream
) -> None:
    anthropic_upstream.reset()
    tools = [SERVER_SEARCH, {"type": "code_execution_20250825", "name": "code_execution"}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude(gateway, keys["eu-reject"]).messages.create(
            model="claude-eu", max_tokens=5, tools=tools,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "run it"}],
        )  # fmt: skip
    error = caught.value.body["error"]  # type: ignore[index]
    assert error["type"] == "invalid_request_error" and error["param"] == "tools[1]"
    assert "code_execution_20250825" in error["message"]
    assert anthropic_upstream.stats() == []


def test_the_platform_lists_the_hosted_tools_an_endpoint_runs(gateway: Gateway) -> None:
    listed = httpx.get(f"{gateway.base_url}/platform/endpoints", timeout=10,
                       headers={"authorization": f"Bearer {gateway.admin_key}"})  # fmt: skip
    capabilities = {e["endpoint_id"]: e["capabilities"] for e in listed.json()["data"]}
    assert capabilities["nativeprov-fr-a"] == ["chat", "responses", "tools", "web_search"]
    assert capabilities["fakeprov-fr-a"] == ["chat", "tools"]
