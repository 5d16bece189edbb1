"""Custom and namespace tools end to end, streamed and whole, through a real `llmeu serve`.

On a chat upstream (the fake OpenAI-compatible one) a custom tool goes as a
function of one string argument and its call comes back as a custom call —
`{type: custom, custom: {name, input}}` on chat completions, a
`custom_tool_call` item with `response.custom_tool_call_input.*` events on
the Responses API — whatever the upstream's argument pieces split; a
namespace's tools go as `namespace__name` and their calls come back by
namespace and name. An endpoint that speaks the Responses API gets them as
sent and its own custom and namespaced calls come back the same. Every
Responses event and body is validated against the `openai` SDK's types and
OpenAI's published schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from tests.support.fake_responses_upstream import PATCH as NATIVE_PATCH
from tests.support.fake_upstream import PATCH
from tests.support.openai_schema import check_response, check_stream_event
from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
    start_gateway,
)

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
GRAMMAR = 'start: begin_patch hunk end_patch\nbegin_patch: "*** Begin Patch" LF\n'
CHAT_PATCH_TOOL: Any = {"type": "custom", "custom": {"name": "apply_patch", "description": "Edit files",
                   "format": {"type": "grammar",
                              "grammar": {"syntax": "lark", "definition": GRAMMAR}}}}  # fmt: skip
WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object"},
}
PATCH_TOOL: Any = {"type": "custom", "name": "apply_patch", "description": "Edit files",
              "format": {"type": "grammar", "syntax": "lark", "definition": GRAMMAR}}  # fmt: skip
NAMESPACE: Any = {"type": "namespace", "name": "collaboration", "description": "Sub-agents",
             "tools": [{"type": "function", "name": "spawn_agent",
                        "parameters": {"type": "object"}}, PATCH_TOOL]}  # fmt: skip


@pytest.fixture(scope="module")
def responses_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    upstream = start_fake_upstream(tmp_path_factory.mktemp("native"), "fake_responses_upstream.py")
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def gateway(
    upstream_process: FakeUpstream,
    responses_upstream: FakeUpstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway]:
    config = config_yaml(
        fake_endpoint("fakeprov-fr-a", upstream_process, capabilities=("chat", "tools")),
        fake_endpoint("nativeprov-fr-a", responses_upstream, model="up-model",
                      aliases=("native-model",), capabilities=("chat", "tools", "responses")),
    )  # fmt: skip
    started = start_gateway(tmp_path_factory.mktemp("tools"), config=config)
    yield started
    started.kill()


@pytest.fixture
def client(gateway: Gateway, fake_upstream: FakeUpstream) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=gateway.admin_key, max_retries=0)


def sent_body(upstream: FakeUpstream) -> dict[str, Any]:
    body = upstream.stats()[-1]["body"]
    return body if isinstance(body, dict) else json.loads(body)


def _chat(client: openai.OpenAI, stream: bool, **extra: Any) -> tuple[str, list[dict[str, Any]]]:
    """The finish reason and the tool calls of a chat answer, read as the SDK got them (a
    stream's pieces put together by index)."""
    kwargs: dict[str, Any] = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "patch it [[tools=1;call=apply_patch;chunks=9]]"}],
        "tools": [{"type": "function", "function": {"name": "get_weather"}}, CHAT_PATCH_TOOL],
        **extra,
    }
    if not stream:
        choice = client.chat.completions.create(**kwargs).choices[0]
        return str(choice.finish_reason), [c.model_dump() for c in choice.message.tool_calls or ()]
    calls: dict[int, dict[str, Any]] = {}
    reason = ""
    for chunk in client.chat.completions.create(**kwargs, stream=True):
        for piece in (chunk.choices[0].delta.tool_calls or ()) if chunk.choices else ():
            raw = piece.model_dump(exclude_none=True)
            slot = calls.setdefault(raw["index"], {"custom": {"name": "", "input": ""}})
            slot.update({k: raw[k] for k in ("id", "type") if k in raw})
            for key in ("name", "input"):
                slot["custom"][key] += (raw.get("custom") or {}).get(key, "")
        if chunk.choices and chunk.choices[0].finish_reason:
            reason = chunk.choices[0].finish_reason
    return reason, [calls[i] for i in sorted(calls)]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_chat_custom_tool_goes_as_a_function_and_comes_back_as_a_custom_call(
    client: openai.OpenAI, fake_upstream: FakeUpstream, stream: bool
) -> None:
    reason, calls = _chat(client, stream)
    assert reason == "tool_calls"
    assert calls == [{"id": "call_1", "type": "custom",
                      "custom": {"name": "apply_patch", "input": PATCH}}]  # fmt: skip
    tools = sent_body(fake_upstream)["tools"]
    patch = tools[1]["function"]
    assert tools[1]["type"] == "function" and patch["name"] == "apply_patch"
    assert list(patch["parameters"]["properties"]) == ["input"]
    assert GRAMMAR in patch["parameters"]["properties"]["input"]["description"]


def test_chat_custom_call_in_the_conversation_goes_upstream_as_its_function_form(
    client: openai.OpenAI, fake_upstream: FakeUpstream
) -> None:
    history: list[Any] = [
        {"role": "user", "content": "patch it"},
        {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": PATCH}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Done!"},
        {"role": "user", "content": "thanks [[chunks=2]]"},
    ]  # fmt: skip
    choice: Any = {"type": "custom", "custom": {"name": "apply_patch"}}
    client.chat.completions.create(
        model="fake-model", messages=history, tools=[CHAT_PATCH_TOOL], tool_choice=choice
    )
    sent = sent_body(fake_upstream)
    call = sent["messages"][1]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "apply_patch"
    assert json.loads(call["function"]["arguments"]) == {"input": PATCH}
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "apply_patch"}}


