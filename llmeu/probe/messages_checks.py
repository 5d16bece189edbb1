"""Each check: what a client relies on from an Anthropic Messages stream, judged on what arrived.

The wire is Anthropic's: every event an `event:` line naming its data's
`type` (`ping` allowed anywhere), `message_start`, then each content block as
`content_block_start` → `content_block_delta`… → `content_block_stop` with
indexes 0, 1, 2…, then `message_delta` (the stop reason, the output tokens)
and exactly one `message_stop`, last; no `[DONE]`. An `event: error` ends a
stream as a failure. Framing and cancellation are judged as for chat
completions (`checks`); what differs is here.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from llmeu.probe import checks
from llmeu.probe.checks import FAIL, NOT_APPLICABLE, PASS, WARN, Check
from llmeu.probe.exchange import Exchange

DELTA = "content_block_delta"
STOP_REASONS = ("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal")


def carries_delta(data: str) -> bool:
    event = checks.decoded(data)
    if not isinstance(event, dict) or event.get("type") != DELTA:
        return False
    delta = event.get("delta")
    return isinstance(delta, dict) and bool(delta.get("text") or delta.get("partial_json"))


def _events(stream: Exchange) -> list[dict[str, Any]]:
    """The JSON events but `ping`s, which carry nothing."""
    return [p for p in checks.objects(stream) if p.get("type") != "ping"]


def transport(stream: Exchange) -> Iterator[Check]:
    return checks.transport(stream, _ending, carries_delta)


def _ending(stream: Exchange) -> Iterator[Check]:
    yield _terminal(stream)
    yield checks.no_done(stream, "Messages")


def _terminal(stream: Exchange) -> Check:
    """Exactly one `message_stop`, the last event; an `error` event is the terminal failure."""
    events = stream.events
    errors = [e for e in events if e.event == "error" or checks.event_type(e) == "error"]
    if errors:
        return Check(
            "transport",
            "message_stop",
            FAIL,
            "the stream ended in an error event",
            (checks.excerpt(errors[0].data),),
        )
    stops = [i for i, e in enumerate(events) if checks.event_type(e) == "message_stop"]
    wrong = checks.misplaced(stops, len(events))
    if not wrong:
        return Check("transport", "message_stop", PASS, "once, last")
    if len(stops) == 1:
        wrong += f": {len(events) - 1 - stops[0]} event(s) after it"
    return Check("transport", "message_stop", FAIL, wrong, (checks.excerpt(stream.raw[-300:]),))


def framing(stream: Exchange) -> Iterator[Check]:
    """Event names (reads, syntax and JSON are judged by `checks`)."""
    named = checks.event_names(stream)
    if named is not None:
        yield named


@dataclass
class Blocks:
    """The events walked as a client's assembler does."""

    order: list[str] = field(default_factory=list)  # events out of the wire's order
    indexes: list[str] = field(default_factory=list)  # block indexes not 0, 1, 2… as opened
    found: dict[int, dict[str, Any]] = field(default_factory=dict)  # start's block + `joined`


def blocks(events: list[dict[str, Any]]) -> Blocks:
    """Each block as its `content_block_start` named it, its deltas joined in `joined`."""
    walked = Blocks()
    problems, numbering, found = walked.order, walked.indexes, walked.found
    kinds = [str(e.get("type")) for e in events]
    if kinds[:1] != ["message_start"]:
        problems.append(f"first event {kinds[0] if kinds else 'none'}, not message_start")
    end = kinds.index("message_delta") if "message_delta" in kinds else len(kinds)
    if kinds[end:] != ["message_delta", "message_stop"]:
        tail = " → ".join(kinds[end:]) or "nothing"
        problems.append(f"{tail} after the blocks, not message_delta → message_stop")
    open_index: int | None = None
    for event in events[1:end]:
        kind, index = event.get("type"), event.get("index")
        if kind == "content_block_start":
            if open_index is not None:
                problems.append(f"block {index} started before block {open_index} stopped")
            if index != len(found):
                numbering.append(f"block index {index!r} where {len(found)} comes next")
            block = event.get("content_block")
            found[len(found)] = {**(block if isinstance(block, dict) else {}), "joined": ""}
            open_index = index
        elif kind in (DELTA, "content_block_stop"):
            if open_index is None:
                problems.append(f"{kind} for index {index!r} outside any block")
            elif index != open_index:
                numbering.append(f"{kind} for index {index!r} in block {open_index!r}")
            elif kind == DELTA:
                delta = event.get("delta") or {}
                found[len(found) - 1]["joined"] += str(
                    delta.get("text") or delta.get("partial_json") or ""
                )
            else:
                open_index = None
        else:
            problems.append(f"{kind} among the content blocks")
    if open_index is not None:
        problems.append(f"block {open_index} never stopped")
    return walked


def content(stream: Exchange) -> Iterator[Check]:
    events = _events(stream)
    walked = blocks(events)
    order, numbering, found = walked.order, walked.indexes, walked.found
    kinds = [k for k, _ in itertools.groupby(str(e.get("type")) for e in events)]
    yield Check(
        "content",
        "event order",
        FAIL if order else PASS,
        "; ".join(order[:3])
        or "message_start → (content_block_start → delta… → content_block_stop)… → "
        "message_delta → message_stop",
        (" → ".join(kinds),) if order else (),
    )
    yield Check(
        "content",
        "block indexes",
        FAIL if numbering else PASS,
        "; ".join(numbering[:3]) or f"{len(found)} block(s), indexed 0 up by one",
        (" → ".join(f"{e.get('type')}[{e.get('index')}]" for e in events if "index" in e),)
        if numbering
        else (),
    )
    text = "".join(b["joined"] for b in found.values() if b.get("type") == "text")
    yield Check(
        "content",
        "text",
        PASS if text else FAIL,
        f"{len(text)} characters joined from the text deltas" if text else "no text",
        () if text else (checks.excerpt(stream.raw),),
    )
    yield _stop_reason(events)


