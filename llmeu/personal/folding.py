"""Text as a reader reads it, for the detectors, with the way back to what was typed.

A value typed to slip past a scanner reads the same to a person and to a
model: an IBAN in fullwidth letters and digits, `NL91` with a zero-width space
or a soft hyphen inside, a card number in Arabic-Indic or mathematical digits.
`fold` turns a text into what the detectors search, character by character:

- each character in its compatibility form (NFKC: fullwidth, mathematical
  and circled letters and digits, ligatures, the small and fullwidth `@` and `.`);
- every decimal digit, whatever its script, as its ASCII digit;
- every dash (Unicode's dash punctuation: en dash, non-breaking hyphen…) as `-`,
  the typographer's quotes as ASCII quotes;
- a line break (`\\v`, `\\f`, U+2028…) as a newline, every other space (tab,
  no-break and typographic spaces) as a space;
- format and control characters (zero-width spaces and joiners, soft hyphens,
  direction marks, tags, NUL) and the other invisible ones (variation
  selectors, Hangul fillers) removed.

In a text that carries JSON (a tool call's arguments, a tool's JSON result),
each string escape is first read as the character it stands for (`\\u0040`
as `@`, a surrogate pair as the one character it encodes:
`llmeu.personal.escapes`), then folded as above; a span maps back to the
escape as typed. Other text is never unescaped: its `\\u0040` is six
characters.

Case is left as typed: an identifier whose check ignores case (an IBAN) is
searched for in either. `Folded.span` maps a span of the folded text back to
the characters it came from, so that a masking replaces what was typed,
zero-width characters inside it included, and gives it back whole.

Per character, not per text: composing a letter with a combining accent,
which whole-text normalisation would also do, changes nothing a detector
reads. Most text needs little or no folding, and pays for what it needs: ASCII
one look for a control byte in the shape the detectors need anyway; typeset
Latin text a `str.replace` per kind of typographic space, dash or quote it
holds, then a table over its Latin-1 bytes; text mostly beyond Latin-1 (Greek,
Cyrillic) one search for the characters that fold, whose set is computed once
per process on first use (about 0.1 s).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from functools import cache, lru_cache

from llmeu.personal.escapes import Unescaped, unescape
from llmeu.personal.shape import CONTROL, shape, shaped

_LINE_BREAKS = frozenset("\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
"""Invisible characters Unicode does not class as format characters: the combining grapheme
joiner, Hangul fillers, Khmer inherent vowels, Mongolian and other variation selectors."""
_REMOVED = frozenset(("Cf", "Cc"))
_QUOTES = dict.fromkeys("\u2018\u2019\u201a\u201b", "'") | dict.fromkeys(
    "\u201c\u201d\u201e\u201f", '"'
)
"""The typographer's quotes beyond Latin-1, read as the ASCII quotes they stand for (an
apostrophe before a value is no letter)."""


def _read(char: str) -> str:
    """What one character in its compatibility form reads as."""
    if char in _LINE_BREAKS:
        return "\n"
    if char.isspace():
        return char if char in "\n\r" else " "
    category = unicodedata.category(char)
    if category == "Nd":
        return chr(48 + unicodedata.decimal(char))
    if category == "Pd":
        return "-"
    if char in _QUOTES:
        return _QUOTES[char]
    if category in _REMOVED or char in _INVISIBLE:
        return ""
    return char


def read_as(char: str) -> str:
    """What `char` reads as: its compatibility form, each character of it read."""
    return "".join(map(_read, unicodedata.normalize("NFKC", char)))


_read_cached = lru_cache(maxsize=4096)(read_as)
_ASCII_SPACES = {code: read_as(chr(code)) for code in range(32) if chr(code).isspace()}
"""The ASCII controls that read as a space or a line break, one for one."""
_TYPOGRAPHIC = {
    char: read_as(char)
    for char in "\u00a0\u2007\u2009\u202f\u2010\u2011\u2013\u2014" + "".join(_QUOTES)
}
"""No-break, figure, thin and narrow no-break spaces, hyphens, dashes and quotes: frequent
in typeset text, each read as one character, so replaced in place by `str.replace`."""
_SUSPECTS = bytes(
    ord("?") if code == ord("?") or read_as(chr(code)) != chr(code) else ord("x")
    for code in range(256)
)
"""Per Latin-1 byte, `?` where the character may read otherwise: a control, a soft
hyphen, `ª`, `²`, `½`…, and `?` itself, which stands for every character beyond
Latin-1."""


@cache
def _folding() -> re.Pattern[str]:
    """Runs of characters that may fold: ASCII controls, every character of the Basic
    Multilingual Plane that does, and every character beyond it (checked one by one)."""
    changing = [
        code
        for code in range(0x80, 0x10000)
        if not 0xD800 <= code < 0xE000 and read_as(chr(code)) != chr(code)
    ]
    ranges: list[list[int]] = []
    for code in changing:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    listed = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"[\\x00-\\x09\\x0b\\x0c\\x0e-\\x1f\\x7f{listed}\\U00010000-\\U0010ffff]+")


class Folded:
    """A text as read (`text`), its shape (`form`), and spans mapped back to the original.

    The folded text is made of stretches, each either copied from the original or
    the reading of one original character; `_starts` holds where each begins in the
    folded text, `_origins` where its characters come from, `_copied` which kind
    it is; all three are empty when every character kept its place."""

    __slots__ = ("_copied", "_origins", "_starts", "escapes", "form", "text")

    def __init__(
        self, text: str, form: bytes, stretches: Sequence[tuple[int, int, bool]] = ()
    ) -> None:
        self.text = text
        self.form = form
        self._starts = [start for start, _, _ in stretches]
        self._origins = [origin for _, origin, _ in stretches]
        self._copied = [copied for _, _, copied in stretches]
        self.escapes: Unescaped | None = None
        """Set when the text folded was a JSON text's escapes read: the way back to them."""

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original characters that `text[start:end]` was read from (`end > start`)."""
        if self._starts:
            start, end = self._origin(start), self._origin(end - 1) + 1
        return (start, end) if self.escapes is None else self.escapes.span(start, end)

    def _origin(self, at: int) -> int:
        i = bisect_right(self._starts, at) - 1
        if self._copied[i]:
            return self._origins[i] + at - self._starts[i]
        return self._origins[i]


def fold(text: str, json: bool = False) -> Folded:
    """`text` as read, each character that reads otherwise found the cheapest way its
    script allows; a `json` text's escapes read first (`llmeu.personal.escapes`)."""
    if json and "\\" in text and (escapes := unescape(text)) is not None:
        folded = fold(escapes.text)
        folded.escapes = escapes
        return folded
    if text.isascii():
        form = shape(text)
        if CONTROL not in form:
            return Folded(text, form)
        spaced = text.translate(_ASCII_SPACES)  # in C: a tab becomes a space, in place
        spaced_form = shape(spaced)
        if CONTROL not in spaced_form:
            return Folded(spaced, spaced_form)
        return _folded(text, form, _marked(form, CONTROL))
    for char, read in _TYPOGRAPHIC.items():
        if char in text:
            text = text.replace(char, read)  # one for one: every offset stays
    if text.isascii():
        return fold(text)
    encoded = text.encode("latin-1", "replace")  # what Latin-1 lacks is `?`
    form = shaped(encoded)
    suspects = encoded.translate(_SUSPECTS)
    count = suspects.count(b"?")
    if count == text.count("?") + text.count("\u20ac"):  # question marks and euro signs only
        return Folded(text, form)
    if count * 16 < len(text):
        return _folded(text, form, _marked(suspects, b"?"))
    runs = _folding().finditer(text)
    return _folded(text, form, (at for run in runs for at in range(*run.span())))


