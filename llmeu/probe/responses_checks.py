"""Each check: what a client relies on from a Responses API stream, judged on what arrived.

The wire is the Responses format of docs/design.md: every event an `event:` line naming its
data's `type`, a `sequence_number` from 0 up by one, exactly one terminal
event (`response.completed`, `.incomplete` or `.failed`) and nothing after
it, no `[DONE]`. Framing, errors and cancellation are judged as for chat
completions (`checks`); what differs is here.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from llmeu.probe import checks
from llmeu.probe.checks import FAIL, NOT_APPLICABLE, PASS, WARN, Check
from llmeu.probe.exchange import Exchange

TERMINAL = ("response.completed", "response.incomplete", "response.failed")
TEXT_DELTA = "response.output_text.delta"
ARGUMENTS_DELTA = "response.function_call_arguments.delta"
# A one-message answer, deltas collapsed: what a client's assembler expects, in this order.
TEXT_ORDER = (
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    TEXT_DELTA,
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
)


def carries_delta(data: str) -> bool:
    event = checks.decoded(data)
    return (
        isinstance(event, dict)
        and event.get("type") in (TEXT_DELTA, ARGUMENTS_DELTA)
        and bool(event.get("delta"))
    )


def terminal_response(stream: Exchange) -> dict[str, Any] | None:
    """The response object of the stream's last terminal event."""
    ends = [e for e in checks.objects(stream) if e.get("type") in TERMINAL]
    response = ends[-1].get("response") if ends else None
    return response if isinstance(response, dict) else None


def output_text(response: dict[str, Any]) -> str:
    """The text of a response object's message items, as a client joins it."""
    return "".join(
        part.get("text") or ""
        for item in response.get("output") or ()
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or ()
        if isinstance(part, dict) and part.get("type") == "output_text"
    )


def transport(stream: Exchange) -> Iterator[Check]:
    return checks.transport(stream, _ending, carries_delta)


def _ending(stream: Exchange) -> Iterator[Check]:
    """Exactly one terminal event, the last; no `[DONE]`."""
    events = stream.events
    kinds = [checks.event_type(e) for e in events]
    ends = [i for i, kind in enumerate(kinds) if kind in TERMINAL]
    wrong = checks.misplaced(ends, len(events))
    if not wrong:
        yield Check("transport", "terminal event", PASS, f"{kinds[-1]}, once, last")
    else:
        if len(ends) == 1:
            wrong += f": {len(events) - 1 - ends[0]} event(s) after {kinds[ends[0]]}"
        evidence = (checks.excerpt(stream.raw[-300:]),)
        yield Check("transport", "terminal event", FAIL, wrong, evidence)
    yield checks.no_done(stream, "Responses")


def framing(stream: Exchange) -> Iterator[Check]:
    """Event names and sequence numbers (reads, syntax and JSON are judged by `checks`)."""
    named = checks.event_names(stream)
    if named is None:
        return
    yield named
    numbers = [e.get("sequence_number") for e in checks.objects(stream)]
    wrong = next((i for i, n in enumerate(numbers) if n != i), None)
    yield Check(
        "framing",
        "sequence_number",
        PASS if wrong is None else FAIL,
        f"0 to {len(numbers) - 1}, up by one"
        if wrong is None
        else f"event {wrong} has sequence_number {numbers[wrong]!r}, expected {wrong}",
        ()
        if wrong is None
        else (", ".join(str(n) for n in numbers[max(0, wrong - 2) : wrong + 3]),),
    )


def content(stream: Exchange) -> Iterator[Check]:
    events = checks.objects(stream)
    kinds = [k for k, _ in itertools.groupby(str(e.get("type")) for e in events)]
    order_ok = tuple(kinds[:-1]) == TEXT_ORDER and kinds[-1:] in (
        ["response.completed"],
        ["response.incomplete"],
    )
    yield Check(
        "content",
        "event order",
        PASS if order_ok else FAIL,
        "created → in_progress → output_item.added → content_part.added → "
        "output_text.delta… → output_text.done → content_part.done → output_item.done → "
        + (kinds[-1].removeprefix("response.") if kinds else "nothing"),
        () if order_ok else (" → ".join(k.removeprefix("response.") for k in kinds),),
    )
    deltas = "".join(str(e.get("delta") or "") for e in events if e.get("type") == TEXT_DELTA)
    done = [str(e.get("text")) for e in events if e.get("type") == "response.output_text.done"]
    final = terminal_response(stream)
    texts = {"deltas": deltas, "output_text.done": done[0] if done else None}
    texts["the terminal response"] = output_text(final) if final else None
    agree = len(set(texts.values())) == 1 and bool(deltas)
    yield Check(
        "content",
        "text",
        PASS if agree else FAIL,
        f"{len(deltas)} characters, the same in the deltas, output_text.done and the response"
        if agree
        else "the text differs: " + "; ".join(f"{k} {v!r:.60}" for k, v in texts.items()),
        () if agree else tuple(f"{k}: {v!r:.200}" for k, v in texts.items()),
    )
    yield _ids(events)


