"""The calls `llmeu probe --api responses` makes to `{base}/responses`, and their report.

Seven calls, each with a small `max_output_tokens`: a stream, a stream with a
tiny function tool the model must call, a whole answer, a stream hung up
after its first delta and the call after it, an invalid request, and an
unknown model. At most `MAX_OUTPUT_TOKENS` output tokens in all.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from typing import Any

import httpx

from llmeu.probe import checks, responses_checks
from llmeu.probe.checks import FAIL, WARN, Check, Recorded
from llmeu.probe.exchange import Exchange, call
from llmeu.probe.plan import LONGER, PROMPT, SMALL, TOOL, Report

INPUT = PROMPT[0]["content"]
FUNCTION = {"type": "function", **TOOL["function"]}  # the Responses API's flat tool shape
CALLS = 7
MAX_OUTPUT_TOKENS = 3 * SMALL + 2 * LONGER  # the error calls produce none


def probe(
    client: httpx.Client,
    base_url: str,
    model: str,
    verify: Callable[[str], Recorded | None] = lambda trace_id: None,
) -> Report:
    """Make the calls and judge them; `verify` as for chat completions (`plan.probe`)."""

    def respond(name: str, body: dict[str, Any], *, hang_up: bool = False) -> Exchange:
        return call(
            client,
            name,
            body,
            path="/responses",
            hang_up_after_first_delta=hang_up,
            has_delta=responses_checks.has_delta,
        )

    def ask(tokens: int, **extra: Any) -> dict[str, Any]:
        return {"model": model, "input": INPUT, "max_output_tokens": tokens, **extra}

    streamed = respond("stream", ask(SMALL, stream=True))
    tool = respond("tool call", ask(LONGER, stream=True, tools=[FUNCTION], tool_choice="required"))
    whole = respond("whole answer", ask(SMALL))
    hung_up = respond("hang-up", ask(LONGER, stream=True), hang_up=True)
    after = respond("after the hang-up", ask(SMALL, stream=True))
    invalid = respond("invalid request", {"model": model, "input": [{"role": "nobody"}]})
    unknown = respond(
        "unknown model", {"model": f"missing-model-{secrets.token_hex(4)}", "input": INPUT}
    )
    found: list[Check] = [
        *responses_checks.transport(streamed),
        *checks.framing(streamed),
        *responses_checks.framing(streamed),
        *responses_checks.content(streamed),
        responses_checks.tools(tool),
        *responses_checks.usage(streamed, whole),
        checks.cancellation(hung_up, after, verify),
        checks.error_shape(invalid, "invalid request", (400, 422)),
        checks.error_shape(unknown, "unknown model", (400, 404)),
        *responses_checks.model(streamed, model),
    ]
    return Report(base_url, model, tuple(found), suggest(model, found, [streamed, after]))


def suggest(model: str, found: list[Check], streams: list[Exchange]) -> dict[str, Any]:
    """The technical half of a catalog entry, as for chat completions: `responses` only when
    no check failed, `tools` when the model called the tool as asked."""
    capabilities = [] if any(c.verdict == FAIL for c in found) else ["responses"]
    if capabilities and any(
        c.name == "tool calls" and c.verdict not in (FAIL, WARN) for c in found
    ):
        capabilities.append("tools")
    first = [r.at for s in streams for r in s.reads[:1]]
    gaps = [b.at - a.at for s in streams for a, b in zip(s.reads, s.reads[1:], strict=False)]
    return {
        "kind": "openai",
        "model": model,
        "capabilities": capabilities,
        "timeouts": {
            "connect": 10,
            "first_token": max(10, math.ceil(5 * max(first, default=0))),
            "idle": max(10, math.ceil(10 * max(gaps, default=0))),
            "total": 600,
        },
    }
