"""JSON escapes in a tool call's arguments: read as the characters they stand for, masked
whole, the arguments still JSON, and restored to the values they parsed to."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmeu.calls.output import Delta, ToolCallDelta, ToolCallFunctionDelta
from llmeu.personal.escapes import carries_json, json_escaped, unescape
from llmeu.personal.folding import fold
from llmeu.personal.masking import Masking
from llmeu.personal.rules import Action, Detector, PersonalDataRules
from llmeu.personal.scan import Screening, screen
from llmeu.personal.streams import StreamRestorer
from tests.personal.evasions import ARABIC_INDIC, digits_from, fullwidth

ARGUMENTS = "messages[1].tool_calls[0].function.arguments"
CONTENT = "messages[0].content"
RULES = PersonalDataRules(actions=tuple((d, Action.MASK) for d in Detector))


def escaped(text: str) -> str:
    """Every character of `text` as a `\\uXXXX` escape (a surrogate pair beyond the BMP)."""
    raw = text.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(raw[i : i + 2], 'big'):04x}" for i in range(0, len(raw), 2))


def masked(arguments: str) -> tuple[Screening, str]:
    screening = screen([(ARGUMENTS, arguments)], (), RULES, "p")
    assert screening.refusal is None
    return screening, screening.masked(ARGUMENTS, arguments)


ZWSP = "\\u200B"
FOUND = [
    ("email-at", r'{"to": "ana\u0040example.eu"}', Detector.EMAIL),
    ("email-every-char", '{"to": "' + escaped("ana@example.eu") + '"}', Detector.EMAIL),
    ("email-fullwidth-at", r'{"to": "ana\uFF20example.eu"}', Detector.EMAIL),
    ("email-escaped-slash", r'{"to": "ana\u0040example.eu\/x"}', Detector.EMAIL),
    ("iban-letters", r'{"iban": "\u004E\u004C91 ABNA 0417 1643 00"}', Detector.IBAN),
    ("iban-lowercase-hex", r'{"iban": "\u004e\u004c91ABNA0417164300"}', Detector.IBAN),
    ("iban-zero-width", f'{{"iban": "NL91{ZWSP}ABNA{ZWSP}0417164300"}}', Detector.IBAN),
    ("iban-fullwidth", r'{"iban": "\uFF2E\uFF2C\uFF19\uFF11ABNA0417164300"}', Detector.IBAN),
    ("iban-tab-escape", r'{"iban": "NL91\tABNA\t0417\t1643\t00"}', Detector.IBAN),
    ("iban-mixed", '{"iban": "\uff2e\\u004C91\u200bAB\\u004EA 0417 1643 00"}', Detector.IBAN),
    ("phone-plus", r'{"phone": "\u002B31 20 794 0000"}', Detector.PHONE),
    ("card-dashes", r'{"card": "4111\u002D1111\u002D1111\u002D1111"}', Detector.PAYMENT_CARD),
    ("card-surrogates", r'{"card": "\uD835\uDFD2111 1111 1111 1111"}', Detector.PAYMENT_CARD),
    (
        "card-all-surrogates",
        '{"card": "' + escaped("\U0001d7d2111111111111111") + '"}',
        Detector.PAYMENT_CARD,
    ),
]


@pytest.mark.parametrize(
    ("arguments", "detector"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND]
)
def test_an_escaped_value_is_found_masked_whole_and_restored(
    arguments: str, detector: Detector
) -> None:
    screening, sent = masked(arguments)
    assert [(f.detector, f.path) for f in screening.findings] == [(detector, ARGUMENTS)]
    parsed = json.loads(sent)  # still JSON: the whole escape went, a placeholder came
    (key,) = parsed
    assert parsed[key] == f"[{detector.value.upper()}_1]" or parsed[key].startswith(
        f"[{detector.value.upper()}_1]"
    )
    assert "\\u" not in sent.replace("\\/x", "")
    assert screening.masking is not None
    restored = screening.masking.restore_json(sent)
    assert json.loads(restored) == json.loads(arguments)


NOT_FOUND = [
    ("escaped-backslash", r'{"to": "ana\\u0040example.eu"}'),  # a backslash, then `u0040`
    ("lone-surrogate", r'{"card": "\uD835111 1111 1111 1111"}'),
    ("not-an-escape", r'{"to": "ana\x40example.eu"}'),
]


@pytest.mark.parametrize("arguments", [c[1] for c in NOT_FOUND], ids=[c[0] for c in NOT_FOUND])
def test_what_json_does_not_read_as_a_value_is_not_one(arguments: str) -> None:
    screening, sent = masked(arguments)
    assert screening.findings == [] and sent == arguments


def test_only_text_that_carries_json_is_unescaped() -> None:
    text = r"ana\u0040example.eu"
    assert screen([(CONTENT, text)], (), RULES, "p").findings == []
    assert [f.path for f in screen([(ARGUMENTS, text)], (), RULES, "p").findings] == [ARGUMENTS]


@pytest.mark.parametrize(
    ("path", "text", "read"),
    [
        ("messages[3].tool_calls[1].function.arguments", "not JSON at all", True),
        ("messages[3].content", r'{"found": "ana\u0040example.eu"}', True),
        ("messages[3].content", r' [{"a": "\u0040"}]', True),
        ("messages[3].content", '{"found": "ana@example.eu"}', False),  # no backslash
        ("messages[3].content", r'{"found": "ana\u0040example.eu"', False),  # not JSON
        ("messages[3].content", r'"ana\u0040example.eu"', False),  # a string, not a document
        ("metadata.arguments", r"see ana\u0040example.eu", False),
    ],
    ids=["arguments", "tool-result", "array", "no-backslash", "broken", "string", "prose"],
)
def test_which_texts_carry_json(path: str, text: str, read: bool) -> None:
    assert carries_json(path, text) is read


def test_a_tool_result_written_by_json_dumps_is_read_and_masked() -> None:
    result = json.dumps(
        {"holder": "J\u00fcrgen", "iban": "\uff2e\uff2c91 ABNA 0417 1643 00"}
    )  # ensure_ascii: escaped
    assert "\\uff2e" in result
    screening = screen([(CONTENT, result)], (), RULES, "p")
    assert [f.detector for f in screening.findings] == [Detector.IBAN]
    assert json.loads(screening.masked(CONTENT, result)) == {"holder": "Jürgen", "iban": "[IBAN_1]"}


@pytest.mark.parametrize(
    ("typed", "read", "span", "value"),
    [
        (r'x "a\u0040b"', 'x "a@b"', (3, 6), r"a\u0040b"),
        (r"\uD835\uDFCE1 z", "01 z", (0, 2), r"\uD835\uDFCE1"),
        (r"\"q\\u0040\n", '"q\\u0040\n', (1, 9), r"q\\u0040\n"),
        (r"a\u200Bb\u00AD c", "ab c", (0, 2), r"a\u200Bb"),
    ],
    ids=["escape-inside", "surrogate-pair", "simple-escapes", "zero-width-and-soft-hyphen"],
)
def test_a_span_of_the_read_text_covers_whole_escapes(
    typed: str, read: str, span: tuple[int, int], value: str
) -> None:
    folded = fold(typed, json=True)
    assert folded.text == read
    low, high = folded.span(*span)
    assert typed[low:high] == value


def test_a_text_without_a_backslash_is_folded_as_any_text() -> None:
    text = '{"to": "ana@example.eu"}'
    assert fold(text, json=True).text == fold(text).text == text
    assert unescape(text) is None


def test_one_value_keeps_one_placeholder_in_text_and_in_json() -> None:
    parts = [(CONTENT, "write to ana@example.eu"), (ARGUMENTS, r'{"to": "ana\u0040example.eu"}')]
    screening = screen(parts, (), RULES, "p")
    assert screening.masked(CONTENT, parts[0][1]) == "write to [EMAIL_1]"
    assert json.loads(screening.masked(ARGUMENTS, parts[1][1])) == {"to": "[EMAIL_1]"}
    assert screening.masking is not None
    assert screening.masking.restore("sent to [EMAIL_1]") == "sent to ana@example.eu"


def test_a_value_typed_as_text_goes_back_into_json_escaped() -> None:
    """A NUL inside a value typed in a message must not break an answer's arguments: it
    goes back as `\\u0000`."""
    typed = "NL91\x00ABNA0417164300 is the account"
    screening = screen([(CONTENT, typed)], (), RULES, "p")
    assert screening.masking is not None
    masking = screening.masking
    assert screening.masked(CONTENT, typed).startswith("[IBAN_1]")
    restored = masking.restore_json('{"iban": "[IBAN_1]"}')
    assert json.loads(restored) == {"iban": "NL91\x00ABNA0417164300"}
    assert masking.restore("[IBAN_1]") == "NL91\x00ABNA0417164300"
    assert json_escaped('a"b\\c\x00\u200b') == 'a\\"b\\\\c\\u0000\u200b'


STREAMED = [
    ("escape-split", ['{"note": "x\\u00', '40y", "iban": "[IB', 'AN_1]"}']),
    ("surrogate-split", ['{"n": "\\uD835', "\\uDFCE", '", "i": "[IBAN_1', ']"}']),
    ("backslash-alone", ['{"n": "\\', 'u0040", "i": "', "[IBAN_1]", '"}']),
    ("one-piece", ['{"i": "[IBAN_1]", "n": "\\u0040"}']),
]


@pytest.mark.parametrize("pieces", [c[1] for c in STREAMED], ids=[c[0] for c in STREAMED])
def test_streamed_arguments_restore_to_valid_json_however_they_are_cut(pieces: list[str]) -> None:
    typed = "pay NL91\tABNA\t0417\t1643\t00"  # a tab in the value: raw, it breaks a JSON string
    screening = screen([(CONTENT, typed)], (), RULES, "p")
    assert screening.masked(CONTENT, typed) == "pay [IBAN_1]" and screening.masking is not None
    restorer = StreamRestorer(screening.masking)
    out = [
        restorer.push(
            Delta(tool_calls=[ToolCallDelta(index=0, function=ToolCallFunctionDelta(arguments=p))])
        )
        for p in pieces
    ]
    assert restorer.flush() is None
    args = "".join(
        c.function.arguments
        for d in out
        if isinstance(d.tool_calls, list)
        for c in d.tool_calls
        if not isinstance(c.function, type(None)) and isinstance(c.function.arguments, str)
    )
    assert len(out) == len(pieces)
    whole = "".join(pieces)
    assert json.loads(args) == json.loads(
        whole.replace("[IBAN_1]", "NL91\\tABNA\\t0417\\t1643\\t00")
    )
    assert Masking.restore_json(screening.masking, whole) == args


WORDS = [
    "NL91 ABNA 0417 1643 00",
    "jan.jansen@example.nl",
    "4111 1111 1111 1111",
    "+31 20 794 0000",
    fullwidth("NL91ABNA0417164300"),
    digits_from(ARABIC_INDIC, "4111 1111 1111 1111"),
    "NL91\u200bABNA0417164300",
    'say "hi"',
    "C:\\temp",
    "order 12345, due 2026-12-07",
    "caf\u00e9\nnext line",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
def test_arguments_read_the_same_escaped_or_not(words: list[str]) -> None:
    """The same arguments, written as plain JSON and with every character a `\\u` escape,
    are the same hits, and mask to the same parsed value."""
    note = " ".join(words)
    plain, every = json.dumps({"note": note}, ensure_ascii=False), f'{{"note": "{escaped(note)}"}}'
    assert json.loads(every) == json.loads(plain)
    read = [masked(arguments) for arguments in (plain, every)]
    assert [f.detector for f in read[0][0].findings] == [f.detector for f in read[1][0].findings]
    assert json.loads(read[0][1]) == json.loads(read[1][1])
