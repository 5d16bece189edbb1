"""A tool call's content under the policy's personal-data rules, both ways.

What an agent sends a tool leaves the gateway as surely as a prompt, and
what the tool answers reaches the model's next turn: both are screened with
the same detectors and rules as a prompt (`llmeu.personal.scan.screen`).

- Arguments, before they leave: every string value (`arguments.account.iban`)
  is a part; `block` refuses the call, `restrict` lets it go only to a server
  the restricted policy admits, `mask` sends placeholders (`[IBAN_1]`).
- The result, before it comes back: every string of `content` and
  `structuredContent` is a part, binary content (`data`, `blob`) is a part
  that cannot be scanned; `block` withholds the result, `mask` masks what the
  server itself answered. The placeholders the arguments were sent with, when
  the server answers them back, are put back: the caller gets its own values,
  never the server's masked ones.

Keys of objects are not scanned: they name fields, not people.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, cast

from llmeu.personal.masking import Masking
from llmeu.personal.rules import PersonalDataRules
from llmeu.personal.scan import Screening, TextParts, screen

_BINARY = frozenset({"blob"})
_BINARY_BLOCKS = frozenset({"image", "audio"})
Rewrite = Callable[[str, str], str]


def _strings(value: Any, path: str, binary: bool = False) -> Iterator[tuple[str, str, bool]]:
    """Every string under `value` with its path, and whether it is base64 content (a
    `blob`, or the `data` of an image or audio block)."""
    if isinstance(value, str):
        yield path, value, binary
    elif isinstance(value, dict):
        media = value.get("type") in _BINARY_BLOCKS
        for key, item in value.items():
            if key != "_meta":
                inside = key in _BINARY or (media and key == "data")
                yield from _strings(item, f"{path}.{key}", inside)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _rewritten(value: Any, path: str, rewrite: Rewrite) -> Any:
    if isinstance(value, str):
        return rewrite(path, value)
    if isinstance(value, dict):
        return {
            k: v if k == "_meta" else _rewritten(v, f"{path}.{k}", rewrite)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_rewritten(v, f"{path}[{i}]", rewrite) for i, v in enumerate(value)]
    return value


def screen_arguments(
    arguments: dict[str, Any], rules: PersonalDataRules, policy_id: str
) -> Screening:
    parts = [(path, text) for path, text, _ in _strings(arguments, "arguments")]
    return screen(parts, (), rules, policy_id)


def masked_arguments(arguments: dict[str, Any], screening: Screening) -> dict[str, Any]:
    masked: dict[str, Any] = _rewritten(arguments, "arguments", screening.masked)
    return masked


class ResultScreen:
    """The screening of one result, given the masking its arguments were sent with."""

    __slots__ = ("_parts", "_sent", "screening")

    def __init__(self, sent: Masking | None):
        self._sent = sent
        self._parts: dict[str, list[str]] = {}  # a string's path → its pieces, in order
        self.screening = Screening()

    def run(self, result: dict[str, Any], rules: PersonalDataRules, policy_id: str) -> None:
        parts, unscanned = self._split(result)
        self.screening = screen(parts, unscanned, rules, policy_id)

    def result(self, result: dict[str, Any], *, restored: bool = True) -> dict[str, Any]:
        """The result masked where the server's own values hit; `restored`, as the caller
        gets it (its own values back where the server answered their placeholders), else as
        the trace keeps it (placeholders, never a value)."""
        rewrite = self._rewrite if restored else self._masked_only
        rewritten: dict[str, Any] = _rewritten(result, "result", rewrite)
        return rewritten

    def _split(self, result: dict[str, Any]) -> tuple[TextParts, list[str]]:
        """The strings of the result cut at the placeholders the arguments carried (which are
        no personal data of the server's and must not be masked again), and the paths of
        binary content."""
        parts: list[tuple[str, str]] = []
        unscanned: list[str] = []
        pattern = self._placeholders()
        for path, text, binary in _strings(result, "result"):
            if binary:
                unscanned.append(path)
                continue
            pieces = pattern.split(text) if pattern is not None else [text]
            self._parts[path] = pieces
            for index, piece in enumerate(pieces[::2]):
                parts.append((_piece_path(path, index, len(pieces)), piece))
        return parts, unscanned

    def _rewrite(self, path: str, text: str, restored: bool = True) -> str:
        pieces = self._parts.get(path)
        if pieces is None:
            return text
        out = []
        for index, piece in enumerate(pieces):
            if index % 2:
                sent = self._sent if restored else None
                out.append(sent.restore(piece) if sent is not None else piece)
            else:
                out.append(self.screening.masked(_piece_path(path, index // 2, len(pieces)), piece))
        return "".join(out)

    def _masked_only(self, path: str, text: str) -> str:
        return self._rewrite(path, text, restored=False)

    def _placeholders(self) -> re.Pattern[str] | None:
        if self._sent is None or not self._sent:
            return None
        known = sorted(self._sent.placeholders, key=len, reverse=True)
        return re.compile("(" + "|".join(re.escape(p) for p in known) + ")")


def _piece_path(path: str, index: int, pieces: int) -> str:
    """A piece's path: the string's own, numbered when a placeholder cut it."""
    return path if pieces == 1 else f"{path}~{index + 1}"


def combined(*screenings: Screening | None) -> dict[str, object]:
    """One account of the screenings for the trace (the shape a prompt's screening has)."""
    done = [s for s in screenings if s is not None]
    return {
        "findings": [f.as_dict() for s in done for f in s.findings],
        "unscanned": [u for s in done for u in s.unscanned],
        "restricted": any(s.restrict for s in done),
        "masked": sum(cast(int, s.record()["masked"]) for s in done),
        "scan_failed": any(s.scan_failed for s in done),
    }
