"""An entry keeps the answer as the upstream produced it, and gives it back in each ask's shape."""

from __future__ import annotations

import pytest
from msgspec import UNSET

from llmeu.cache.entry import (
    Embedded,
    Entry,
    Streamed,
    completion_of,
    decode_entry,
    deltas_of,
    embeddings_of,
    encode_entry,
    streamed_of,
    whole_of,
)
from llmeu.calls.output import AssistantOutput, Completion, Delta, Embeddings, Usage
from llmeu.calls.tools import CustomCall, CustomToolCall, FunctionCall, ToolCall

USAGE = Usage(12, 5, 17)


@pytest.mark.parametrize(
    "text",
    ["", "one", "  leading and trailing  ", "two\n\nlines\tand tabs", "   ", "[IBAN_1] kept"],
    ids=["empty", "one-word", "spaces", "newlines", "only-spaces", "placeholder"],
)
def test_a_whole_answer_streams_in_word_sized_pieces_that_join_back(text: str) -> None:
    completion = Completion(AssistantOutput("assistant", text or None), "stop", USAGE)
    kept = whole_of(completion)
    assert completion_of(kept) == completion  # a whole answer is given back as it came
    streamed = streamed_of(kept)
    pieces = [d.content for d in streamed.deltas]
    assert "".join(p for p in pieces if isinstance(p, str)) == text
    assert all(isinstance(p, str) and p for p in pieces)
    assert len(pieces) == len(text.split()) or text.isspace()
    again = completion_of(streamed)
    assert again.message.content == (text or None)
    assert (again.finish_reason, again.usage) == ("stop", USAGE)


def test_tool_calls_and_refusals_come_back_whole() -> None:
    calls: list[ToolCall | CustomToolCall] = [
        ToolCall(f"call_{i}", FunctionCall(f"f{i}", '{"x": 1}')) for i in (0, 1)
    ]
    calls.append(CustomToolCall("call_2", CustomCall("apply_patch", "*** Begin Patch\n")))
    message = AssistantOutput("assistant", None, "no", calls)
    again = completion_of(streamed_of(whole_of(Completion(message, "tool_calls", None))))
    assert again.message == message
    assert again.finish_reason == "tool_calls" and again.usage is None


def test_an_entry_reads_back_as_it_was_kept() -> None:
    deltas = [Delta(content="a"), Delta(reasoning_content="why", reasoning_signature="sig"),
              Delta(tool_calls=UNSET, refusal="x")]  # fmt: skip
    usage = Usage(3, 4, 7, cache_read_input_tokens=2)
    entries = [
        Entry("trc_1", "ep", Streamed(deltas, "length", usage, 3), 0.25),
        Entry("trc_2", "ep", Embedded([[0.5, -1.0]], None)),
        Entry("trc_3", "ep", whole_of(Completion(AssistantOutput("assistant", "hi"), None, USAGE))),
    ]
    for entry in entries:
        assert decode_entry(encode_entry(entry)) == entry
    assert deltas_of(Streamed(deltas, "stop")).deltas == deltas
    assert embeddings_of(Embedded([[1.0]], 2)) == Embeddings([[1.0]], 2)
