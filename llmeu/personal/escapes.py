"""JSON string escapes read as the characters they stand for, in text that carries JSON.

A function tool call's arguments are a JSON document inside the message
(`{"email": "ana\\u0040example.eu"}`); the Responses `function_call` items and
the Messages `tool_use` blocks reach the scan as those arguments too. A tool's
result often is one as well (`json.dumps` escapes every character beyond
ASCII), and so is any text that parses as a JSON object or array. Whoever
reads them, the tool or the model, reads `\\u0040` as `@`, `\\u004E\\u004C91` as
`NL91`, `\\uD835\\uDFCE` as the mathematical digit zero (U+1D7CE). So the
folding (`llmeu.personal.folding`) reads such a text's escapes first:
`unescape` gives the text as its JSON strings hold it, each escape one
character, with the way back to the escape as typed, so that a masking
replaces the whole escape.

An escaped backslash (`\\\\u0040`) is a backslash followed by `u0040`, as JSON
reads it; a lone surrogate and a backslash that begins no escape stay as they
were typed. A text without a backslash is not looked at beyond one `in`.

A value found in such a text is kept as its JSON strings hold it, which is
what a restoring gives back: into the arguments of an answer's tool call
escaped (`json_escaped`), so that they stay valid JSON and parse to the
value sent; into plain text as it is.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

JSON_TEXT_SUFFIX = ".function.arguments"
"""The end of the path of a text that is a JSON document: a tool call's arguments
(`messages[2].tool_calls[0].function.arguments`)."""

_ESCAPE = re.compile(
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
    r"|u([0-9a-fA-F]{4})|([\"\\/bfnrt]))"
)
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def carries_json(path: str, text: str) -> bool:
    """Whether `text`, at `path` of a request, is read as JSON: a tool call's arguments
    always; any other text when it is a JSON object or array with an escape in it (a tool's
    result, as tools write theirs). A text without a backslash costs one `in`."""
    if path.endswith(JSON_TEXT_SUFFIX):
        return True
    if "\\" not in text or text.lstrip()[:1] not in ("{", "["):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class Unescaped:
    """A text with its escapes read (`text`); `span` maps a span of it back to the text as
    typed. `_starts` holds where each escape's character is in `text`, `_origins` and `_ends`
    where the escape begins and ends as typed."""

    __slots__ = ("_ends", "_origins", "_starts", "text")

    def __init__(self, text: str, escapes: list[tuple[int, int, int]]) -> None:
        self.text = text
        self._starts = [at for at, _, _ in escapes]
        self._origins = [origin for _, origin, _ in escapes]
        self._ends = [end for _, _, end in escapes]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The typed characters `text[start:end]` was read from (`end > start`): every
        escape in it whole."""
        return self._typed(start)[0], self._typed(end - 1)[1]

    def _typed(self, at: int) -> tuple[int, int]:
        i = bisect_right(self._starts, at) - 1
        if i < 0:
            return at, at + 1
        if self._starts[i] == at:
            return self._origins[i], self._ends[i]
        origin = self._ends[i] + at - self._starts[i] - 1
        return origin, origin + 1


def unescape(text: str) -> Unescaped | None:
    """`text` with its JSON escapes read; None when it has none."""
    pieces: list[str] = []
    escapes: list[tuple[int, int, int]] = []
    copied_to = 0
    length = 0
    for match in _ESCAPE.finditer(text):
        read = _read(match)
        if read is None:
            continue
        start = match.start()
        pieces.append(text[copied_to:start])
        length += start - copied_to
        escapes.append((length, start, match.end()))
        pieces.append(read)
        length += 1
        copied_to = match.end()
    if not escapes:
        return None
    pieces.append(text[copied_to:])
    return Unescaped("".join(pieces), escapes)


def _read(match: re.Match[str]) -> str | None:
    high, low, code, simple = match.groups()
    if simple is not None:
        return _SIMPLE[simple]
    if high is not None:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
    char = chr(int(code, 16))
    return None if 0xD800 <= ord(char) < 0xE000 else char


def unescaped(text: str) -> str:
    """`text` as its JSON strings hold it."""
    if "\\" not in text:
        return text
    read = unescape(text)
    return text if read is None else read.text


def json_escaped(value: str) -> str:
    """`value` as it is written inside a JSON string."""
    return json.dumps(value, ensure_ascii=False)[1:-1]
