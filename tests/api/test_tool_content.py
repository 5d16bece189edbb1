"""A tool call's content under personal-data rules: arguments out, the result back."""

from __future__ import annotations

from llmeu.api.call.tool_content import (
    ResultScreen,
    combined,
    masked_arguments,
    screen_arguments,
)
from llmeu.personal.rules import Action, Detector, PersonalDataRules, Unscanned

IBAN = "DE89 3704 0044 0532 0130 00"
OTHER_IBAN = "NL91 ABNA 0417 1643 00"
MASK = PersonalDataRules(((Detector.EMAIL, Action.MASK), (Detector.IBAN, Action.MASK)))


def test_every_string_argument_is_screened_and_masked_in_place() -> None:
    arguments = {"account": {"iban": IBAN, "tags": ["mail jan@example.nl", 3]}, "n": 7}
    screening = screen_arguments(arguments, MASK, "p")
    assert [(f.path, f.detector.value) for f in screening.findings] == [
        ("arguments.account.iban", "iban"), ("arguments.account.tags[0]", "email"),
    ]  # fmt: skip
    assert masked_arguments(arguments, screening) == {
        "account": {"iban": "[IBAN_1]", "tags": ["mail [EMAIL_1]", 3]},
        "n": 7,
    }


def test_a_result_gets_the_caller_s_values_back_and_the_server_s_own_masked() -> None:
    sent = screen_arguments({"iban": IBAN}, MASK, "p")
    masked_arguments({"iban": IBAN}, sent)
    result = {"content": [{"type": "text", "text": f"moved [IBAN_1] to {OTHER_IBAN}"}],
              "structuredContent": {"from": "[IBAN_1]", "to": OTHER_IBAN}}  # fmt: skip
    screen = ResultScreen(sent.masking)
    screen.run(result, MASK, "p")
    back = screen.result(result)
    assert back["content"][0]["text"] == f"moved {IBAN} to [IBAN_1]"
    assert back["structuredContent"] == {"from": IBAN, "to": "[IBAN_1]"}
    kept = screen.result(result, restored=False)  # what the trace keeps: no value
    assert kept["content"][0]["text"] == "moved [IBAN_1] to [IBAN_1]"
    assert [f.path for f in screen.screening.findings] == [
        "result.content[0].text~2",
        "result.structuredContent.to",
    ]


def test_binary_content_is_unscanned_and_blocked_where_the_policy_says() -> None:
    rules = PersonalDataRules(((Detector.IBAN, Action.BLOCK),), unscanned=Unscanned.BLOCK)
    result = {"content": [{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                          {"type": "resource", "resource": {"uri": "x:y", "blob": "AAAA"}}]}  # fmt: skip
    screen = ResultScreen(None)
    screen.run(result, rules, "p")
    assert screen.screening.unscanned == ["result.content[0].data",
                                          "result.content[1].resource.blob"]  # fmt: skip
    assert screen.screening.refusal is not None


def test_meta_is_neither_screened_nor_rewritten() -> None:
    result = {"content": [], "_meta": {"note": f"see {IBAN}"}}
    screen = ResultScreen(None)
    screen.run(result, MASK, "p")
    assert screen.screening.findings == [] and screen.result(result) == result


def test_both_screenings_in_one_account() -> None:
    sent = screen_arguments({"iban": IBAN}, MASK, "p")
    masked_arguments({"iban": IBAN}, sent)
    account = combined(sent, None)
    assert account["masked"] == 1 and account["restricted"] is False
    assert account["findings"] == [
        {"detector": "iban", "path": "arguments.iban", "count": 1, "action": "mask"}
    ]