def _marked(marks: bytes, mark: bytes) -> Iterator[int]:
    at = marks.find(mark)
    while at >= 0:
        yield at
        at = marks.find(mark, at + 1)


def _folded(text: str, form: bytes, positions: Iterable[int]) -> Folded:
    """`text` (whose shape is `form`) read at `positions`, in order; every other character
    is kept as it is."""
    pieces: list[str] = []
    stretches: list[tuple[int, int, bool]] = []  # (start in the folded text, origin, copied)
    in_place: list[tuple[int, str]] = []  # characters read as one other character
    copied_to = 0  # the original characters before this are in `pieces`
    length = 0  # of the folded text so far
    resized = False
    for at in positions:
        char = text[at]
        read = _read_cached(char)
        if read == char:
            continue
        if at > copied_to:
            pieces.append(text[copied_to:at])
            stretches.append((length, copied_to, True))
            length += at - copied_to
        if read:
            pieces.append(read)
            stretches.append((length, at, False))
            length += len(read)
        if len(read) == 1:
            in_place.append((at, read))
        else:
            resized = True
        copied_to = at + 1
    if not copied_to:
        return Folded(text, form)
    if copied_to < len(text):
        pieces.append(text[copied_to:])
        stretches.append((length, copied_to, True))
    folded = "".join(pieces)
    if resized:
        return Folded(folded, shape(folded), stretches)
    patched = bytearray(form)  # every character kept its place: the shape needs a patch only
    for at, read in in_place:
        patched[at : at + 1] = shape(read)
    return Folded(folded, bytes(patched))
