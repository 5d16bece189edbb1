"""A text's shape: where candidates are searched for, at the speed of the regex engine's C.

The shape is the text as bytes, one byte per character: each digit `9`, each
ASCII capital `A`, each small letter `a`, anything not ASCII `?`, a control
character other than `\n` and `\r` `CONTROL` (which tells `llmeu.personal.folding`
that an ASCII text needs folding), the rest as it is. Offsets in the shape are
offsets in the text. A pattern over the shape begins with a literal (`9`,
`99`, `@`), which the engine finds without trying every position; what must
not come before a candidate is checked only where one begins. Validators then
read the text itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

CONTROL = b"\x00"
_TABLE = bytes(
    ord("9") if chr(b).isdigit() else ord("A") if chr(b).isupper() else
    ord("a") if chr(b).islower() else 0 if (b < 32 or b == 127) and b not in b"\n\r" else b
    for b in range(128)
) + b"?" * 128  # fmt: skip

WORD = frozenset(b"Aa9_?")
"""What may not come right before a candidate that must start a word."""


def shape(text: str) -> bytes:
    return shaped(text.encode("latin-1", "replace"))


def shaped(latin1: bytes) -> bytes:
    """The shape of a text from its Latin-1 encoding (`?` for what Latin-1 lacks)."""
    return latin1.translate(_TABLE)


def candidates(
    pattern: re.Pattern[bytes], form: bytes, not_after: frozenset[int] = WORD
) -> Iterator[tuple[int, int]]:
    """Spans of `pattern` in the shape not preceded by a byte of `not_after`; after a refused
    one the search goes on from its next character, as a look-behind would."""
    at = 0
    while (match := pattern.search(form, at)) is not None:
        start = match.start()
        if start and form[start - 1] in not_after:
            at = start + 1
            continue
        yield start, match.end()
        at = match.end()
