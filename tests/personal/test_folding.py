"""Folding: text as a reader reads it, and every span of it mapped back to what was typed."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmeu.personal.folding import fold, read_as
from llmeu.personal.shape import shape
from tests.personal.evasions import ARABIC_INDIC, digits_from, fullwidth

ZWSP, SOFT_HYPHEN, NBSP, NARROW_NBSP, WORD_JOINER = "\u200b", "\u00ad", "\u00a0", "\u202f", "\u2060"
LETTERS = "caf\u00e9, \u039a\u03b1\u03bb\u03b7, \u041f\u0440\u0438, \u65e5\u672c"


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("plain ASCII, nothing to do", "plain ASCII, nothing to do"),
        (fullwidth("NL91 ABNA"), "NL91 ABNA"),
        ("\U0001d7d2\U0001d7cf\U0001d7cf\U0001d7cf", "4111"),  # mathematical bold digits
        (digits_from(ARABIC_INDIC, "4111 1111"), "4111 1111"),
        (digits_from(0x06F0, "4111"), "4111"),  # extended Arabic-Indic
        (digits_from(0x0966, "4111"), "4111"),  # Devanagari
        ("\u2460\u2461", "12"),  # circled
        (f"NL91{ZWSP}ABNA{SOFT_HYPHEN}0417{WORD_JOINER}16", "NL91ABNA041716"),
        (f"NL91{NBSP}ABNA{NARROW_NBSP}0417\u2007X\u3000Y", "NL91 ABNA 0417 X Y"),
        ("NL91\x00ABNA\x7f", "NL91ABNA"),  # NUL and DEL removed
        ("a\tb\x0bc\x0cd\u2028e\x85f", "a b\nc\nd\ne\nf"),  # a tab is a space, the rest breaks
        ("4111\u20131111\u20111111\u20141111", "4111-1111-1111-1111"),  # dashes
        (fullwidth("jan@example.nl"), "jan@example.nl"),
        ("jan\ufe6bexample.nl", "jan@example.nl"),  # small commercial at
        ("\ufb01le", "file"),  # a ligature reads as two letters
        ("a\ufe0fb\U000e0041c\u200dd", "abcd"),  # variation selector, tag, joiner
        (LETTERS, LETTERS),  # letters of every script stay as they are
        ("Line one\r\nline two\n", "Line one\r\nline two\n"),
        ("", ""),
    ],
)
def test_a_text_reads_as_a_reader_reads_it(typed: str, read: str) -> None:
    folded = fold(typed)
    assert folded.text == read
    assert folded.form == shape(read)


@pytest.mark.parametrize(
    ("typed", "value"),
    [
        (f"IBAN NL91{ZWSP}ABNA{SOFT_HYPHEN}0417 ok", f"NL91{ZWSP}ABNA{SOFT_HYPHEN}0417"),
        (f"card {fullwidth('4111 1111')} ok", fullwidth("4111 1111")),
        ("x \ufb01le y", "\ufb01le"),  # one character read as two: the span keeps it whole
        (f"{ZWSP}{ZWSP}NL91\x00AB end", "NL91\x00AB"),
        (digits_from(ARABIC_INDIC, "4111\u00a01111!"), digits_from(ARABIC_INDIC, "4111\u00a01111")),
    ],
)
def test_a_span_of_the_folded_text_is_the_span_that_was_typed(typed: str, value: str) -> None:
    folded = fold(typed)
    read = fold(value).text
    start = folded.text.index(read)
    low, high = folded.span(start, start + len(read))
    assert typed[low:high] == value


def test_invisible_characters_around_a_value_stay_out_of_its_span() -> None:
    typed = f"a {ZWSP}4111{ZWSP} b"
    folded = fold(typed)
    assert folded.text == "a 4111 b"
    assert typed[slice(*folded.span(2, 6))] == "4111"


def test_every_decimal_digit_reads_as_its_ascii_digit() -> None:
    digits = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Nd"]
    assert len(digits) > 600
    assert all(read_as(d) == str(unicodedata.decimal(d)) for d in digits)


def test_every_format_character_is_removed() -> None:
    formats = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    assert len(formats) > 150
    assert all(fold(f"4{f}1").text == "41" for f in formats)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=120))
def test_any_text_folds_and_maps_back(typed: str) -> None:
    folded = fold(typed)
    assert len(folded.form) == len(folded.text)
    assert fold(folded.text).text == folded.text  # folding twice changes nothing
    previous_end = 0
    for at in range(len(folded.text)):
        low, high = folded.span(at, at + 1)
        assert previous_end <= low < high <= len(typed)
        assert folded.text[at] in read_as(typed[low:high]) or high - low > 1
        previous_end = low
