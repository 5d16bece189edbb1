"""The calls `llmeu probe --api messages` makes to `{base}/messages`, and their report.

Seven calls in Anthropic's Messages shape (`plan.make_calls`), each with a
small `max_tokens`: a stream, a stream with a tiny tool the model must use
(`tool_choice: any`), a whole answer, a stream hung up after its first delta
and the call after it, an invalid request, and an unknown model. At most
`MAX_OUTPUT_TOKENS` output tokens in all. The key goes in `x-api-key` with
`anthropic-version` (`llmeu.cli.probe_upstream`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from llmeu.probe import checks, messages_checks, plan
from llmeu.probe.checks import Check, Recorded

FUNCTION = plan.TOOL["function"]
# Anthropic's tool shape: name, description and a JSON schema as `input_schema`.
ANTHROPIC_TOOL = {
    "name": FUNCTION["name"],
    "description": FUNCTION["description"],
    "input_schema": FUNCTION["parameters"],
}
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
        return {"model": model, "max_tokens": tokens, "messages": plan.PROMPT, **extra}

    made = plan.make_calls(
        plan.sender(client, "/messages", messages_checks.carries_delta), ask,
        tool={"tools": [ANTHROPIC_TOOL], "tool_choice": {"type": "any"}},
        invalid={"model": model, "max_tokens": plan.SMALL,
                 "messages": [{"role": "nobody", "content": "1"}]},
        unknown={**ask(plan.SMALL), "model": plan.unknown_model()},
    )  # fmt: skip
    found: list[Check] = [
        *messages_checks.transport(made.streamed),
        *checks.framing(made.streamed),
        *messages_checks.framing(made.streamed),
        *messages_checks.content(made.streamed),
        messages_checks.tools(made.tool),
        *messages_checks.usage(made.streamed, made.whole),
        *plan.judged_alike(made, verify, messages_checks.error_shape),
        *messages_checks.metadata(made.streamed, model),
    ]
    entry = plan.suggest(model, found, made.streams, kind="anthropic", only_if_passed=True)
    return plan.Report(base_url, model, tuple(found), entry, plan.key_refusal(made.streamed))
