"""Where hosted tools may go, decided in the governance step: a table over policies and plans.

An endpoint gets a hosted tool when it runs the surface's hosted tools
natively, declares the tool, and the effective policy allows it; everything
else is dropped (named by type, each once) — or, under `hosted_tools: reject`,
the plan keeps only the endpoints that get them all, and a tool that cannot go
anywhere is a 400 naming it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from llmeu.api.call.governance import NO_HOSTED_TOOLS, ToolPassage, chat_intent, tool_passage
from llmeu.calls.hosted_tools import HostedTool, hosted_name
from llmeu.calls.request import ChatRequest, UserMessage
from llmeu.errors import InvalidRequest
from llmeu.routing.catalog import Endpoint
from llmeu.routing.policy import HostedToolsMode, Policy
from llmeu.routing.router import RoutePlan
from tests.routing.factories import endpoint, policy

CHAT = ChatRequest(model="m", messages=[UserMessage(content="hi")])
SEARCH = HostedTool.of("web_search_preview", "tools[1]", {"search_context_size": "low"})
FILES = HostedTool.of("file_search", "tools[2]", {"vector_store_ids": ["vs_1"]})


def runs(*tools: str) -> Endpoint:
    """An endpoint running `tools` natively (the chat-only one runs none)."""
    made = endpoint(f"native{len(tools)}-fr-a" if tools else "chat-fr-a")
    return replace(made, hosted_tools=frozenset(tools))


NATIVE_SEARCH, NATIVE_BOTH, CHAT_ONLY = (
    runs("web_search"),
    runs("web_search", "file_search"),
    runs(),
)


def decided(
    hosted: list[HostedTool],
    allowed: set[str],
    candidates: list[Endpoint],
    mode: HostedToolsMode = HostedToolsMode.DROP,
) -> tuple[RoutePlan, ToolPassage]:
    chosen: Policy = replace(policy(), allow_hosted_tools=frozenset(allowed), hosted_tools=mode)
    plan = RoutePlan("m", chosen, tuple(candidates), ())
    intent = replace(chat_intent(CHAT, stream=False, subject=None),
                     hosted=lambda _: hosted, runs_hosted=lambda e: bool(e.hosted_tools))  # fmt: skip
    return tool_passage(intent, CHAT, plan)


def test_type_names_are_families_of_the_policy_s_vocabulary() -> None:
    assert [hosted_name(t) for t in ("web_search_2025_08_26", "web_search_20250305",
                                     "computer_use_preview", "computer_20250124",
                                     "tool_search_tool_bm25_20251119", "mcp_toolset", "mcp")] == [
        "web_search", "web_search", "computer_use", "computer_use", "tool_search", "mcp", "mcp"]  # fmt: skip


@pytest.mark.parametrize(
    ("allowed", "endpoint", "passed", "dropped"),
    [
        ({"web_search"}, NATIVE_SEARCH, [SEARCH], ["file_search"]),
        ({"web_search", "file_search"}, NATIVE_BOTH, [SEARCH, FILES], []),
        ({"web_search", "file_search"}, CHAT_ONLY, [], ["web_search_preview", "file_search"]),
        (set(), NATIVE_BOTH, [], ["web_search_preview", "file_search"]),
    ],
    ids=["policy-allows-one", "all-go", "endpoint-runs-none", "policy-allows-none"],
)
def test_an_endpoint_gets_what_it_runs_and_the_policy_allows(
    allowed: set[str], endpoint: Endpoint, passed: list[HostedTool], dropped: list[str]
) -> None:
    plan, passage = decided([SEARCH, FILES], allowed, [endpoint])
    assert plan.candidates == (endpoint,)
    assert list(passage.passed(endpoint)) == passed
    assert passage.dropped(endpoint) == dropped


def test_a_call_without_hosted_tools_decides_nothing() -> None:
    plan, passage = decided([], {"web_search"}, [CHAT_ONLY])
    assert passage is NO_HOSTED_TOOLS and plan.candidates == (CHAT_ONLY,)
    assert NO_HOSTED_TOOLS.dropped(CHAT_ONLY) == []


def test_under_reject_the_plan_keeps_the_endpoints_that_get_every_tool() -> None:
    plan, passage = decided([SEARCH], {"web_search"}, [CHAT_ONLY, NATIVE_SEARCH],
                            HostedToolsMode.REJECT)  # fmt: skip
    assert plan.candidates == (NATIVE_SEARCH,)
    (excluded,) = plan.excluded
    assert (excluded.endpoint_id, excluded.rule) == ("chat-fr-a", "hosted_tools")
    assert excluded.reason == "does not run web_search_preview"
    assert passage.dropped(NATIVE_SEARCH) == []


@pytest.mark.parametrize(
    ("allowed", "candidates", "param", "why"),
    [
        ({"web_search"}, [NATIVE_BOTH], "tools[2]", "allows only [web_search]"),
        ({"web_search", "file_search"}, [CHAT_ONLY, NATIVE_SEARCH], "tools[2]",
         "no endpoint for `m` it admits runs it"),
    ],
    ids=["not-allowed", "run-nowhere"],
)  # fmt: skip
def test_under_reject_a_tool_that_cannot_go_is_a_400_naming_it(
    allowed: set[str], candidates: list[Endpoint], param: str, why: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        decided([SEARCH, FILES], allowed, candidates, HostedToolsMode.REJECT)
    assert (caught.value.param, caught.value.code) == (param, "hosted_tool_refused")
    assert why in caught.value.message and "file_search" in caught.value.message
