"""Where a request's personal data is: the hits in all its text parts, one value split
across two of them included.

The parts are read as folded (`llmeu.personal.folding`) and searched in one
pass, joined by line breaks, which no detector reads across, so each part is
searched as if alone but at the cost of one search. A value can still be typed
in two parts that reach the upstream one after the other (`NL91 ABNA` in one
message, `0417 1643 00` in the next), which a model reads as one. So the
parts are searched again around each boundary, within `REACH` characters on
either side, joined twice: as they are (`jan.jansen@exa` + `mple.nl`), and as
words, with a space where neither side has one (so that a value beginning a
part is not read as the end of a word before it: `type: object` then
`NL91 ABNA` then `0417…`). A hit that crosses a boundary is kept unless it
overlaps one found within a part: a value a part holds whole stays as the part
holds it (`jan@example.nl` then `nothing` is no address `jan@example.nlnothing`).
Windows that would overlap are searched as one, so a request of many short
parts costs at most two more searches of its text.

A hit is reported as `Found`: its detector, the piece of it in each part it
touches (in the offsets of the text as typed), and its value as typed (every
piece joined), which is what a masking gives back; in a part that carries
JSON (`json`: a tool call's arguments, a tool's JSON result, whose escapes
the folding reads), the value as its JSON strings hold it (`ana@example.eu`
for `ana\\u0040example.eu`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass

from llmeu.personal.detectors import Hit, detect, without_overlaps
from llmeu.personal.escapes import unescaped
from llmeu.personal.folding import Folded, fold
from llmeu.personal.rules import Detector

REACH = 128
"""How far a window reaches into each side of a boundary: more than the longest value a
detector finds (an IBAN of 34 characters and 33 separators, a phone number, an address)."""


@dataclass(frozen=True, slots=True)
class Piece:
    part: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Found:
    detector: Detector
    pieces: tuple[Piece, ...]
    value: str


def locate(
    texts: Sequence[str], detectors: frozenset[Detector], json: Container[int] = ()
) -> list[Found]:
    """Every hit of `detectors` in `texts`, in order, none overlapping another; the texts at
    the indexes in `json` carry JSON."""
    folded = [fold(text, i in json) for i, text in enumerate(texts)]
    starts = [0]  # of each part, in the parts joined as they are: where hits are ordered
    for part in folded[:-1]:
        starts.append(starts[-1] + len(part.text))
    if len(texts) == 1:
        hits = detect(folded[0].text, folded[0].form, detectors)
    else:
        within = _Joined(folded, starts, lambda before, after: "\n")
        hits = [within.direct(hit) for hit in detect(within.text, within.form, detectors)]
        joins = (_Joined(folded, starts, _as_they_are), _Joined(folded, starts, _as_words))
        hits = _with(hits, [hit for joined in joins for hit in joined.across(detectors)])
    return [_found(hit, folded, starts, texts, json) for hit in hits]


def _as_they_are(before: str, after: str) -> str:
    return ""


def _as_words(before: str, after: str) -> str:
    return "" if before[-1:].isspace() or after[:1].isspace() else " "


class _Joined:
    """The parts that hold text, joined with what `between(before, after)` puts between
    two of them; hits found in it are mapped to the parts joined as they are (`direct`)."""

    def __init__(
        self, folded: Sequence[Folded], starts: list[int], between: Callable[[str, str], str]
    ) -> None:
        self._parts = [i for i, part in enumerate(folded) if part.text]
        self._folded = folded
        self._starts = starts
        texts: list[str] = []
        forms: list[bytes] = []
        self.offsets: list[int] = []  # where each part begins here
        length = 0
        for k, i in enumerate(self._parts):
            gap = between(folded[self._parts[k - 1]].text, folded[i].text) if k else ""
            self.offsets.append(length + len(gap))
            texts += (gap, folded[i].text)
            forms += (gap.encode(), folded[i].form)
            length += len(gap) + len(folded[i].text)
        self.text = "".join(texts)
        self.form = b"".join(forms)

    def direct(self, hit: Hit) -> Hit:
        return Hit(hit.detector, self._at(hit.start), self._at(hit.end - 1) + 1)

    def across(self, detectors: frozenset[Detector]) -> list[Hit]:
        """The hits that cross a boundary between parts, searched for near the boundaries."""
        crossing = []
        for low, high in _windows(self.offsets[1:], len(self.text)):
            for hit in detect(self.text[low:high], self.form[low:high], detectors):
                shifted = Hit(hit.detector, hit.start + low, hit.end + low)
                if self._part(shifted.start) != self._part(shifted.end - 1):
                    crossing.append(self.direct(shifted))
        return crossing

    def _part(self, at: int) -> int:
        return bisect_right(self.offsets, at) - 1

    def _at(self, at: int) -> int:
        """`at` in the parts joined as they are (a character between two parts counts as
        the end of the first)."""
        k = self._part(at)
        part = self._parts[k]
        return self._starts[part] + min(at - self.offsets[k], len(self._folded[part].text) - 1)


def _with(within: list[Hit], crossing: list[Hit]) -> list[Hit]:
    """The hits within parts, and the hits across parts that overlap none of them."""
    kept = list(within)
    for hit in without_overlaps(crossing):
        if not any(h.start < hit.end and hit.start < h.end for h in kept):
            kept.append(hit)
    return sorted(kept, key=lambda h: h.start)


def _windows(boundaries: list[int], length: int) -> list[tuple[int, int]]:
    """`REACH` characters on each side of every boundary; windows that meet are one."""
    windows: list[tuple[int, int]] = []
    for at in boundaries:
        low, high = max(0, at - REACH), min(length, at + REACH)
        if windows and low <= windows[-1][1]:
            windows[-1] = (windows[-1][0], high)
        else:
            windows.append((low, high))
    return windows


def _found(
    hit: Hit,
    folded: Sequence[Folded],
    starts: list[int],
    texts: Sequence[str],
    json: Container[int],
) -> Found:
    """`hit`, in the parts joined as they are, as pieces of the texts as typed."""
    first, last = (bisect_right(starts, at) - 1 for at in (hit.start, hit.end - 1))
    if first == last:
        offset = starts[first]
        piece = Piece(first, *folded[first].span(hit.start - offset, hit.end - offset))
        return Found(hit.detector, (piece,), _value(piece, texts, json))
    pieces = []
    for part in range(first, last + 1):
        low = max(hit.start - starts[part], 0)
        high = min(hit.end - starts[part], len(folded[part].text))
        if high > low:
            pieces.append(Piece(part, *folded[part].span(low, high)))
    value = "".join(_value(piece, texts, json) for piece in pieces)
    return Found(hit.detector, tuple(pieces), value)


def _value(piece: Piece, texts: Sequence[str], json: Container[int]) -> str:
    """What `piece` holds: as typed, or as the JSON strings of a part that carries JSON hold
    it (a piece begins and ends with whole escapes)."""
    typed = texts[piece.part][piece.start : piece.end]
    return unescaped(typed) if piece.part in json else typed
