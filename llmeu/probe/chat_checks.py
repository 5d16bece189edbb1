"""Each check: what llmeu relies on from a chat-completions stream, judged on what arrived.

The wire is docs/design.md §2's: `data:` frames of `chat.completion.chunk`, a role
frame first, the finish reason last, usage only when asked (on one last
chunk with `choices: []`), and exactly one `[DONE]`, last. What every API's
stream shares (status, framing, errors, cancellation) is judged by `checks`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from llmeu.probe import checks
from llmeu.probe.checks import FAIL, PASS, WARN, Check, decoded, excerpt, is_json, objects
from llmeu.probe.exchange import Exchange
from llmeu.protocol.sse import DONE_DATA


def transport(stream: Exchange) -> Iterator[Check]:
    return checks.transport(stream, _done, carries_delta)


def _done(stream: Exchange) -> Iterator[Check]:
    done = [i for i, e in enumerate(stream.events) if e.data == DONE_DATA]
    wrong = checks.misplaced(done, len(stream.events))
    if not wrong:
        yield Check("transport", "[DONE]", PASS, "exactly once, last")
    else:
        yield Check("transport", "[DONE]", FAIL, wrong, (excerpt(stream.raw[-300:]),))


def carries_delta(data: str) -> bool:
    """A frame with something in a choice's delta (a role alone is nothing)."""
    chunk = _chunk(data)
    return chunk is not None and any(not _choice_empty(c) for c in chunk.get("choices") or ())


def answers(data: str) -> bool:
    """A frame with content or a tool call: the hang-up comes after the first."""
    deltas = [c.get("delta") or {} for c in (_chunk(data) or {}).get("choices") or ()]
    return any(d.get("content") or d.get("tool_calls") for d in deltas)


def _chunk(data: str) -> dict[str, Any] | None:
    if data == DONE_DATA:
        return None
    found = decoded(data)
    return found if isinstance(found, dict) else None


def _choice_chunks(exchange: Exchange) -> list[dict[str, Any]]:
    return [c for c in objects(exchange) if c.get("choices")]


def content(stream: Exchange) -> Iterator[Check]:
    chunks = _choice_chunks(stream)
    if not chunks:
        yield Check("content", "frames", FAIL, "no frame with a choice", (excerpt(stream.raw),))
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
    ids = {c.get("id") for c in objects(stream)}
    models = {c.get("model") for c in objects(stream)}
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
        str(c["system_fingerprint"]) for c in objects(stream) if c.get("system_fingerprint")
    }
    yield Check(
        "metadata",
        "system_fingerprint",
        PASS,
        ", ".join(sorted(fingerprints)) if fingerprints else "not sent",
    )
    yield checks.residency(stream)


def usage(with_usage: Exchange, without_usage: Exchange, whole: Exchange) -> Iterator[Check]:
    chunks = objects(with_usage)
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
    unasked = [c for c in objects(without_usage) if c.get("usage") is not None]
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
    refused = checks.tools_refused(stream)
    if refused is not None:
        return refused
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
        + [f"call {i}: arguments are not JSON" for i, c in calls.items() if not is_json(c["args"])]
        + [f"call {i}: no id or name" for i, c in calls.items() if not (c["id"] and c["name"])]
    )
    detail = f"{len(calls)} call(s) by index: " + ", ".join(c["name"] for c in calls.values())
    return Check(
        "content",
        "tool calls",
        FAIL if problems else PASS,
        detail + ("; " + "; ".join(problems) if problems else ""),
    )


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
