"""Where a request's personal data is: the hits in all its text parts, one value split
across two of them included.

The parts are read as folded (`llmeu.personal.folding`) and searched in one
pass, joined by line breaks, which no detector reads across, so each part is
searched as if alone but at the cost of one search. A value can still be typed
in two parts that reach the upstream one after the other (`NL91 ABNA` in one
message, `0417 1643 00` in the next), which a model reads as one: so around
each boundary between consecutive parts, the parts are searched again joined
as they are, within `REACH` characters on either side, and a hit that crosses
the boundary is kept (`_with` says which, where it overlaps a hit within a
part). Windows that would overlap are searched as one, so a request of many
short parts costs at most one more search of its text.

A hit is reported as `Found`: its detector, the piece of it in each part it
touches (in the offsets of the text as typed), and its value as typed (every
piece joined), which is what a masking gives back.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from llmeu.personal.detectors import Hit, detect, without_overlaps
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


def locate(texts: Sequence[str], detectors: frozenset[Detector]) -> list[Found]:
    """Every hit of `detectors` in `texts`, in order, none overlapping another."""
    folded = [fold(text) for text in texts]
    joined = "\n".join(f.text for f in folded)
    form = b"\n".join(f.form for f in folded)
    # Positions in the parts joined as they are (no separator) order the hits of both searches.
    separated = _starts(folded, gap=1)
    hits = []
    for hit in detect(joined, form, detectors):
        part = bisect_right(separated, hit.start) - 1
        hits.append(Hit(hit.detector, hit.start - part, hit.end - part))
    starts = _starts(folded, gap=0)
    if len(texts) > 1:
        hits = _with(hits, _across(folded, starts, detectors))
    return [_found(hit, folded, starts, texts) for hit in hits]


def _starts(folded: Sequence[Folded], gap: int) -> list[int]:
    """Where each part begins when the parts are joined with `gap` characters between."""
    starts = [0]
    for part in folded[:-1]:
        starts.append(starts[-1] + len(part.text) + gap)
    return starts


def _across(
    folded: Sequence[Folded], starts: list[int], detectors: frozenset[Detector]
) -> list[Hit]:
    """The hits that cross a boundary between parts, the parts joined as they are."""
    text = "".join(f.text for f in folded)
    form = b"".join(f.form for f in folded)
    boundaries = sorted({at for at in starts if 0 < at < len(text)})
    crossing: list[Hit] = []
    for low, high in _windows(boundaries, len(text)):
        for hit in detect(text[low:high], form[low:high], detectors):
            start, end = hit.start + low, hit.end + low
            after = bisect_right(boundaries, start)
            if after < len(boundaries) and boundaries[after] < end:
                crossing.append(Hit(hit.detector, start, end))
    return crossing


def _with(within: list[Hit], crossing: list[Hit]) -> list[Hit]:
    """The hits within parts, and those across parts. One across that overlaps some within
    is kept (in their place) only where it begins before them: it joins the part a value
    begins in to the part that holds its end (`jan.jan` + `sen@example.nl`). One that
    begins with a value a part holds whole only runs that value on into the next part
    (`jan@example.nl` + `nothing`): the value stays as the part holds it."""
    kept = list(within)
    for hit in without_overlaps(crossing):
        overlapped = [h for h in kept if h.start < hit.end and hit.start < h.end]
        if all(hit.start < h.start for h in overlapped):
            kept = [h for h in kept if h not in overlapped] + [hit]
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


def _found(hit: Hit, folded: Sequence[Folded], starts: list[int], texts: Sequence[str]) -> Found:
    """`hit`, in the parts joined as they are, as pieces of the texts as typed."""
    pieces = []
    first, last = (bisect_right(starts, at) - 1 for at in (hit.start, hit.end - 1))
    for part in range(first, last + 1):
        low = max(hit.start - starts[part], 0)
        high = min(hit.end - starts[part], len(folded[part].text))
        if high > low:
            pieces.append(Piece(part, *folded[part].span(low, high)))
    value = "".join(texts[p.part][p.start : p.end] for p in pieces)
    return Found(hit.detector, tuple(pieces), value)
