"""False positives on ordinary text with numbers: dates, prices, order numbers, logs, code.

The corpus (fixtures/ordinary_text.txt, 2,084 lines, ~115 KB) holds no personal data
at all, so every hit in it is a false positive. Long numbers are where the checksums
decide: a random nine-digit number passes the Dutch BSN's eleven-test or the Portuguese
NIF's check about one time in eleven each, which no pattern can tell apart from a real
identifier without context. The rates measured here are in docs/personal-data.md.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from llmeu.personal.detectors import find
from llmeu.personal.rules import Detector

CORPUS = Path(__file__).parent / "fixtures" / "ordinary_text.txt"
WEAK_CHECKSUMS = {Detector.NL_BSN, Detector.PT_NIF, Detector.SE_PERSONNUMMER,
                  Detector.AT_SOCIAL_SECURITY}  # fmt: skip


def measure() -> tuple[int, int, int, Counter[Detector]]:
    lines = CORPUS.read_text().splitlines()
    per_detector: Counter[Detector] = Counter()
    lines_hit = 0
    for line in lines:
        hits = find(line, frozenset(Detector))
        lines_hit += bool(hits)
        per_detector.update(hit.detector for hit in hits)
    long_numbers = len(re.findall(r"(?<![\w.])\d{9,}(?![\w])", CORPUS.read_text()))
    return len(lines), lines_hit, long_numbers, per_detector


def test_false_positive_rate_on_ordinary_text() -> None:
    lines, lines_hit, long_numbers, per_detector = measure()
    assert lines == 2084 and long_numbers > 300
    # Under 1 % of lines; only the short checksums of nine- and ten-digit identifiers
    # ever let an ordinary number through.
    assert lines_hit / lines < 0.01, per_detector
    assert set(per_detector) <= WEAK_CHECKSUMS, per_detector
    assert sum(per_detector.values()) / long_numbers < 0.05, per_detector


if __name__ == "__main__":
    lines, lines_hit, long_numbers, per_detector = measure()
    print(f"{lines_hit}/{lines} lines with a hit ({lines_hit / lines:.2%}); "
          f"{sum(per_detector.values())} hits among {long_numbers} standalone numbers of "
          f"9+ digits; by detector: {dict(per_detector)}")  # fmt: skip
