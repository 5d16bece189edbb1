"""The Responses request's tools, typed by kind and mapped onto the chat call; Codex CLI's first
request, decoded and served whole.

Every tool type of the installed `openai` SDK (read from its request types)
decodes into a typed tool. `tests/support/codex_exec_request.json` and
`codex_exec_multi_agent_request.json` are the first `POST /v1/responses` of
`codex exec` (Codex CLI 0.171, a custom model provider with `wire_api =
"responses"`, the second with `--enable multi_agent_v2`), recorded by a
server that only logged them (the working directory renamed to
/home/dev/project): function, custom (`apply_patch` with its Lark grammar),
namespace, tool_search and hosted `web_search` tools, and `client_metadata`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from openai.types.responses import response_create_params

from llmeu.errors import InvalidRequest
from llmeu.protocol.responses_tools import (
    CustomToolIn,
    FunctionToolIn,
    GrammarInput,
    HostedToolIn,
    NamespaceToolIn,
    ToolSearchToolIn,
    chat_tools,
    kind_of,
    request_tools,
    sent_tools,
)
from llmeu.protocol.responses_wire import (
    ResponsesRequest,
    check_request,
    ignored_fields,
    to_chat,
)
from tests.support.sdk_requests import fields, union_members, variants

SUPPORT = Path(__file__).parents[1] / "support"
CODEX = ["codex_exec_request.json", "codex_exec_multi_agent_request.json"]
TOOL_KINDS = union_members(fields(response_create_params.ResponseCreateParamsBase)["tools"])
decode = msgspec.json.Decoder(ResponsesRequest).decode


def codex(name: str) -> bytes:
    return (SUPPORT / name).read_bytes()


@pytest.mark.parametrize("kind", TOOL_KINDS, ids=[k.__name__ for k in TOOL_KINDS])
def test_every_tool_type_of_the_sdk_decodes_by_kind(kind: type[Any]) -> None:
    for sample in variants(kind):
        (tool,) = request_tools([sample])
        assert kind_of(tool) == sample["type"]
        if isinstance(tool, HostedToolIn):
            assert tool.options == {k: v for k, v in sample.items() if k != "type"}


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ({"type": "frobnicator"}, "tools[0].type"),
        ({"name": "f"}, "tools[0].type"),
        ({"type": "custom", "name": "p", "format": {"type": "grammar", "syntax": "ebnf",
                                                    "definition": "x"}}, "tools[0].format.syntax"),
        ({"type": "namespace", "name": "n", "tools": [{"type": "web_search"}]},
         "tools[0].tools[0].type"),
        ({"type": "function", "name": "f" * 65}, "tools[0].name"),
    ],
    ids=["unknown-type", "no-type", "grammar-syntax", "namespace-of-hosted", "long-name"],
)  # fmt: skip
def test_a_malformed_tool_is_a_400_naming_it(tool: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        request_tools([tool])
    assert caught.value.param == param


@pytest.mark.parametrize("name", CODEX)
def test_codex_first_request_decodes_whole(name: str) -> None:
    req = decode(codex(name))
    check_request(req)
    tools = request_tools(req.tools)
    kinds = {kind_of(tool) for tool in tools}
    assert {"function", "custom", "web_search"} <= kinds
    assert "client_metadata" in ignored_fields(req, native=True)
    assert "client_metadata" in ignored_fields(req, native=False)


def test_codex_tools_keep_what_serving_them_needs() -> None:
    """The typed tools hold what a mapping needs: a custom tool's grammar, a namespace's
    tools, the hosted tool's options, tool_search's execution."""
    tools = request_tools(decode(codex(CODEX[1])).tools)
    patch = next(t for t in tools if isinstance(t, CustomToolIn))
    assert patch.name == "apply_patch" and isinstance(patch.format, GrammarInput)
    assert patch.format.syntax == "lark" and patch.format.definition.startswith("start:")
    namespace = next(t for t in tools if isinstance(t, NamespaceToolIn))
    assert namespace.name == "collaboration" and namespace.tools
    assert all(isinstance(t, FunctionToolIn) for t in namespace.tools)
    search = next(t for t in tools if isinstance(t, HostedToolIn))
    assert search.type == "web_search" and search.options["external_web_access"] is False
    first = request_tools(decode(codex(CODEX[0])).tools)
    assert any(isinstance(t, ToolSearchToolIn) and t.execution == "client" for t in first)


def test_codex_request_without_its_other_tool_kinds_is_served_today() -> None:
    """Everything else Codex sends (client_metadata, include, store: false, text.verbosity,
    prompt_cache_key, developer messages with ids) is served already."""
    body = json.loads(codex(CODEX[0]))
    body["tools"] = [t for t in body["tools"] if t["type"] == "function"]
    req = decode(json.dumps(body).encode())
    check_request(req)
    chat = to_chat(req, [], stream=True)
    assert chat.tools and len(chat.tools) == len(body["tools"])
    assert chat.tool_choice == "auto" and chat.reasoning_effort == "medium"


@pytest.mark.parametrize("name", CODEX)
def test_codex_first_request_is_served(name: str) -> None:
    req = decode(codex(name))
    check_request(req)
    chat = to_chat(req, [], stream=True)
    tools = {tool.function.name: tool for tool in chat.tools or ()}
    assert "apply_patch" in tools and "exec_command" in tools
    assert {t.type for t in chat_tools(req.tools).hosted} <= {"web_search", "tool_search"}


FUNCTION = {"type": "function", "name": "f", "parameters": {"type": "object"}}
LONG = "n" * 40


@pytest.mark.parametrize(
    ("tools", "names", "namespaced"),
    [
        ([FUNCTION, {"type": "custom", "name": "apply_patch"}], ["f", "apply_patch"], {}),
        ([{"type": "namespace", "name": "crm", "description": "The CRM",
           "tools": [FUNCTION, {"type": "custom", "name": "note"}]}],
         ["crm__f", "crm__note"], {"crm__f": ("crm", "f"), "crm__note": ("crm", "note")}),
        ([{"type": "namespace", "name": LONG, "tools": [{"type": "function", "name": LONG}]}],
         [f"{LONG}__{LONG}"[:55] + "_" + hashlib.sha256(f"{LONG}__{LONG}".encode()).hexdigest()[:8]],
         None),
        ([FUNCTION, {"type": "web_search"}, {"type": "tool_search", "execution": "client"}],
         ["f"], {}),
    ],
    ids=["function-and-custom", "namespace", "namespace-beyond-64", "hosted-apart"],
)  # fmt: skip
def test_tools_become_the_chat_call_s(
    tools: list[Any], names: list[str], namespaced: dict[str, tuple[str, str]] | None
) -> None:
    mapped = chat_tools(tools)
    assert [t.function.name for t in mapped.tools] == names
    assert all(len(name) <= 64 for name in names)
    if namespaced is not None:
        assert mapped.namespaced == namespaced
    else:
        assert mapped.namespaced == {names[0]: (LONG, LONG)}


def test_a_namespace_s_description_goes_with_each_of_its_tools() -> None:
    namespace = {"type": "namespace", "name": "crm", "description": "The CRM",
                 "tools": [{**FUNCTION, "description": "Finds a customer"}]}  # fmt: skip
    (tool,) = chat_tools([namespace]).tools
    assert tool.function.description == "The CRM\n\nFinds a customer"


def test_hosted_tools_keep_their_options_and_place() -> None:
    mapped = chat_tools([FUNCTION, {"type": "web_search_preview", "search_context_size": "low"}])
    (search,) = mapped.hosted
    assert (search.name, search.type, search.param) == ("web_search", "web_search_preview",
                                                        "tools[1]")  # fmt: skip
    assert search.as_sent() == {"type": "web_search_preview", "search_context_size": "low"}
    assert sent_tools([FUNCTION, {"type": "web_search"}]) == [FUNCTION]
    assert sent_tools([FUNCTION, {"type": "web_search"}], ["tools[1]"]) == [
        FUNCTION, {"type": "web_search"}]  # fmt: skip


@pytest.mark.parametrize(
    ("tools", "param", "other"),
    [
        ([FUNCTION, {"type": "custom", "name": "f"}], "tools[1].name", "tools[0]"),
        ([{"type": "function", "name": "crm__f"},
          {"type": "namespace", "name": "crm", "tools": [FUNCTION]}],
         "tools[1].tools[0].name", "tools[0]"),
        ([{"type": "namespace", "name": "a", "tools": [{"type": "function", "name": "b__c"}]},
          {"type": "namespace", "name": "a__b", "tools": [{"type": "function", "name": "c"}]}],
         "tools[1].tools[0].name", "tools[0].tools[0]"),
    ],
    ids=["same-name", "namespace-and-function", "two-namespaces"],
)  # fmt: skip
def test_names_that_collide_upstream_are_a_400_naming_both(
    tools: list[Any], param: str, other: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        chat_tools(tools)
    assert caught.value.param == param
    assert other in caught.value.message and param.removesuffix(".name") in caught.value.message
