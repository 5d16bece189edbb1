"""A kept answer's deltas replayed at once: the same frames and the same output as one by one."""

from __future__ import annotations

import pytest

from llmeu.api.call.caching import ReplayedStream
from llmeu.cache.entry import Streamed
from llmeu.calls.output import (
    Delta,
    StreamOutput,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)
from llmeu.protocol.chat_stream import ChatFrames
from llmeu.protocol.messages_stream import MessagesFrames

TEXT = [Delta(role="assistant", content=""), Delta(content="Hel"), Delta(content='lo "you"\n')]
REFUSAL = [Delta(content="I"), Delta(refusal="cannot"), Delta(refusal=" say")]
TOOLS = [
    Delta(content="calling"),
    Delta(tool_calls=[ToolCallDelta(index=0, id="call_1", type="function",
                                    function=ToolCallFunctionDelta(name="f", arguments='{"a"'))]),
    Delta(tool_calls=[ToolCallDelta(index=0, function=ToolCallFunctionDelta(arguments=":1}"))]),
]  # fmt: skip
SIGNED = [Delta(reasoning_content="hm"), Delta(reasoning_signature="sig"), Delta(content="ok")]
ANSWERS = {"text": TEXT, "refusal": REFUSAL, "tools": TOOLS, "signed": SIGNED, "empty": []}


def _chat(legacy: bool) -> ChatFrames:
    return ChatFrames("chatcmpl-1", 1700000000, "m", include_usage=True, legacy_functions=legacy)


@pytest.mark.parametrize("deltas", ANSWERS.values(), ids=list(ANSWERS))
@pytest.mark.parametrize("legacy", [False, True], ids=["chat", "legacy-functions"])
def test_chat_frames_of_deltas_at_once_are_those_one_by_one(
    deltas: list[Delta], legacy: bool
) -> None:
    one_by_one = _chat(legacy)
    assert _chat(legacy).deltas(deltas) == b"".join(one_by_one.delta(d) for d in deltas)


@pytest.mark.parametrize("deltas", ANSWERS.values(), ids=list(ANSWERS))
def test_messages_events_of_deltas_at_once_are_those_one_by_one(deltas: list[Delta]) -> None:
    at_once, one_by_one = MessagesFrames("msg_1", "m", 7), MessagesFrames("msg_1", "m", 7)
    assert at_once.start() == one_by_one.start()
    assert at_once.deltas(deltas) == b"".join(one_by_one.delta(d) for d in deltas)
    after = Delta(content="more")  # the state each left behind: the same
    assert at_once.delta(after) == one_by_one.delta(after)


@pytest.mark.parametrize("deltas", ANSWERS.values(), ids=list(ANSWERS))
def test_the_output_of_deltas_at_once_is_that_of_one_by_one(deltas: list[Delta]) -> None:
    at_once, one_by_one = StreamOutput(), StreamOutput()
    at_once.add_all(deltas)
    for delta in deltas:
        one_by_one.add(delta)
    assert at_once.deltas == one_by_one.deltas == len(deltas)
    assert at_once.stored() == one_by_one.stored()
    assert at_once.tool_calls() == one_by_one.tool_calls()
    assert at_once.estimated_tokens() == one_by_one.estimated_tokens()


async def test_the_rest_of_a_replayed_stream_ends_it() -> None:
    usage = Usage(prompt_tokens=2, completion_tokens=3, total_tokens=5)
    stream = ReplayedStream(Streamed(list(TEXT), "length", usage, 2))
    assert await stream.next_delta() == TEXT[0]
    assert stream.finish_reason is None
    assert stream.rest() == TEXT[1:]
    assert (stream.finish_reason, stream.usage) == ("length", usage)
    assert await stream.next_delta() is None
