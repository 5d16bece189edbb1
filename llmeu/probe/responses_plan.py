"""The calls `llmeu probe --api responses` makes to `{base}/responses`, and their report.

Seven calls (`plan.make_calls`), each with a small `max_output_tokens`: a
stream, a stream with a tiny function tool the model must call, a whole
answer, a stream hung up after its first delta and the call after it, an
invalid request, and an unknown model. At most `MAX_OUTPUT_TOKENS` output
tokens in all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from llmeu.probe import checks, plan, responses_checks
from llmeu.probe.checks import Check, Recorded

INPUT = plan.PROMPT[0]["content"]
FUNCTION = {"type": "function", **plan.TOOL["function"]}  # the Responses API's flat tool shape
CALLS = 7
MAX_OUTPUT_TOKENS = 3 * plan.SMALL + 2 * plan.LONGER  # the error calls produce none


def probe(
    client: httpx.Client,
    base_url: str,
    model: str,
    verify: Callable[[str], Recorded | None] = lambda trace_id: None,
) -> plan.Report:
    """Make the calls and judge them; `verify` as for chat completions (`plan.probe`)."""

    def ask(tokens: int, **extra: Any) -> dict[str, Any]:
        return {"model": model, "input": INPUT, "max_output_tokens": tokens, **extra}

    made = plan.make_calls(
        plan.sender(client, "/responses", responses_checks.carries_delta), ask,
        tool={"tools": [FUNCTION], "tool_choice": "required"},
        invalid={"model": model, "input": [{"role": "nobody"}]},
        unknown={"model": plan.unknown_model(), "input": INPUT},
    )  # fmt: skip
    found: list[Check] = [
        *responses_checks.transport(made.streamed),
        *checks.framing(made.streamed),
        *responses_checks.framing(made.streamed),
        *responses_checks.content(made.streamed),
        responses_checks.tools(made.tool),
        *responses_checks.usage(made.streamed, made.whole),
        *plan.judged_alike(made, verify),
        *responses_checks.model(made.streamed, model),
    ]
    entry = plan.suggest(model, found, made.streams, capability="responses", only_if_passed=True)
    return plan.Report(base_url, model, tuple(found), entry, plan.key_refusal(made.streamed))