def _responses(
    client: openai.OpenAI, stream: bool, **kwargs: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The response object and, streamed, its events, each validated."""
    if not stream:
        response = client.responses.create(**kwargs)
        body = response.model_dump(mode="json", exclude_unset=True)
        check_response(body)
        return body, []
    events = []
    for event in client.responses.create(**kwargs, stream=True):
        EVENTS.validate_python(event.model_dump())
        check_stream_event(event.model_dump(mode="json", exclude_unset=True))
        events.append(event.model_dump(mode="json", exclude_unset=True))
    final = events[-1]["response"]
    Response.model_validate(final)
    return final, events


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_custom_call_from_a_chat_upstream(
    client: openai.OpenAI, fake_upstream: FakeUpstream, stream: bool
) -> None:
    response, events = _responses(
        client, stream, model="fake-model", input="patch [[tools=1;call=apply_patch;chunks=8]]",
        tools=[WEATHER, PATCH_TOOL],
    )  # fmt: skip
    (item,) = response["output"]
    assert item["type"] == "custom_tool_call"
    assert (item["name"], item["input"], item["call_id"]) == ("apply_patch", PATCH, "call_1")
    assert [t["type"] for t in response["tools"]] == ["function", "custom"]
    if stream:
        pieces = [
            e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta"
        ]
        assert len(pieces) > 2 and "".join(pieces) == PATCH
        (done,) = [e for e in events if e["type"] == "response.custom_tool_call_input.done"]
        assert done["input"] == PATCH and done["item_id"] == item["id"]
    function = sent_body(fake_upstream)["tools"][1]["function"]
    assert function["name"] == "apply_patch" and "input" in function["parameters"]["properties"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_namespace_is_flattened_upstream_and_its_call_named_back(
    client: openai.OpenAI, fake_upstream: FakeUpstream, stream: bool
) -> None:
    response, _ = _responses(
        client, stream, model="fake-model", tools=[WEATHER, NAMESPACE],
        input="spawn [[tools=1;call=collaboration__spawn_agent;chunks=3]]",
    )  # fmt: skip
    (item,) = response["output"]
    assert item["type"] == "function_call"
    assert (item["namespace"], item["name"]) == ("collaboration", "spawn_agent")
    sent = [t["function"]["name"] for t in sent_body(fake_upstream)["tools"]]
    assert sent == ["get_weather", "collaboration__spawn_agent", "collaboration__apply_patch"]
    assert [t["type"] for t in response["tools"]] == ["function", "namespace"]


def test_responses_calls_in_the_input_go_upstream_by_their_names_there(
    client: openai.OpenAI, fake_upstream: FakeUpstream
) -> None:
    client.responses.create(
        model="fake-model", tools=[PATCH_TOOL, NAMESPACE],
        input=[
            {"role": "user", "content": "go"},
            {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": PATCH},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done!"},
            {"type": "function_call", "call_id": "c2", "namespace": "collaboration",
             "name": "spawn_agent", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "spawned"},
            {"role": "user", "content": "thanks [[chunks=2]]"},
        ],
    )  # fmt: skip
    messages = sent_body(fake_upstream)["messages"]
    calls = [c["function"] for m in messages for c in m.get("tool_calls") or ()]
    assert calls == [
        {"name": "apply_patch", "arguments": json.dumps({"input": PATCH}, ensure_ascii=False)},
        {"name": "collaboration__spawn_agent", "arguments": "{}"},
    ]
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["c1", "c2"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("tools", ["custom", "namespace"])
def test_a_native_upstream_gets_the_tools_as_sent_and_its_calls_come_back(
    client: openai.OpenAI, responses_upstream: FakeUpstream, tools: str, stream: bool
) -> None:
    responses_upstream.reset()
    response, events = _responses(client, stream, model="native-model",
                                  input=f"go [[tools={tools}]]", tools=[WEATHER, NAMESPACE])  # fmt: skip
    (item,) = response["output"]
    if tools == "custom":
        assert (item["type"], item["name"], item["input"]) == (
            "custom_tool_call",
            "apply_patch",
            NATIVE_PATCH,
        )
        if stream:
            pieces = [e["delta"] for e in events
                      if e["type"] == "response.custom_tool_call_input.delta"]  # fmt: skip
            assert "".join(pieces) == NATIVE_PATCH and len(pieces) == 3
    else:
        assert (item["type"], item["namespace"], item["name"]) == (
            "function_call",
            "collaboration",
            "spawn_agent",
        )
    sent = responses_upstream.stats()[-1]["body"]
    assert sent["tools"] == [WEATHER, NAMESPACE]


def test_names_that_collide_upstream_are_a_400_naming_both(gateway: Gateway) -> None:
    tools = [{"type": "function", "name": "collaboration__spawn_agent"}, NAMESPACE]
    response = httpx.post(f"{gateway.base_url}/responses", timeout=30,
                          headers={"authorization": f"Bearer {gateway.admin_key}"},
                          json={"model": "fake-model", "input": "x", "tools": tools})  # fmt: skip
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "tools[1].tools[0].name"
    assert "tools[1].tools[0]" in error["message"] and "tools[0]" in error["message"]
