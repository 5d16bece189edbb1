"""The calls a probe makes, what they may cost, and the report made of their answers.

Every API's probe makes the same calls in the same order (`make_calls`),
each with a small output-token limit: a stream, a stream with a tiny function
tool the model must call, a whole answer, a stream hung up after its first
delta and the call after it, an invalid request, and an unknown model. Chat
completions, whose streams report usage only when asked, adds a stream not
asking right after the first: eight calls, at most `MAX_OUTPUT_TOKENS` output
tokens in all, which on a paid endpoint costs well under a cent. The
Responses and Messages plans (`responses_plan`, `messages_plan`) make seven.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from llmeu.probe import chat_checks, checks
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
    refused_key: str | None = None
    """Set when the upstream refused the key (401 or 403): no check could judge anything, and
    no catalog entry is suggested."""

    @property
    def failed(self) -> bool:
        return self.refused_key is not None or failed(self.checks)

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
            "suggested_entry": None if self.refused_key else self.suggested_entry,
            "refused_key": self.refused_key,
        }


Send = Callable[..., Exchange]
"""`send(name, body, hang_up=False)`: one call to the API's path, read as it arrives."""


def sender(client: httpx.Client, path: str, carries_delta: Callable[[str], bool]) -> Send:
    """Calls to `path`, a hang-up coming after the first event that `carries_delta`."""

    def send(name: str, body: dict[str, Any], hang_up: bool = False) -> Exchange:
        return call(
            client, name, body, path=path, carries_delta=carries_delta,
            hang_up_after_first_delta=hang_up,
        )  # fmt: skip

    return send


Ask = Callable[..., dict[str, Any]]
"""`ask(max_tokens, **fields)`: a body asking the model the prompt, with those fields."""


@dataclass(frozen=True, slots=True)
class Calls:
    streamed: Exchange
    tool: Exchange
    whole: Exchange
    hung_up: Exchange
    after: Exchange
    invalid: Exchange
    unknown: Exchange
    unasked: Exchange | None  # the stream without usage, where usage is asked for

    @property
    def streams(self) -> list[Exchange]:
        """The streams whose timing the suggested timeouts are made of."""
        return [s for s in (self.streamed, self.unasked, self.after) if s is not None]


def make_calls(
    send: Send,
    ask: Ask,
    *,
    tool: Mapping[str, Any],
    invalid: dict[str, Any],
    unknown: dict[str, Any],
    usage: Mapping[str, Any] | None = None,
) -> Calls:
    """The calls, in order: `tool` holds the fields that make the model call TOOL,
    `usage` those that ask a stream for usage (then a stream not asking follows)."""
    streamed = send("stream", ask(SMALL, stream=True, **(usage or {})))
    unasked = send("stream without usage", ask(SMALL, stream=True)) if usage else None
    tool_call = send("tool call", ask(LONGER, stream=True, **tool))
    whole = send("whole answer", ask(SMALL))
    hung_up = send("hang-up", ask(LONGER, stream=True), hang_up=True)
    after = send("after the hang-up", ask(SMALL, stream=True))
    return Calls(
        streamed, tool_call, whole, hung_up, after,
        invalid=send("invalid request", invalid), unknown=send("unknown model", unknown),
        unasked=unasked,
    )  # fmt: skip


def unknown_model() -> str:
    return f"missing-model-{secrets.token_hex(4)}"


def judged_alike(
    made: Calls,
    verify: Callable[[str], Recorded | None],
    error_shape: Callable[[Exchange, str, tuple[int, ...]], Check] = checks.error_shape,
) -> list[Check]:
    """The hang-up and the two refusals, judged alike on every API but for the error's shape."""
    return [
        checks.cancellation(made.hung_up, made.after, verify),
        error_shape(made.invalid, "invalid request", (400, 422)),
        error_shape(made.unknown, "unknown model", (400, 404)),
    ]


def probe(
    client: httpx.Client,
    base_url: str,
    model: str,
    verify: Callable[[str], Recorded | None] = lambda trace_id: None,
) -> Report:
    """Make the calls and judge them. `verify(trace_id)` returns how the server recorded a
    hung-up call — its status and when it finished — where it can tell (llmeu's platform
    API), else None."""

    def ask(max_tokens: int, **extra: Any) -> dict[str, Any]:
        return {"model": model, "messages": PROMPT, "max_tokens": max_tokens, **extra}

    made = make_calls(
        sender(client, "/chat/completions", chat_checks.answers), ask,
        usage={"stream_options": {"include_usage": True}},
        tool={"tools": [TOOL], "tool_choice": "required"},
        invalid={"model": model, "messages": [{"role": "nobody"}]},
        unknown={"model": unknown_model(), "messages": PROMPT},
    )  # fmt: skip
    assert made.unasked is not None  # asked for with `usage`
    found: list[Check] = [
        *chat_checks.transport(made.streamed),
        *checks.framing(made.streamed),
        *chat_checks.content(made.streamed),
        chat_checks.tools(made.tool),
        *chat_checks.usage(made.streamed, made.unasked, made.whole),
        *judged_alike(made, verify),
    ]
    entry = suggest(model, found, made.streams)
    return Report(base_url, model, tuple(found), entry, key_refusal(made.streamed))


def key_refusal(first: Exchange) -> str | None:
    """`401 …` or `403 …` with the upstream's own words when it refused the first call's key."""
    if first.status not in (401, 403):
        return None
    words = first.body.decode("utf-8", "replace").strip()[:300]
    return f"{first.status}: {words}" if words else str(first.status)


def failed(found: tuple[Check, ...] | list[Check]) -> bool:
    return any(c.verdict == FAIL for c in found)


def suggest(
    model: str,
    found: list[Check],
    streams: list[Exchange],
    *,
    kind: str = "openai",
    capability: str = "chat",
    only_if_passed: bool = False,
) -> dict[str, Any]:
    """A catalog entry's technical half (docs/design.md §4): `capability` (unless `only_if_passed`
    and a check failed) and `tools` with it when the model called the tool as asked, and
    timeouts a few times what was seen. The sovereignty half (provider, region, class,
    retention, prices) is the operator's to state: nothing on the wire can tell it."""
    capabilities = [] if only_if_passed and failed(found) else [capability]
    if capabilities and any(
        c.name == "tool calls" and c.verdict not in (FAIL, WARN) for c in found
    ):
        capabilities.append("tools")
    first = [r.at for s in streams for r in s.reads[:1]]
    gaps = [b.at - a.at for s in streams for a, b in zip(s.reads, s.reads[1:], strict=False)]
    return {
        "kind": kind,
        "model": model,
        "capabilities": capabilities,
        "timeouts": {
            "connect": 10,
            "first_token": max(10, math.ceil(5 * max(first, default=0))),
            "idle": max(10, math.ceil(10 * max(gaps, default=0))),
            "total": 600,
        },
    }
