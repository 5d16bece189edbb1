"""What the probe's checks share: the verdicts, and the checks every API's stream gets.

A check passes, warns (llmeu copes, but the operator should know: e.g. no
usage means estimated counts), fails (llmeu cannot trust the stream as it
is: e.g. no `[DONE]`, usage on every chunk), or does not apply. A failure
carries its evidence: the bytes or frames that show it.

Each API's own checks are in `chat_checks`, `responses_checks` and
`messages_checks`; here is what they judge alike: a stream's status, content
type, ending and pacing, how its events were framed, the residency headers,
OpenAI's error shape, a hang-up, and for the wires whose events name their
type (Responses, Messages) those names and the absent `[DONE]`.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from llmeu.probe.exchange import Exchange
from llmeu.protocol.sse import DONE_DATA, ServerSentEvent

PASS, WARN, FAIL, NOT_APPLICABLE = "pass", "warn", "fail", "n/a"
_BURST_AFTER = 1.0  # seconds: deltas held that long and then sent at once were buffered
_HEADER_HINTS = ("region", "residency", "retention", "location", "llmeu", "zone", "datacenter")


@dataclass(frozen=True, slots=True)
class Check:
    group: str
    name: str
    verdict: str
    detail: str
    evidence: tuple[str, ...] = field(default=())


def decoded(data: str) -> Any:
    """An event's data as JSON, or as its text when it is not JSON."""
    try:
        return json.loads(data)
    except ValueError:
        return data


def objects(stream: Exchange) -> list[dict[str, Any]]:
    """The stream's events that are JSON objects."""
    return [p for p in stream.payloads() if isinstance(p, dict)]


def event_type(event: ServerSentEvent) -> str | None:
    """The `type` its data names, if it is a JSON object naming one."""
    payload = decoded(event.data)
    kind = payload.get("type") if isinstance(payload, dict) else None
    return kind if isinstance(kind, str) else None


def excerpt(data: bytes | str, limit: int = 300) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text if len(text) <= limit else text[:limit] + "…"


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def transport(
    stream: Exchange,
    ending: Callable[[Exchange], Iterable[Check]],
    carries_delta: Callable[[str], bool],
) -> Iterator[Check]:
    """A 200 with an event stream, ended as its wire ends one (`ending`), deltas not held
    back (`carries_delta` tells a delta event's data)."""
    if stream.error or stream.status != 200:
        detail = f"status {stream.status}: {stream.error or ''}"
        yield Check("transport", "status", FAIL, detail, (excerpt(stream.raw),))
        return
    yield Check("transport", "status", PASS, "200")
    content_type = stream.headers.get("content-type", "")
    yield Check(
        "transport",
        "content-type",
        PASS if content_type.startswith("text/event-stream") else FAIL,
        content_type or "none",
    )
    yield from ending(stream)
    yield pacing(stream, carries_delta)


def misplaced(found: list[int], count: int) -> str:
    """What is wrong with the positions `found` of an event that must come once, last of
    `count`: missing, several times, or not last; empty when nothing is."""
    if len(found) == 1 and found[0] == count - 1:
        return ""
    return "missing" if not found else f"{len(found)} times" if len(found) > 1 else "not last"


def no_done(stream: Exchange, wire: str) -> Check:
    """Chat completions' `[DONE]` has no place on the typed-event wires."""
    done = [e for e in stream.events if e.data == DONE_DATA]
    return Check(
        "transport",
        "no [DONE]",
        PASS if not done else FAIL,
        "not sent" if not done else f"`[DONE]` sent: not the {wire} wire",
        () if not done else (excerpt(stream.raw[-120:]),),
    )


def pacing(stream: Exchange, carries_delta: Callable[[str], bool]) -> Check:
    """Deltas that arrive in one burst were buffered somewhere on the way."""
    delta_reads = [r for r in stream.reads if any(carries_delta(e.data) for e in r.events)]
    deltas = sum(sum(carries_delta(e.data) for e in r.events) for r in delta_reads)
    if deltas < 3:
        return Check("transport", "pacing", NOT_APPLICABLE, f"{deltas} deltas: too few to tell")
    gaps = [b.at - a.at for a, b in itertools.pairwise(delta_reads)]
    median = statistics.median(gaps) * 1000 if gaps else 0.0
    detail = f"{deltas} deltas in {len(delta_reads)} reads, median gap {median:.1f} ms"
    if len(delta_reads) <= 2 and delta_reads[0].at > _BURST_AFTER:
        return Check(
            "transport",
            "pacing",
            WARN,
            detail + f", the first after {delta_reads[0].at:.1f} s: buffered, not streamed",
        )
    return Check("transport", "pacing", PASS, detail)


