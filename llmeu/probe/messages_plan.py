"""The calls `llmeu probe --api messages` makes to `{base}/messages`, and their report.

Seven calls in Anthropic's Messages shape, each with a small `max_tokens`: a
stream, a stream with a tiny tool the model must use (`tool_choice: any`), a
whole answer, a stream hung up after its first delta and the call after it,
an invalid request, and an unknown model. At most `MAX_OUTPUT_TOKENS` output
tokens in all. The key goes in `x-api-key` with `anthropic-version`
(`llmeu.cli.probe_upstream`).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from typing import Any

import httpx

from llmeu.probe import checks, messages_checks
from llmeu.probe.checks import FAIL, WARN, Check, Recorded
from llmeu.probe.exchange import Exchange, call
from llmeu.probe.plan import LONGER, PROMPT, SMALL, TOOL, Report

ANTHROPIC_VERSION = "2023-06-01"
FUNCTION = TOOL["function"]
# Anthropic's tool shape: name, description and a JSON schema as `input_schema`.
ANTHROPIC_TOOL = {
    "name": FUNCTION["name"],
    "description": FUNCTION["description"],
    "input_schema": FUNCTION["parameters"],
}
CALLS = 7
MAX_OUTPUT_TOKENS = 3 * SMALL + 2 * LONGER  # the error calls produce none


def probe(
    client: httpx.Client,
    base_url: str,
    model: str,
    verify: Callable[[str], Recorded | None] = lambda trace_id: None,
) -> Report:
    """Make the calls and judge them; `verify` as for chat completions (`plan.probe`)."""

    def send(name: str, body: dict[str, Any], *, hang_up: bool = False) -> Exchange:
        return call(
            client,
            name,
            body,
            path="/messages",
            hang_up_after_first_delta=hang_up,
            has_delta=messages_checks.has_delta,
        )

    def ask(tokens: int, **extra: Any) -> dict[str, Any]:
        return {"model": model, "max_tokens": tokens, "messages": PROMPT, **extra}

    streamed = send("stream", ask(SMALL, stream=True))
    tool = send(
        "tool call",
        ask(LONGER, stream=True, tools=[ANTHROPIC_TOOL], tool_choice={"type": "any"}),
    )
    whole = send("whole answer", ask(SMALL))
    hung_up = send("hang-up", ask(LONGER, stream=True), hang_up=True)
    after = send("after the hang-up", ask(SMALL, stream=True))
    invalid = send(
        "invalid request",
        {"model": model, "max_tokens": SMALL, "messages": [{"role": "nobody", "content": "1"}]},
    )
    unknown = send(
        "unknown model",
        {**ask(SMALL), "model": f"missing-model-{secrets.token_hex(4)}"},
    )
    found: list[Check] = [
        *messages_checks.transport(streamed),
        *checks.framing(streamed),
        *messages_checks.framing(streamed),
        *messages_checks.content(streamed),
        messages_checks.tools(tool),
        *messages_checks.usage(streamed, whole),
        checks.cancellation(hung_up, after, verify),
        messages_checks.error_shape(invalid, "invalid request", (400, 422)),
        messages_checks.error_shape(unknown, "unknown model", (400, 404)),
        *messages_checks.metadata(streamed, model),
    ]
    return Report(base_url, model, tuple(found), suggest(model, found, [streamed, after]))


def suggest(model: str, found: list[Check], streams: list[Exchange]) -> dict[str, Any]:
    """The technical half of a catalog entry for a native Messages upstream (`kind:
    anthropic`): `chat` only when no check failed, `tools` when the model used the tool."""
    capabilities = [] if any(c.verdict == FAIL for c in found) else ["chat"]
    if capabilities and any(
        c.name == "tool calls" and c.verdict not in (FAIL, WARN) for c in found
    ):
        capabilities.append("tools")
    first = [r.at for s in streams for r in s.reads[:1]]
    gaps = [b.at - a.at for s in streams for a, b in zip(s.reads, s.reads[1:], strict=False)]
    return {
        "kind": "anthropic",
        "model": model,
        "capabilities": capabilities,
        "timeouts": {
            "connect": 10,
            "first_token": max(10, math.ceil(5 * max(first, default=0))),
            "idle": max(10, math.ceil(10 * max(gaps, default=0))),
            "total": 600,
        },
    }
