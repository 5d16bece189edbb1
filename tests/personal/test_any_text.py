"""Any text: the scan never raises, hits are ordered spans, and mask then restore is identity."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from llmeu.personal.detectors import find
from llmeu.personal.masking import Masking, cuts
from llmeu.personal.rules import Detector
from tests.personal.identifiers import valid_identifiers

ALL = frozenset(Detector)
PIECES = st.sampled_from([
    "NL91 ABNA 0417 1643 00", "a@b.eu", "+31 20 794 0000", "0049 30 2270", "4111 1111 1111 1111",
    "203.0.113.7", "2001:db8::1", "12:30:45", "2024-01-15", "1.234,56", "X-", "-", ".", " ",
    "@", "+", "::", "é", "\u00a0", "\u0663", "\U0001d7d7", "[", "]", *valid_identifiers(Detector.NL_BSN, 2),
    *valid_identifiers(Detector.FR_NIR, 1), *valid_identifiers(Detector.ES_NIE, 1),
])  # fmt: skip
TEXTS = st.one_of(
    st.text(max_size=200),
    st.text(alphabet="0123456789 .-/+@:ABXYZabz", max_size=200),
    st.lists(st.one_of(PIECES, st.text(max_size=5)), max_size=25).map("".join),
)


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_the_scan_of_any_text(text: str) -> None:
    hits = find(text, ALL)
    assert all(0 <= h.start < h.end <= len(text) for h in hits)
    assert all(a.end <= b.start for a, b in itertools.pairwise(hits))
    masking = Masking()
    masked = masking.mask(text, cuts(text, hits))
    placeholders = re.compile(r"\[[A-Z_]+_\d+\]")
    assert len(placeholders.findall(masked)) == len(placeholders.findall(text)) + len(hits)
    if not placeholders.search(text):  # restoring replaces what looks like a placeholder
        assert masking.restore(masked) == text