def _ids(events: list[dict[str, Any]]) -> Check:
    responses = {e["response"].get("id") for e in events if isinstance(e.get("response"), dict)}
    added = [e["item"] for e in events if e.get("type") == "response.output_item.added"]
    items = {str(i.get("id")) for i in added if isinstance(i, dict)}
    used = {str(e["item_id"]) for e in events if "item_id" in e}
    problems = []
    if len(responses) != 1 or None in responses:
        problems.append(f"{len(responses)} response ids: {sorted(map(str, responses))}")
    if not used <= items:
        problems.append(f"item ids {sorted(used - items)} were never added")
    stray = [e for e in events if "item_id" in e and str(e["item_id"]) not in items]
    return Check(
        "metadata",
        "ids",
        FAIL if problems else PASS,
        "; ".join(problems) or f"one response id, {len(items)} item id(s) used as added",
        (*(json.dumps(e)[:200] for e in stray[:2]), *problems[:1]) if problems else (),
    )


def tools(stream: Exchange) -> Check:
    refused = checks.tools_refused(stream)
    if refused is not None:
        return refused
    events = checks.objects(stream)
    calls: dict[str, dict[str, str]] = {}
    for event in events:
        if event.get("type") == ARGUMENTS_DELTA:
            slot = calls.setdefault(str(event.get("item_id")), {"args": "", "done": ""})
            slot["args"] += str(event.get("delta") or "")
    finished = [e for e in events if e.get("type") == "response.function_call_arguments.done"]
    if not calls and not finished:
        return Check("content", "tool calls", WARN, "asked to call a tool, the model did not")
    problems = []
    for event in finished:
        item = str(event.get("item_id"))
        arguments = event.get("arguments")
        if not event.get("name"):
            problems.append(f"{item}: no name")
        if not isinstance(arguments, str) or not checks.is_json(arguments):
            problems.append(f"{item}: arguments are not JSON")
        elif item in calls and calls[item]["args"] != arguments:
            problems.append(f"{item}: the deltas do not join into the arguments")
    unfinished = sorted(set(calls) - {str(e.get("item_id")) for e in finished})
    problems += [f"{item}: deltas without function_call_arguments.done" for item in unfinished]
    names = ", ".join(str(e.get("name")) for e in finished)
    return Check(
        "content",
        "tool calls",
        FAIL if problems else PASS,
        f"{len(finished)} call(s): {names}" + ("; " + "; ".join(problems) if problems else ""),
        tuple(json.dumps(e)[:200] for e in finished[:2]) if problems else (),
    )


def usage(streamed: Exchange, whole: Exchange) -> Iterator[Check]:
    final = terminal_response(streamed)
    body = whole.json() if whole.status == 200 else None
    for name, response in (("streamed", final), ("non-streamed", body)):
        if not isinstance(response, dict):
            yield Check("usage", name, NOT_APPLICABLE, "no response object to read usage from")
            continue
        counts = response.get("usage")
        if not isinstance(counts, dict):
            yield Check("usage", name, WARN, "no usage: llmeu will estimate the counts")
            continue
        tokens = [counts.get(k) for k in ("input_tokens", "output_tokens", "total_tokens")]
        problems = []
        if not all(isinstance(t, int) and t >= 0 for t in tokens):
            problems.append("input_tokens, output_tokens and total_tokens are not all counts")
        elif tokens[0] + tokens[1] != tokens[2]:  # type: ignore[operator]
            problems.append("total_tokens is not input_tokens + output_tokens")
        elif tokens[1] == 0 and output_text(response):
            problems.append("zero output tokens for a non-empty answer")
        yield Check(
            "usage",
            name,
            FAIL if problems else PASS,
            "; ".join(problems) or json.dumps(counts)[:200],
            (json.dumps(counts)[:300],) if problems else (),
        )


def model(stream: Exchange, requested: str) -> Iterator[Check]:
    responses = [
        e["response"] for e in checks.objects(stream) if isinstance(e.get("response"), dict)
    ]
    yield checks.model_echoed(responses, requested)
    yield checks.residency(stream)
