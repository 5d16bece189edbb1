"""Screening a call's text against a policy's `personal_data` rules.

A surface hands over its request's text as `(path, text)` parts — the path
names where the text sits (`messages[1].content[0].text`) — and the paths
of parts it cannot scan (images, audio, files). `screen` finds the hits and
decides, in this order: a prompt over the scan bound is blocked; an
unscanned part is blocked where `unscanned: block`; a detector that fails
blocks the call with a 503 unless `on_error: open`; a `block` hit refuses
the call (403 `personal_data_detected`, naming detector and path, never the
value); a `restrict` hit narrows the route; `mask` hits are masked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from llmeu.errors import ApiError, PermissionDenied, ServiceUnavailable
from llmeu.personal.detectors import Hit, find
from llmeu.personal.masking import Masking
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
    _to_mask: dict[str, list[Hit]] = field(default_factory=dict)

    def masked(self, path: str, text: str) -> str:
        hits = self._to_mask.get(path)
        if not hits or self.masking is None:
            return text
        return self.masking.mask(text, hits)

    def record(self) -> dict[str, object]:
        """The trace's account: detectors, paths and counts, never a value."""
        return {
            "findings": [f.as_dict() for f in self.findings],
            "unscanned": self.unscanned,
            "restricted": self.restrict,
            "masked": sum(len(h) for h in self._to_mask.values()),
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
    detectors = rules.active()
    for path, text in parts:
        try:
            hits = find(text, detectors)
        except Exception as error:  # a validator's bug must not let the value through
            screening.scan_failed = True
            if rules.on_error is OnError.CLOSED:
                screening.refusal = ScanFailed(
                    f"the personal-data scan of `{path}` failed ({type(error).__name__}); "
                    f"policy `{policy_id}` refuses calls it cannot scan",
                    param=path,
                )
                return screening
            continue
        _decide(screening, path, hits, rules, policy_id)
    return screening


def _decide(
    screening: Screening,
    path: str,
    hits: list[Hit],
    rules: PersonalDataRules,
    policy_id: str,
) -> None:
    counts = Counter(hit.detector for hit in hits)
    to_mask: list[Hit] = []
    for detector, count in counts.items():
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
        elif action is Action.MASK:
            to_mask.extend(h for h in hits if h.detector is detector)
    if to_mask:
        if screening.masking is None:
            screening.masking = Masking()
        screening._to_mask[path] = sorted(to_mask, key=lambda h: h.start)
