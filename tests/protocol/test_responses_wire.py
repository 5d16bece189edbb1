"""Responses requests onto the canonical chat call: input items, tools, formats, errors."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from llmeu.calls.request import ChatRequest
from llmeu.errors import InvalidRequest, NotFound
from llmeu.protocol.responses_input import input_item_list
from llmeu.protocol.responses_wire import ResponsesRequest, check_request, ignored_fields, to_chat


def chat_of(**fields: Any) -> dict[str, Any]:
    request = msgspec.convert({"model": "m", **fields}, ResponsesRequest)
    chat: ChatRequest = to_chat(request, [], stream=False)
    return msgspec.to_builtins(chat)  # type: ignore[no-any-return]


CASES = [
    pytest.param({"input": "hi"}, [{"role": "user", "content": "hi"}], id="string"),
    pytest.param(
        {"input": "hi", "instructions": "be brief"},
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        id="instructions",
    ),
    pytest.param(
        {"input": [{"role": "developer", "content": [{"type": "input_text", "text": "d"}]},
                   {"type": "message", "role": "user", "content": [
                       {"type": "input_text", "text": "look"},
                       {"type": "input_image", "image_url": "data:image/png;base64,AA"}]}]},
        [{"role": "system", "content": [{"type": "text", "text": "d"}]},
         {"role": "user", "content": [{"type": "text", "text": "look"},
                                      {"type": "image_url",
                                       "image_url": {"url": "data:image/png;base64,AA"}}]}],
        id="parts",
    ),
    pytest.param(
        {"input": [
            {"role": "user", "content": "weather?"},
            {"type": "reasoning", "id": "rs_1", "summary": [],
             "content": [{"type": "reasoning_text", "text": "use the tool"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {"type": "function_call_output", "call_id": "c2",
             "output": [{"type": "input_text", "text": "warm"}]},
        ]},
        [{"role": "user", "content": "weather?"},
         {"role": "assistant", "content": None,
          "tool_calls": [
              {"type": "function", "id": "c1", "function": {"name": "f", "arguments": "{}"}},
              {"type": "function", "id": "c2", "function": {"name": "g", "arguments": "{}"}}],
          "thinking_blocks": [{"type": "thinking", "thinking": "use the tool"}]},
         {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
         {"role": "tool", "content": "warm", "tool_call_id": "c2"}],
        id="tool-round-trip",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "messages"), CASES)
def test_input_becomes_messages(fields: dict[str, Any], messages: list[Any]) -> None:
    assert chat_of(**fields)["messages"] == messages


def test_sampling_tools_and_format_map_onto_chat_fields() -> None:
    chat = chat_of(
        input="x", max_output_tokens=5, temperature=0.5, top_p=0.9, safety_identifier="ana",
        reasoning={"effort": "low"}, tool_choice={"type": "function", "name": "f"},
        tools=[{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        text={"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"},
                         "strict": True}},
    )  # fmt: skip
    assert chat["max_completion_tokens"] == 5 and chat["reasoning_effort"] == "low"
    assert (chat["temperature"], chat["top_p"], chat["user"]) == (0.5, 0.9, "ana")
    assert chat["tools"] == [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    ]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "s", "schema": {"type": "object"}, "strict": True},
    }


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type"),
        ({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
         "input[0].content[0].image_url"),
        ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
         "input[0].call_id"),
        ({"input": []}, "input"),
        ({"input": "x", "tool_choice": {"type": "frobnicate"},
          "tools": [{"type": "function", "name": "f"}]}, "tool_choice"),
        ({"input": "x", "text": {"format": {"type": "json_schema"}}}, "text.format"),
    ],
    ids=["item-reference", "image-file-id", "call-without-id", "empty", "unknown-tool-choice",
         "schema-without-name"],
)  # fmt: skip
def test_what_cannot_be_served_is_a_400_naming_it(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        chat_of(**fields)
    assert caught.value.param == param


def test_input_items_get_ids_for_listing() -> None:
    items = input_item_list(
        [{"role": "user", "content": "a"}, {"type": "function_call_output", "call_id": "c",
                                            "output": "o", "id": "fco_given"}],
        "resp_42",
    )  # fmt: skip
    assert items == [
        {"role": "user", "type": "message", "content": [{"type": "input_text", "text": "a"}],
         "id": "msg_42i00"},
        {"type": "function_call_output", "call_id": "c", "output": "o", "id": "fco_given"},
    ]  # fmt: skip


def request_of(**fields: Any) -> ResponsesRequest:
    return msgspec.convert({"model": "m", "input": "x", **fields}, ResponsesRequest)


@pytest.mark.parametrize(
    ("fields", "error", "param"),
    [
        ({"background": True}, InvalidRequest, "background"),
        ({"include": ["message.output_text.logprobs"]}, InvalidRequest, "include[0]"),
        ({"include": ["reasoning.encrypted_content", "everything"]}, InvalidRequest,
         "include[1]"),
        ({"stream_options": {"include_obfuscation": False}}, InvalidRequest, "stream_options"),
        ({"conversation": "conv_1"}, NotFound, "conversation"),
        ({"conversation": {"id": "conv_1"}}, NotFound, "conversation"),
        ({"prompt": {"id": "pmpt_1", "version": "2"}}, NotFound, "prompt"),
    ],
    ids=["background", "logprobs", "unknown-include", "stream-options-unstreamed",
         "conversation", "conversation-object", "prompt"],
)  # fmt: skip
def test_what_llmeu_cannot_serve_is_refused_by_name(
    fields: dict[str, Any], error: type[Exception], param: str
) -> None:
    with pytest.raises(error) as caught:
        check_request(request_of(**fields))
    assert getattr(caught.value, "param", None) == param


def test_fields_without_effect_depend_on_the_upstream_that_serves() -> None:
    req = request_of(
        client_metadata={"turn_id": "t"}, service_tier="flex", top_logprobs=3,
        include=["reasoning.encrypted_content", "web_search_call.results"],
        prompt_cache_key="k", text={"verbosity": "low"}, truncation="auto",
        reasoning={"effort": "low", "mode": "pro"}, background=False, store=False,
    )  # fmt: skip
    check_request(req)
    always = ["top_logprobs", "service_tier", "client_metadata", "include=web_search_call.results"]
    assert ignored_fields(req, native=True) == always
    assert ignored_fields(req, native=False) == [
        *always,
        "prompt_cache_key",
        "text.verbosity",
        "reasoning.mode",
        "truncation",
    ]


def test_allowed_tools_leave_the_model_only_the_tools_they_name() -> None:
    chat = chat_of(
        input="x",
        tools=[{"type": "function", "name": n} for n in ("a", "b", "c")],
        tool_choice={"type": "allowed_tools", "mode": "auto",
                     "tools": [{"type": "function", "name": "c"}, {"type": "function", "name": "a"}]},
    )  # fmt: skip
    assert [t["function"]["name"] for t in chat["tools"]] == ["a", "c"]
    assert chat["tool_choice"] == "auto"


def test_allowed_tools_naming_an_unknown_tool_is_a_400_naming_it() -> None:
    with pytest.raises(InvalidRequest) as caught:
        chat_of(input="x", tools=[{"type": "function", "name": "a"}],
                tool_choice={"type": "allowed_tools", "mode": "auto",
                             "tools": [{"type": "function", "name": "a"},
                                       {"type": "custom", "name": "a"}]})  # fmt: skip
    assert caught.value.param == "tool_choice.tools[1]"
