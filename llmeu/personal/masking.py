"""Placeholders for one call: values out of the prompt, values back into the answer.

`Masking` replaces each value found by a placeholder such as `[IBAN_1]` (the
same value gets the same placeholder everywhere in the call) and keeps the
mapping only in memory, for the call's lifetime. `Restorer` puts the values
back into an answer that arrives in pieces: a piece ending in what could
still become a placeholder (`… [IB`) is held back until the next piece
completes or refutes it, so a client never sees half a placeholder or half a
restored value, and the concatenation of what it sends is exactly the
answer with every placeholder restored.

A value is what was typed, so a placeholder gives back the fullwidth digits
or the zero-width space it was typed with; a value typed in JSON (a tool
call's arguments, a tool's JSON result) is kept as its JSON string holds it,
escapes read. Where the answer is JSON text itself (a tool call's arguments:
`restore_json`, `restorer(json=True)`) a value goes back JSON-escaped, so the
arguments stay valid JSON and parse to the value the prompt had. A value
split across two parts of a request (`NL91 ABNA` in one message, `0417 1643
00` in the next) becomes one placeholder where it begins; its other pieces
are removed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llmeu.personal.detectors import Hit
from llmeu.personal.escapes import json_escaped
from llmeu.personal.rules import Detector

_PLACEHOLDER = re.compile(r"\[[A-Z_]+_\d+\]")


@dataclass(frozen=True, slots=True)
class Cut:
    """Characters of one text to replace: with the placeholder of `value` where the value
    begins (`first`), with nothing where it goes on from another part."""

    start: int
    end: int
    detector: Detector
    value: str
    first: bool = True


def cuts(text: str, hits: Sequence[Hit]) -> list[Cut]:
    """The cuts of the hits of one text, each hit a whole value."""
    return [Cut(h.start, h.end, h.detector, text[h.start : h.end]) for h in hits]


class Masking:
    def __init__(self) -> None:
        self._placeholders: dict[str, str] = {}  # value -> placeholder
        self._values: dict[str, str] = {}  # placeholder -> value
        self._counts: dict[str, int] = {}

    def mask(self, text: str, cuts: Sequence[Cut]) -> str:
        """`text` with every cut made (`cuts` in order, not overlapping)."""
        out: list[str] = []
        at = 0
        for cut in cuts:
            out.append(text[at : cut.start])
            if cut.first:
                out.append(self._placeholder(cut.detector.value.upper(), cut.value))
            at = cut.end
        out.append(text[at:])
        return "".join(out)

    def restore(self, text: str) -> str:
        if "[" not in text:
            return text
        return _PLACEHOLDER.sub(lambda m: self._values.get(m.group(), m.group()), text)

    def restore_json(self, text: str) -> str:
        """`text`, JSON, with each value put back written as inside a JSON string."""
        if "[" not in text:
            return text
        return _PLACEHOLDER.sub(lambda m: self._json_value(m.group()), text)

    def restorer(self, json: bool = False) -> Restorer:
        return Restorer(self, json)

    @property
    def placeholders(self) -> Sequence[str]:
        return list(self._values)

    def __bool__(self) -> bool:
        return bool(self._values)

    def _json_value(self, placeholder: str) -> str:
        value = self._values.get(placeholder)
        return placeholder if value is None else json_escaped(value)

    def _placeholder(self, label: str, value: str) -> str:
        known = self._placeholders.get(value)
        if known is not None:
            return known
        count = self._counts.get(label, 0) + 1
        self._counts[label] = count
        placeholder = f"[{label}_{count}]"
        self._placeholders[value] = placeholder
        self._values[placeholder] = value
        return placeholder


class Restorer:
    """Restores one stream of text (one per content field or tool call of a stream); a
    `json` one (a function tool call's arguments) puts values back JSON-escaped."""

    def __init__(self, masking: Masking, json: bool = False):
        self._masking = masking
        self._restore = masking.restore_json if json else masking.restore
        self._held = ""

    def push(self, piece: str) -> str:
        """What can go out now: `piece` after what was held, restored, minus a possible start
        of a placeholder at its end."""
        text = self._held + piece
        self._held = ""
        cut = text.rfind("[")
        if cut >= 0 and self._could_become_placeholder(text[cut:]):
            self._held = text[cut:]
            text = text[:cut]
        return self._restore(text)

    def flush(self) -> str:
        """What was held at the end: never a placeholder, so it goes out as it is."""
        held, self._held = self._held, ""
        return held

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def _could_become_placeholder(self, tail: str) -> bool:
        return any(p.startswith(tail) and p != tail for p in self._masking.placeholders)
