"""Each check: what llmeu relies on from a chat-completions stream, judged on what arrived.

A check passes, warns (llmeu copes, but the operator should know: e.g. no
usage means estimated counts), fails (llmeu cannot trust the stream as it
is: e.g. no `[DONE]`, usage on every chunk), or does not apply. A failure
carries its evidence: the bytes or frames that show it.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from llmeu.probe.exchange import Exchange
from llmeu.protocol.sse import DONE_DATA

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


def _chunks(exchange: Exchange) -> list[dict[str, Any]]:
    return [p for p in exchange.payloads() if isinstance(p, dict)]


def _choice_chunks(exchange: Exchange) -> list[dict[str, Any]]:
    return [c for c in _chunks(exchange) if c.get("choices")]


def _excerpt(data: bytes, limit: int = 300) -> str:
    text = data.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "…"


def transport(stream: Exchange) -> Iterator[Check]:
    if stream.error or stream.status != 200:
        yield Check(
            "transport",
            "status",
            FAIL,
            f"status {stream.status}: {stream.error or ''}",
            (_excerpt(stream.raw),),
        )
        return
    yield Check("transport", "status", PASS, "200")
    content_type = stream.headers.get("content-type", "")
    yield Check(
        "transport",
        "content-type",
        PASS if content_type.startswith("text/event-stream") else FAIL,
        content_type or "none",
    )
    done = [i for i, e in enumerate(stream.events) if e.data == DONE_DATA]
    if len(done) == 1 and done[0] == len(stream.events) - 1:
        yield Check("transport", "[DONE]", PASS, "exactly once, last")
    else:
        detail = "missing" if not done else f"{len(done)} times" if len(done) > 1 else "not last"
        yield Check("transport", "[DONE]", FAIL, detail, (_excerpt(stream.raw[-300:]),))
    yield pacing(stream)


def pacing(stream: Exchange, carries_delta: Callable[[str], bool] | None = None) -> Check:
    """Deltas that arrive in one burst were buffered somewhere on the way; `carries_delta`
    tells a delta event's data (chat completions' by default)."""
    carries = carries_delta or _carries_delta
    delta_reads = [r for r in stream.reads if any(carries(e.data) for e in r.events)]
    deltas = sum(sum(carries(e.data) for e in r.events) for r in delta_reads)
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


def content(stream: Exchange) -> Iterator[Check]:
    chunks = _choice_chunks(stream)
    if not chunks:
        yield Check("content", "frames", FAIL, "no frame with a choice", (_excerpt(stream.raw),))
        return
    first = chunks[0]["choices"][0].get("delta") or {}
    yield Check(
        "content",
        "role frame",
        PASS if first.get("role") == "assistant" else WARN,
        "first delta names the assistant role"
        if first.get("role") == "assistant"
        else f"first delta is {json.dumps(first)[:120]}",
    )
    empty = sum(1 for c in chunks if _is_empty(c))
    yield Check(
        "content",
        "empty deltas",
        PASS if empty == 0 else WARN,
        f"{empty} frames carry nothing" + (" (llmeu skips them)" if empty else ""),
    )
    last = chunks[-1]["choices"][0]
    yield Check(
        "content",
        "finish_reason",
        PASS if last.get("finish_reason") else FAIL,
        f"last choice frame: {last.get('finish_reason')!r}",
    )
    ids = {c.get("id") for c in _chunks(stream)}
    models = {c.get("model") for c in _chunks(stream)}
    yield Check(
        "metadata",
        "id",
        PASS if len(ids) == 1 and None not in ids else WARN,
        f"{len(ids)} distinct ids across frames",
    )
    yield Check(
        "metadata",
        "model",
        PASS if len(models) == 1 and None not in models else WARN,
        f"model {', '.join(sorted(str(m) for m in models))}",
    )
    fingerprints = {
        str(c["system_fingerprint"]) for c in _chunks(stream) if c.get("system_fingerprint")
    }
    yield Check(
        "metadata",
        "system_fingerprint",
        PASS,
        ", ".join(sorted(fingerprints)) if fingerprints else "not sent",
    )
    yield residency(stream)


def residency(stream: Exchange) -> Check:
    """Response headers that state a region or retention, where the provider sends any."""
    hints = {k: v for k, v in stream.headers.items() if any(h in k for h in _HEADER_HINTS)}
    return Check(
        "metadata",
        "residency headers",
        PASS,
        ", ".join(f"{k}: {v}" for k, v in sorted(hints.items())) or "none sent",
    )


def usage(with_usage: Exchange, without_usage: Exchange, whole: Exchange) -> Iterator[Check]:
    chunks = _chunks(with_usage)
    reporting = [i for i, c in enumerate(chunks) if c.get("usage") is not None]
    if not reporting:
        yield Check(
            "usage", "include_usage", WARN, "no usage in the stream: llmeu will estimate the counts"
        )
    else:
        final = chunks[reporting[-1]]
        shape_ok = final.get("choices") == [] and reporting[-1] == len(chunks) - 1
        yield Check(
            "usage",
            "include_usage",
            PASS if shape_ok else WARN,
            "a last chunk with `choices: []` and usage"
            if shape_ok
            else "usage sent, but not as a last chunk with `choices: []`",
            () if shape_ok else (json.dumps(final)[:300],),
        )
        early = [i for i in reporting if chunks[i] is not final]
        yield Check(
            "usage",
            "usage once",
            PASS if not early else FAIL,
            "on the last chunk only"
            if not early
            else f"on {len(early)} earlier chunks too: a reader summing them counts twice",
            tuple(json.dumps(chunks[i])[:200] for i in early[:3]),
        )
        counts = final["usage"]
        zero = counts.get("completion_tokens") == 0 and _text(with_usage)
        yield Check(
            "usage",
            "counts",
            FAIL if zero else PASS,
            "zero output tokens for a non-empty answer" if zero else json.dumps(counts),
        )
    unasked = [c for c in _chunks(without_usage) if c.get("usage") is not None]
    yield Check(
        "usage",
        "not asked",
        PASS if not unasked else WARN,
        "no usage unless asked"
        if not unasked
        else f"usage on {len(unasked)} chunks though not asked",
    )
    body = whole.json() if whole.status == 200 else None
    reported = isinstance(body, dict) and isinstance(body.get("usage"), dict)
    yield Check(
        "usage",
        "non-streamed",
        PASS if reported else WARN,
        json.dumps(body.get("usage"))
        if reported and isinstance(body, dict)
        else f"no usage (status {whole.status})",
    )


def tools(stream: Exchange) -> Check:
    if stream.status != 200:
        return Check(
            "content",
            "tool calls",
            WARN,
            f"a call with a tool was answered {stream.status}: no `tools` capability",
            (_excerpt(stream.raw),),
        )
    calls: dict[int, dict[str, str]] = {}
    for chunk in _choice_chunks(stream):
        for part in (chunk["choices"][0].get("delta") or {}).get("tool_calls") or ():
            slot = calls.setdefault(part.get("index", -1), {"id": "", "name": "", "args": ""})
            function = part.get("function") or {}
            slot["id"] += part.get("id") or ""
            slot["name"] += function.get("name") or ""
            slot["args"] += function.get("arguments") or ""
    if not calls:
        return Check("content", "tool calls", WARN, "asked to call a tool, the model did not")
    problems = (
        [f"index {i}" for i in calls if i < 0]
        + [f"call {i}: arguments are not JSON" for i, c in calls.items() if not _is_json(c["args"])]
        + [f"call {i}: no id or name" for i, c in calls.items() if not (c["id"] and c["name"])]
    )
    detail = f"{len(calls)} call(s) by index: " + ", ".join(c["name"] for c in calls.values())
    return Check(
        "content",
        "tool calls",
        FAIL if problems else PASS,
        detail + ("; " + "; ".join(problems) if problems else ""),
    )


def error_shape(exchange: Exchange, what: str, statuses: tuple[int, ...]) -> Check:
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
        "errors", what, verdict, detail, () if verdict == PASS else (_excerpt(exchange.raw),)
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
            (_excerpt(after.raw),),
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


def _carries_delta(data: str) -> bool:
    if data == DONE_DATA:
        return False
    try:
        chunk = json.loads(data)
    except ValueError:
        return False
    return any(not _choice_empty(c) for c in chunk.get("choices") or ())


def _choice_empty(choice: dict[str, Any]) -> bool:
    delta = choice.get("delta") or {}
    return not (
        delta.get("content")
        or delta.get("tool_calls")
        or delta.get("refusal")
        or delta.get("reasoning_content")
    )


def _is_empty(chunk: dict[str, Any]) -> bool:
    choice = chunk["choices"][0]
    delta = choice.get("delta") or {}
    return _choice_empty(choice) and not delta.get("role") and not choice.get("finish_reason")


def _text(stream: Exchange) -> str:
    return "".join(
        (c["choices"][0].get("delta") or {}).get("content") or "" for c in _choice_chunks(stream)
    )


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
