"""The calls a probe makes, what they may cost, and the report made of their answers.

Eight calls, each with a small `max_tokens`: a stream asking for usage, one
not asking, a stream with a tiny function tool the model must call, a whole
answer, a stream hung up after its first delta and the call after it, an
invalid request, and an unknown model. At most `MAX_OUTPUT_TOKENS` output
tokens in all, which on a paid endpoint costs well under a cent.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from llmeu.probe import checks
from llmeu.probe.checks import FAIL, WARN, Check, Recorded
from llmeu.probe.exchange import Exchange, call

PROMPT = [{"role": "user", "content": "Count from 1 to 12, one number per line."}]
TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The current time in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
SMALL, LONGER = 24, 64
CALLS = 8
MAX_OUTPUT_TOKENS = 4 * SMALL + 2 * LONGER  # the error calls produce none


@dataclass(frozen=True, slots=True)
class Report:
    base_url: str
    model: str
    checks: tuple[Check, ...]
    suggested_entry: dict[str, Any]

    @property
    def failed(self) -> bool:
        return any(c.verdict == FAIL for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "model": self.model,
            "result": "fail" if self.failed else "pass",
            "checks": [
                {
                    "group": c.group,
                    "check": c.name,
                    "result": c.verdict,
                    "detail": c.detail,
                    "evidence": list(c.evidence),
                }
                for c in self.checks
            ],
            "suggested_entry": self.suggested_entry,
        }


def probe(
    client: httpx.Client,
    base_url: str,
    model: str,
    verify: Callable[[str], Recorded | None] = lambda trace_id: None,
) -> Report:
    """Make the calls and judge them. `verify(trace_id)` returns how the server recorded a
    hung-up call — its status and when it finished — where it can tell (llmeu's platform
    API), else None."""

    def chat(name: str, max_tokens: int, **extra: Any) -> Exchange:
        body = {"model": model, "messages": PROMPT, "max_tokens": max_tokens, **extra}
        return call(client, name, body)

    streamed = chat("stream", SMALL, stream=True, stream_options={"include_usage": True})
    unasked = chat("stream without usage", SMALL, stream=True)
    tool = chat("tool call", LONGER, stream=True, tools=[TOOL], tool_choice="required")
    whole = chat("whole answer", SMALL)
    body = {"model": model, "messages": PROMPT, "max_tokens": LONGER, "stream": True}
    hung_up = call(client, "hang-up", body, hang_up_after_first_delta=True)
    after = chat("after the hang-up", SMALL, stream=True)
    invalid = call(client, "invalid request", {"model": model, "messages": [{"role": "nobody"}]})
    unknown = call(
        client,
        "unknown model",
        {"model": f"missing-model-{secrets.token_hex(4)}", "messages": PROMPT},
    )
    found: list[Check] = [
        *checks.transport(streamed),
        *checks.framing(streamed),
        *checks.content(streamed),
        checks.tools(tool),
        *checks.usage(streamed, unasked, whole),
        checks.cancellation(hung_up, after, verify),
        checks.error_shape(invalid, "invalid request", (400, 422)),
        checks.error_shape(unknown, "unknown model", (400, 404)),
    ]
    return Report(base_url, model, tuple(found), suggest(model, found, [streamed, unasked, after]))


def suggest(model: str, found: list[Check], streams: list[Exchange]) -> dict[str, Any]:
    """A catalog entry's technical half (DESIGN §4): capabilities, and timeouts a few times
    what was seen. The sovereignty half (provider, region, class, retention, prices) is the
    operator's to state: nothing on the wire can tell it."""
    capabilities = ["chat"]
    if any(c.name == "tool calls" and c.verdict not in (FAIL, WARN) for c in found):
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
