"""Screening a call's text against a policy's `personal_data` rules.

A surface hands over every text its request forwards as `(path, text)` parts
— the path names where the text sits (`messages[1].content[0].text`,
`tools[0].function.description`) — and the paths of parts it cannot scan
(images, audio, files). `screen` finds the hits (`llmeu.personal.locate`: in
every part, and across consecutive ones) and decides, in this order: a
prompt over the scan bound is blocked; an unscanned part is blocked where
`unscanned: block`; a detector that fails blocks the call with a 503 unless
`on_error: open`; a `block` hit refuses the call (403
`personal_data_detected`, naming detector and path, never the value); a
`restrict` hit narrows the route; `mask` hits are masked. A hit split across
parts counts once, at the path where it begins. A part that is a JSON
document (a tool call's arguments, a tool's result that parses as JSON:
`llmeu.personal.escapes`) is read with its string escapes read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from llmeu.errors import ApiError, PermissionDenied, ServiceUnavailable
from llmeu.personal.escapes import carries_json
from llmeu.personal.locate import Found, Piece, locate
from llmeu.personal.masking import Cut, Masking
from llmeu.personal.rules import Action, Detector, OnError, PersonalDataRules, Unscanned

TextParts = Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Finding:
    detector: Detector
    path: str
    count: int
    action: Action

    def as_dict(self) -> dict[str, object]:
        return {
            "detector": self.detector.value,
            "path": self.path,
            "count": self.count,
            "action": self.action.value,
        }


@dataclass(slots=True)
class Screening:
    """What the scan found and what it decided; `masked(path, text)` rewrites a part."""

    findings: list[Finding] = field(default_factory=list)
    unscanned: list[str] = field(default_factory=list)
    restrict: bool = False
    scan_failed: bool = False
    masking: Masking | None = None
    refusal: ApiError | None = None
    """Set when the call must not go on: the lifecycle records the screening, then raises it."""
    _to_mask: dict[str, list[Cut]] = field(default_factory=dict)

    def masked(self, path: str, text: str) -> str:
        cuts = self._to_mask.get(path)
        if not cuts or self.masking is None:
            return text
        return self.masking.mask(text, cuts)

    def record(self) -> dict[str, object]:
        """The trace's account: detectors, paths and counts, never a value."""
        return {
            "findings": [f.as_dict() for f in self.findings],
            "unscanned": self.unscanned,
            "restricted": self.restrict,
            "masked": sum(c.first for cuts in self._to_mask.values() for c in cuts),
            "scan_failed": self.scan_failed,
        }


class PersonalDataDetected(PermissionDenied):
    default_code = "personal_data_detected"


class ScanFailed(ServiceUnavailable):
    default_code = "personal_data_scan_failed"


def screen(
    parts: TextParts, unscanned: Sequence[str], rules: PersonalDataRules, policy_id: str
) -> Screening:
    """Scan `parts`; a refusal is returned in `refusal`, after every part was scanned."""
    screening = Screening(unscanned=list(unscanned))
    size = sum(len(text) for _, text in parts)
    if size > rules.max_scan_chars:
        screening.refusal = PersonalDataDetected(
            f"the prompt has {size} characters, more than policy `{policy_id}` scans for "
            f"personal data ({rules.max_scan_chars}); it is blocked rather than passed unscanned",
            code="personal_data_unscannable",
        )
        return screening
    if unscanned and rules.unscanned is Unscanned.BLOCK:
        screening.refusal = PersonalDataDetected(
            f"`{unscanned[0]}` cannot be scanned for personal data and policy `{policy_id}` "
            "blocks parts it cannot scan",
            param=unscanned[0],
            code="personal_data_unscanned",
        )
        return screening
    found = _located(screening, parts, rules, policy_id)
    if screening.refusal is None:
        _decide(screening, [path for path, _ in parts], found, rules, policy_id)
    return screening


def _located(
    screening: Screening, parts: TextParts, rules: PersonalDataRules, policy_id: str
) -> list[Found]:
    """The hits in `parts`. Should a detector fail, each part is scanned alone to name the
    one it fails on: with `on_error: closed` the call is refused, with `open` the other
    parts' hits are kept (and no value split across parts is looked for)."""
    detectors = rules.active()
    json = frozenset(i for i, (path, text) in enumerate(parts) if carries_json(path, text))
    try:
        return locate([text for _, text in parts], detectors, json)
    except Exception as error:  # a validator's bug must not let the value through
        screening.scan_failed = True
        failed: tuple[str | None, Exception] = (None, error)
    found: list[Found] = []
    for index, (path, text) in enumerate(parts):
        try:
            alone = locate([text], detectors, (0,) if index in json else ())
        except Exception as error:
            failed = (path, error)
            if rules.on_error is OnError.CLOSED:
                break
            continue
        found += [Found(f.detector, tuple(_in(p, index) for p in f.pieces), f.value) for f in alone]
    if rules.on_error is OnError.CLOSED:
        screening.refusal = _scan_failed(*failed, policy_id)
        return []
    return found


def _scan_failed(path: str | None, error: Exception, policy_id: str) -> ScanFailed:
    where = f"of `{path}`" if path is not None else "across parts"
    return ScanFailed(
        f"the personal-data scan {where} failed ({type(error).__name__}); policy "
        f"`{policy_id}` refuses calls it cannot scan",
        param=path,
    )


def _in(piece: Piece, part: int) -> Piece:
    return Piece(part, piece.start, piece.end)


def _decide(
    screening: Screening,
    paths: list[str],
    found: list[Found],
    rules: PersonalDataRules,
    policy_id: str,
) -> None:
    counts = Counter((paths[f.pieces[0].part], f.detector) for f in found)
    for (path, detector), count in counts.items():
        action = rules.action(detector)
        screening.findings.append(Finding(detector, path, count, action))
        if action is Action.BLOCK and screening.refusal is None:
            screening.refusal = PersonalDataDetected(
                f"personal data detected: {detector.value} in `{path}`; policy `{policy_id}` "
                f"blocks {detector.value}",
                param=path,
            )
        elif action is Action.RESTRICT:
            screening.restrict = True
    masked = {d for d, a in rules.actions if a is Action.MASK}
    for hit in found:
        if hit.detector not in masked:
            continue
        if screening.masking is None:
            screening.masking = Masking()
        for i, piece in enumerate(hit.pieces):
            cut = Cut(piece.start, piece.end, hit.detector, hit.value, first=i == 0)
            screening._to_mask.setdefault(paths[piece.part], []).append(cut)
