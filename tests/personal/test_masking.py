"""Masking and restoring: values out, placeholders in, values back however the answer is cut."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from llmeu.calls.output import Delta, ToolCallDelta, ToolCallFunctionDelta
from llmeu.personal.detectors import find
from llmeu.personal.masking import Masking, cuts
from llmeu.personal.rules import Detector
from llmeu.personal.streams import StreamRestorer

PROMPT = "Pay NL91ABNA0417164300 from jan@example.nl, again NL91ABNA0417164300, cc 4111111111111111"
VALUES = ["NL91ABNA0417164300", "jan@example.nl", "4111111111111111"]


def masked_prompt() -> tuple[Masking, str]:
    masking = Masking()
    return masking, masking.mask(PROMPT, cuts(PROMPT, find(PROMPT, frozenset(Detector))))


def test_mask_replaces_every_value_and_reuses_a_placeholder() -> None:
    masking, text = masked_prompt()
    assert text == "Pay [IBAN_1] from [EMAIL_1], again [IBAN_1], cc [PAYMENT_CARD_1]"
    assert not any(value in text for value in VALUES)
    assert masking.restore(text) == PROMPT


def test_placeholders_count_per_detector_across_parts() -> None:
    masking = Masking()
    first = masking.mask("a@b.eu", cuts("a@b.eu", find("a@b.eu", frozenset(Detector))))
    text = "c@d.eu and a@b.eu"
    second = masking.mask(text, cuts(text, find(text, frozenset(Detector))))
    assert (first, second) == ("[EMAIL_1]", "[EMAIL_2] and [EMAIL_1]")


def test_unknown_placeholders_and_brackets_pass_through() -> None:
    masking, _ = masked_prompt()
    text = "list[0] [IBAN_2] [EMAIL_1 [x] ["
    assert masking.restore(text) == text


ANSWER_PIECES = st.lists(
    st.sampled_from(
        ["[IBAN_1]", "[EMAIL_1]", "[PAYMENT_CARD_1]", "[IBAN_", "[IBAN_2]", "[", "]", "x", " ",
         "IBAN", "_1]", "[EMAIL", "é", "\n"]
    ),
    max_size=30,
).map("".join)  # fmt: skip


def restored_pieces(masking: Masking, pieces: list[str]) -> list[str]:
    restorer = masking.restorer()
    out = [restorer.push(piece) for piece in pieces]
    return [*out, restorer.flush()]


def check_pieces(masking: Masking, answer: str, out: list[str]) -> None:
    whole = masking.restore(answer)
    # Equal to the answer restored as a whole: a placeholder sent in two halves would
    # arrive unrestored, so this also says none was.
    assert "".join(out) == whole
    # A value is never cut between two pieces: it goes out whole, once restored.
    cuts = set(itertools.accumulate(len(p) for p in out))
    for value in VALUES:
        start = whole.find(value)
        while start >= 0:
            assert not any(start < cut < start + len(value) for cut in cuts), (value, out)
            start = whole.find(value, start + 1)


@settings(max_examples=400, deadline=None)
@given(answer=ANSWER_PIECES, data=st.data())
def test_any_split_of_the_answer_restores_it_exactly(answer: str, data: st.DataObject) -> None:
    masking, _ = masked_prompt()
    cuts = sorted(data.draw(st.sets(st.integers(0, len(answer)))))
    pieces = [answer[a:b] for a, b in zip([0, *cuts], [*cuts, len(answer)], strict=True)]
    check_pieces(masking, answer, restored_pieces(masking, pieces))


def test_every_split_in_up_to_three_pieces() -> None:
    masking, _ = masked_prompt()
    answer = "Sent [IBAN_1] to [EMAIL_1]; [IBAN_] [PAYMENT_CARD_1]"
    n = len(answer)
    for a, b in itertools.combinations_with_replacement(range(n + 1), 2):
        pieces = [answer[:a], answer[a:b], answer[b:]]
        check_pieces(masking, answer, restored_pieces(masking, pieces))


def test_stream_restorer_keeps_one_delta_per_delta_and_restores_tool_arguments() -> None:
    masking, _ = masked_prompt()
    restorer = StreamRestorer(masking)
    deltas = [
        Delta(content="to [IB"),
        Delta(content="AN_1] ok ["),
        Delta(tool_calls=[ToolCallDelta(index=0, function=ToolCallFunctionDelta(name="pay"))]),
        Delta(
            tool_calls=[
                ToolCallDelta(index=0, function=ToolCallFunctionDelta(arguments='{"to": "[EMA'))
            ]
        ),
        Delta(
            tool_calls=[ToolCallDelta(index=0, function=ToolCallFunctionDelta(arguments='IL_1]"}'))]
        ),
    ]
    out = [restorer.push(d) for d in deltas]
    assert [d.content for d in out[:2]] == ["to ", "NL91ABNA0417164300 ok "]
    args = [
        c.function.arguments
        for d in out
        if isinstance(d.tool_calls, list)
        for c in d.tool_calls
        if not isinstance(c.function, type(None)) and isinstance(c.function.arguments, str)
    ]
    assert "".join(args) == '{"to": "jan@example.nl"}'
    assert args[0] == '{"to": "'
    assert restorer.flush() == Delta(content="[")
    assert restorer.flush() is None
