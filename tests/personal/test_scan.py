"""Screening a chat request: what blocks, what restricts, what is masked, and failing closed."""

from __future__ import annotations

import json
from collections.abc import Container

import msgspec
import pytest

from llmeu.calls.request import ChatRequest
from llmeu.errors import PermissionDenied, ServiceUnavailable
from llmeu.personal import scan
from llmeu.personal.chat_text import chat_parts, rewritten
from llmeu.personal.locate import Found, locate
from llmeu.personal.rules import Action, Detector, OnError, PersonalDataRules, RestrictTo, Unscanned
from llmeu.personal.scan import screen
from tests.personal.identifiers import valid_identifiers

BSN = valid_identifiers(Detector.NL_BSN, 1)[0]
PESEL = valid_identifiers(Detector.PL_PESEL, 1)[0]
IBAN = "NL91ABNA0417164300"


def chat(*messages: dict[str, object]) -> ChatRequest:
    return msgspec.json.decode(
        json.dumps({"model": "m", "messages": list(messages)}), type=ChatRequest
    )


def rules(**actions: Action) -> PersonalDataRules:
    return PersonalDataRules(
        actions=tuple((Detector(d), a) for d, a in actions.items()),
        restrict=RestrictTo(allow_classes=frozenset({"on_premise"})),
    )


CONVERSATION = chat(
    {"role": "system", "content": "You are a bank clerk."},
    {"role": "user", "content": [
        {"type": "text", "text": f"My BSN is {BSN[:4]}"},
        {"type": "text", "text": f"and my IBAN is {IBAN}."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]},
    {"role": "assistant", "tool_calls": [{"type": "function", "id": "c1", "function": {
        "name": "lookup", "arguments": json.dumps({"bsn": BSN, "pesel": PESEL})}}]},
    {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"iban": IBAN, "ok": True})},
)  # fmt: skip


def test_paths_name_every_text_part_tool_call_and_result() -> None:
    parts, unscanned = chat_parts(CONVERSATION)
    assert [path for path, _ in parts] == [
        "messages[0].content",
        "messages[1].content[0].text",
        "messages[1].content[1].text",
        "messages[2].tool_calls[0].id",
        "messages[2].tool_calls[0].function.name",
        "messages[2].tool_calls[0].function.arguments",
        "messages[3].content",
        "messages[3].tool_call_id",
    ]
    assert unscanned == ["messages[1].content[2]"]


def test_block_names_detector_and_path_never_the_value() -> None:
    parts, unscanned = chat_parts(CONVERSATION)
    screening = screen(parts, unscanned, rules(pl_pesel=Action.BLOCK), "eu-strict")
    refusal = screening.refusal
    assert isinstance(refusal, PermissionDenied) and refusal.status == 403
    assert refusal.code == "personal_data_detected"
    assert refusal.param == "messages[2].tool_calls[0].function.arguments"
    assert "pl_pesel" in refusal.message and PESEL not in refusal.message
    recorded = json.dumps(screening.record())
    assert PESEL not in recorded and BSN not in recorded
    assert screening.record()["findings"] == [
        {"detector": "pl_pesel", "path": "messages[2].tool_calls[0].function.arguments",
         "count": 1, "action": "block"}
    ]  # fmt: skip


def test_a_part_ending_in_a_piece_of_a_value_joins_only_what_follows_it() -> None:
    """`BSN[:4]` ends one part and the next begins with a word: no BSN across them."""
    parts, unscanned = chat_parts(CONVERSATION)
    screening = screen(parts, unscanned, rules(nl_bsn=Action.ALLOW), "p")
    assert [f.path for f in screening.findings] == ["messages[2].tool_calls[0].function.arguments"]


def test_a_value_split_across_two_messages_is_found_and_masked_whole() -> None:
    split = chat(
        {"role": "user", "content": f"pay to {IBAN[:8]}"},
        {"role": "user", "content": f"{IBAN[8:]} today"},
    )
    parts, unscanned = chat_parts(split)
    blocked = screen(parts, unscanned, rules(iban=Action.BLOCK), "p")
    assert blocked.refusal is not None and blocked.refusal.param == "messages[0].content"
    assert blocked.record()["findings"] == [
        {"detector": "iban", "path": "messages[0].content", "count": 1, "action": "block"}
    ]
    masking = screen(parts, unscanned, rules(iban=Action.MASK), "p")
    masked = rewritten(split, masking.masked)
    assert [m.content for m in masked.messages] == ["pay to [IBAN_1]", " today"]
    assert masking.masking is not None and masking.masking.restore("[IBAN_1]") == IBAN
    assert masking.record()["masked"] == 1