def framing(stream: Exchange) -> Iterator[Check]:
    raw = stream.raw
    reads = [r for r in stream.reads if r.data]
    if not reads:
        return
    split = sum(r.pending for r in reads)
    several = sum(len(r.events) > 1 for r in reads)
    yield Check(
        "framing",
        "reads",
        PASS,
        f"{len(reads)} reads; {split} ended inside an event, {several} held several "
        "events — both read correctly",
    )
    endings = [name for name, marker in (("CRLF", b"\r\n"), ("CR", b"\r")) if marker in raw]
    notes = [f"line endings {'/'.join(endings) or 'LF'}"]
    if raw.startswith(b"\xef\xbb\xbf"):
        notes.append("a byte-order mark")
    if raw.startswith(b":") or b"\n:" in raw:
        notes.append("comment lines (keep-alives)")
    if any("\n" in e.data for e in stream.events):
        notes.append("multi-line data")
    yield Check("framing", "syntax", PASS, ", ".join(notes) + " — all read correctly")
    not_json = [p for p in stream.payloads() if not isinstance(p, dict)]
    if not_json:
        yield Check(
            "framing",
            "json",
            FAIL,
            f"{len(not_json)} events are not JSON objects",
            tuple(str(p)[:200] for p in not_json[:3]),
        )
    else:
        yield Check("framing", "json", PASS, "every event is a JSON object")


def event_names(stream: Exchange) -> Check | None:
    """Every `event:` line names its data's type (None: no event to judge)."""
    events = [e for e in stream.events if e.data != DONE_DATA]
    if not events:
        return None
    mismatched = [e for e in events if e.event != event_type(e)]
    return Check(
        "framing",
        "event names",
        PASS if not mismatched else FAIL,
        f"every `event:` names its data's type ({len(events)} events)"
        if not mismatched
        else f"{len(mismatched)} events whose `event:` is not their data's type",
        tuple(f"event: {e.event} / type: {event_type(e)}" for e in mismatched[:3]),
    )


def residency(stream: Exchange) -> Check:
    """Response headers that state a region or retention, where the provider sends any."""
    hints = {k: v for k, v in stream.headers.items() if any(h in k for h in _HEADER_HINTS)}
    return Check(
        "metadata",
        "residency headers",
        PASS,
        ", ".join(f"{k}: {v}" for k, v in sorted(hints.items())) or "none sent",
    )


def model_echoed(answers: list[dict[str, Any]], requested: str) -> Check:
    """The response or message objects of a stream name one model."""
    models = {a.get("model") for a in answers}
    echoed = len(models) == 1 and None not in models
    return Check(
        "metadata",
        "model",
        PASS if echoed else WARN,
        f"model {', '.join(sorted(str(m) for m in models)) or 'not sent'} (asked {requested})",
    )


def tools_refused(stream: Exchange) -> Check | None:
    """A call with a tool answered other than 200: the upstream has no `tools` capability."""
    if stream.status == 200:
        return None
    return Check(
        "content",
        "tool calls",
        WARN,
        f"a call with a tool was answered {stream.status}: no `tools` capability",
        (excerpt(stream.raw),),
    )


def error_shape(exchange: Exchange, what: str, statuses: tuple[int, ...]) -> Check:
    """OpenAI's error shape, `{"error": {"message", ...}}` (chat completions, Responses)."""
    body = exchange.json()
    error = body.get("error") if isinstance(body, dict) else None
    shaped = isinstance(error, dict) and isinstance(error.get("message"), str)
    status = exchange.status
    if status is None or status >= 500:
        verdict = FAIL
    elif status in statuses and shaped:
        verdict = PASS
    else:
        verdict = WARN if status >= 400 else FAIL
    detail = f"{what}: {status}" + ("" if shaped else ", not in OpenAI's error shape")
    return Check(
        "errors", what, verdict, detail, () if verdict == PASS else (excerpt(exchange.raw),)
    )


Recorded = tuple[str, float | None]
"""How a server recorded a call: its status and when it finished (seconds since the epoch)."""


def cancellation(
    hung_up: Exchange, after: Exchange, verify: Callable[[str], Recorded | None]
) -> Check:
    """Hanging up must not wedge the server; where the server keeps traces (llmeu), the call
    must be recorded as cancelled — unless it had finished before the hang-up."""
    if not hung_up.hung_up:
        return Check(
            "cancellation",
            "hang-up",
            NOT_APPLICABLE,
            "the stream ended before a first delta to hang up after",
        )
    if after.status != 200:
        return Check(
            "cancellation",
            "hang-up",
            FAIL,
            f"the next call after a hang-up got {after.status}",
            (excerpt(after.raw),),
        )
    trace_id = hung_up.headers.get("x-llmeu-trace-id")
    recorded = verify(trace_id) if trace_id else None
    if recorded is None:
        return Check(
            "cancellation",
            "hang-up",
            PASS,
            "hung up after the first delta; the next call was served (whether the server "
            "stopped generating is not visible from a client)",
        )
    status, finished_at = recorded
    if status == "cancelled":
        return Check("cancellation", "hang-up", PASS, "the server recorded the call cancelled")
    early = (
        status == "completed"
        and finished_at is not None
        and hung_up.hung_up_at is not None
        and finished_at <= hung_up.hung_up_at
    )
    if early:
        return Check(
            "cancellation",
            "hang-up",
            NOT_APPLICABLE,
            "the call had completed before the hang-up reached the server",
        )
    return Check("cancellation", "hang-up", FAIL, f"the server recorded the call {status}")