def _stop_reason(events: list[dict[str, Any]]) -> Check:
    deltas = [e for e in events if e.get("type") == "message_delta"]
    reason = (deltas[-1].get("delta") or {}).get("stop_reason") if deltas else None
    return Check(
        "content",
        "stop_reason",
        PASS if reason in STOP_REASONS else FAIL,
        f"message_delta: {reason!r}",
        () if reason in STOP_REASONS else (json.dumps(deltas[-1:])[:300],),
    )


def tools(stream: Exchange) -> Check:
    refused = checks.tools_refused(stream)
    if refused is not None:
        return refused
    events = _events(stream)
    found = blocks(events).found
    used = {i: b for i, b in found.items() if b.get("type") == "tool_use"}
    if not used:
        return Check("content", "tool calls", WARN, "asked to use a tool, the model did not")
    problems = [f"block {i}: no name" for i, b in used.items() if not b.get("name")]
    problems += [
        f"block {i}: input_json_delta does not join into JSON"
        for i, b in used.items()
        if not checks.is_json(b["joined"] or "{}")
    ]
    reasons = [(e.get("delta") or {}).get("stop_reason") for e in events]
    if "tool_use" not in reasons:
        problems.append(f"stop_reason {[r for r in reasons if r]}, not tool_use")
    names = ", ".join(str(b.get("name")) for b in used.values())
    return Check(
        "content",
        "tool calls",
        FAIL if problems else PASS,
        f"{len(used)} tool_use block(s): {names}"
        + ("; " + "; ".join(problems) if problems else ""),
        tuple(f"{b.get('name')}: {b['joined']!r:.200}" for b in used.values()) if problems else (),
    )


def usage(streamed: Exchange, whole: Exchange) -> Iterator[Check]:
    events = _events(streamed)
    starts = [e.get("message") for e in events if e.get("type") == "message_start"]
    deltas = [e for e in events if e.get("type") == "message_delta"]
    start = starts[0] if starts and isinstance(starts[0], dict) else {}
    counts = {
        "message_start input_tokens": (start.get("usage") or {}).get("input_tokens"),
        "message_delta output_tokens": (deltas[-1].get("usage") or {}).get("output_tokens")
        if deltas
        else None,
    }
    yield _counts("streamed", counts, streamed.status == 200, json.dumps(counts))
    body = whole.json() if whole.status == 200 else None
    if not isinstance(body, dict):
        yield Check("usage", "non-streamed", NOT_APPLICABLE, f"no message (status {whole.status})")
        return
    counted = body.get("usage")
    reported: dict[str, Any] = counted if isinstance(counted, dict) else {}
    text = "".join(
        str(b.get("text") or "") for b in body.get("content") or () if isinstance(b, dict)
    )
    yield _counts(
        "non-streamed",
        {k: reported.get(k) for k in ("input_tokens", "output_tokens")},
        bool(text),
        json.dumps(counted)[:300],
    )


def _counts(name: str, counts: dict[str, Any], answered: bool, shown: str) -> Check:
    problems = [f"{k} is not a count" for k, v in counts.items() if not _is_count(v)]
    output = list(counts.values())[-1]
    if not problems and output == 0 and answered:
        problems.append("zero output tokens for a non-empty answer")
    return Check(
        "usage", name, FAIL if problems else PASS, "; ".join(problems) or shown,
        (shown,) if problems else (),
    )  # fmt: skip


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def error_shape(exchange: Exchange, what: str, statuses: tuple[int, ...]) -> Check:
    """Anthropic's error shape, `{"type": "error", "error": {"type", "message"}}`."""
    body = exchange.json()
    error = body.get("error") if isinstance(body, dict) else None
    shaped = (
        isinstance(body, dict)
        and body.get("type") == "error"
        and isinstance(error, dict)
        and isinstance(error.get("type"), str)
        and isinstance(error.get("message"), str)
    )
    status = exchange.status
    if status is None or status >= 500 or not shaped:
        verdict = FAIL
    else:
        verdict = PASS if status in statuses else WARN
    detail = f"{what}: {status}" + ("" if shaped else ", not in Anthropic's error shape")
    return Check(
        "errors", what, verdict, detail, () if verdict == PASS else (checks.excerpt(exchange.raw),)
    )


def metadata(stream: Exchange, requested: str) -> Iterator[Check]:
    starts = [e.get("message") for e in _events(stream) if e.get("type") == "message_start"]
    messages = [m for m in starts if isinstance(m, dict)]
    yield checks.model_echoed(messages, requested)
    ids = [m.get("id") for m in messages]
    single = len(ids) == 1 and isinstance(ids[0], str) and bool(ids[0])
    yield Check(
        "metadata",
        "message id",
        PASS if single else FAIL,
        f"one message id, {ids[0]}" if single else f"{len(ids)} message_start ids: {ids!r:.120}",
        () if single else (json.dumps(starts)[:300],),
    )
    yield checks.residency(stream)