def test_restrict_sets_the_flag_and_allow_only_counts() -> None:
    parts, unscanned = chat_parts(CONVERSATION)
    screening = screen(parts, unscanned, rules(iban=Action.RESTRICT, nl_bsn=Action.ALLOW), "p")
    assert screening.refusal is None and screening.restrict
    assert sorted((f.detector.value, f.count) for f in screening.findings) == [
        ("iban", 1), ("iban", 1), ("nl_bsn", 1)
    ]  # fmt: skip


def test_mask_rewrites_every_part_and_the_upstream_request_has_no_value() -> None:
    parts, unscanned = chat_parts(CONVERSATION)
    screening = screen(
        parts, unscanned, rules(iban=Action.MASK, nl_bsn=Action.MASK, pl_pesel=Action.MASK), "p"
    )
    masked = msgspec.json.encode(rewritten(CONVERSATION, screening.masked)).decode()
    for value in (IBAN, BSN, PESEL):
        assert value not in masked
    assert "[IBAN_1]" in masked and "[NL_BSN_1]" in masked and "[PL_PESEL_1]" in masked
    assert screening.masking is not None
    assert screening.masking.restore(masked) == msgspec.json.encode(CONVERSATION).decode()


def test_unscanned_parts_block_when_the_policy_says_so() -> None:
    parts, unscanned = chat_parts(CONVERSATION)
    strict = PersonalDataRules(actions=(), unscanned=Unscanned.BLOCK)
    refusal = screen(parts, unscanned, strict, "p").refusal
    assert refusal is not None and refusal.code == "personal_data_unscanned"
    assert refusal.param == "messages[1].content[2]"
    assert screen(parts, unscanned, PersonalDataRules(actions=()), "p").refusal is None


def test_a_prompt_over_the_scan_bound_is_blocked() -> None:
    bounded = PersonalDataRules(actions=((Detector.EMAIL, Action.MASK),), max_scan_chars=100)
    refusal = screen([("messages[0].content", "x" * 101)], [], bounded, "p").refusal
    assert isinstance(refusal, PermissionDenied) and refusal.code == "personal_data_unscannable"
    assert screen([("messages[0].content", "x" * 100)], [], bounded, "p").refusal is None


def test_a_detector_error_fails_closed_unless_the_policy_opens_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(
        texts: list[str], detectors: frozenset[Detector], carrying_json: Container[int] = ()
    ) -> list[object]:
        raise RuntimeError("validator bug")

    monkeypatch.setattr(scan, "locate", broken)
    closed = rules(email=Action.MASK)
    refusal = screen([("messages[0].content", "a@b.eu")], [], closed, "p").refusal
    assert isinstance(refusal, ServiceUnavailable) and refusal.status == 503
    assert refusal.code == "personal_data_scan_failed" and "a@b.eu" not in refusal.message
    assert refusal.param == "messages[0].content"
    opened = PersonalDataRules(actions=closed.actions, on_error=OnError.OPEN)
    screening = screen([("messages[0].content", "a@b.eu")], [], opened, "p")
    assert screening.refusal is None and screening.record()["scan_failed"] is True


def test_a_failure_on_one_part_keeps_the_hits_of_the_others_when_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fails_on_x(
        texts: list[str], detectors: frozenset[Detector], carrying_json: Container[int] = ()
    ) -> list[Found]:
        if any("x" in text for text in texts):
            raise RuntimeError("validator bug")
        return locate(texts, detectors, carrying_json)

    monkeypatch.setattr(scan, "locate", fails_on_x)
    parts = [("messages[0].content", "a@b.eu"), ("messages[1].content", "x c@d.eu")]
    opened = PersonalDataRules(actions=((Detector.EMAIL, Action.BLOCK),), on_error=OnError.OPEN)
    screening = screen(parts, [], opened, "p")
    assert [f.path for f in screening.findings] == ["messages[0].content"]
    assert screening.scan_failed and screening.refusal is not None  # the email still blocks
    closed = PersonalDataRules(actions=((Detector.EMAIL, Action.ALLOW),))
    refusal = screen(parts, [], closed, "p").refusal
    assert refusal is not None and refusal.param == "messages[1].content"
