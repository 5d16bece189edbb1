"""Keep prompt and completion text out of error messages when the policy stores no content.

Upstreams often quote the request in their errors ("invalid content: …") and
a broken stream's error event may carry the text produced so far; those
messages end up in the trace, the client's error body and the logs. When the
policy's `store_content` is `P0D`, every run of `RUN` or more characters that
also occurs in the call's prompt or output is replaced with `[redacted]`:
messages that describe a problem (limits, status codes, field names) survive,
quoted content does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

RUN = 12
_MAX_SCANNED = 1 << 20
REDACTED = "[redacted]"


def redact(message: str, texts: Iterable[str]) -> str:
    return redact_all([message], texts)[0]


def redact_all(messages: Sequence[str], texts: Iterable[str]) -> list[str]:
    """`redact` for several messages of one call, reading its texts once."""
    if all(len(message) < RUN for message in messages):
        return list(messages)
    grams: set[str] = set()
    budget = _MAX_SCANNED
    for text in texts:
        text = text[:budget]
        budget -= len(text)
        grams.update(text[i : i + RUN] for i in range(len(text) - RUN + 1))
        if budget <= 0:
            break
    return [_redact(message, grams) for message in messages]


def _redact(message: str, grams: set[str]) -> str:
    if not grams:
        return message
    spans: list[list[int]] = []
    for i in range(len(message) - RUN + 1):
        if message[i : i + RUN] in grams:
            if spans and spans[-1][1] >= i:
                spans[-1][1] = i + RUN
            else:
                spans.append([i, i + RUN])
    if not spans:
        return message
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.append(message[last:start])
        parts.append(REDACTED)
        last = end
    parts.append(message[last:])
    return "".join(parts)
