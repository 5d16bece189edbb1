"""Properties: how a stream is cut into reads changes nothing; random input breaks nothing.

The incremental decoder is compared with a whole-input transcription of the
WHATWG algorithm: any bytes, any cut into reads (down to one byte per read),
the same events. A generated chat stream, cut anywhere, gives the same
`ChatResult`, and the one its frames describe. Random bytes and random JSON
raise nothing but the documented `IncompleteStreamError` family.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llmeu.client import (
    ChatResult,
    ChatStreamAssembler,
    IncompleteStreamError,
    SSEDecoder,
    StreamError,
    ToolCall,
)

Event = tuple[str, str, str, int | None]


def reference_decode(raw: bytes) -> list[Event]:
    """The WHATWG event-stream algorithm over the whole input at once."""
    text = raw.decode("utf-8", "replace").removeprefix("\ufeff")
    *lines, _unterminated = re.split(r"\r\n|\r|\n", text)
    events: list[Event] = []
    data: list[str] = []
    event_type, last_id, retry = "", "", None
    for line in lines:
        if not line:
            if data:
                events.append((event_type or "message", "\n".join(data), last_id, retry))
            data, event_type = [], ""
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event_type = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and re.fullmatch(r"[0-9]+", value):
            retry = int(value)
    return events


def cut(raw: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted({p for p in points if 0 < p < len(raw)}), len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds)]


def decode_in_reads(reads: list[bytes]) -> list[Event]:
    decoder = SSEDecoder()
    events = [e for read in reads for e in decoder.feed(read)] + decoder.close()
    return [(e.event, e.data, e.id, e.retry) for e in events]


PIECES = st.sampled_from(
    [
        b"data",
        b"data:",
        b"data: ",
        b"event: ping",
        b"id: 7",
        b"id: a\x00",
        b"id",
        b"retry: 250",
        b"retry: x",
        b": comment",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b" ",
        b"\xef\xbb\xbf",
        b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80",
        b"\xe2",
        b"\x82",
        b"\xff",
        b"\x00",
        b"[DONE]",
        b'{"a": 1}',
    ]
)
SSE_BYTES = st.lists(PIECES | st.binary(max_size=3), max_size=40).map(b"".join)


# No deadline: on a loaded CI machine one byte per read can outlast hypothesis' 200 ms.
@settings(deadline=None)
@given(raw=SSE_BYTES, points=st.lists(st.integers(0, 400), max_size=30))
def test_decoder_matches_the_whole_input_algorithm(raw: bytes, points: list[int]) -> None:
    assert decode_in_reads(cut(raw, points)) == reference_decode(raw)


@settings(deadline=None)
@given(raw=SSE_BYTES)
def test_one_byte_per_read_matches_one_read(raw: bytes) -> None:
    one_read = decode_in_reads([raw])
    assert decode_in_reads([raw[i : i + 1] for i in range(len(raw))]) == one_read
    assert one_read == reference_decode(raw)


TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)


@st.composite
def chat_streams(draw: st.DrawFn) -> tuple[bytes, ChatResult, type[Exception] | None]:
    """A chat stream on the wire, with the result its frames describe."""
    frames: list[dict[str, Any] | str] = [{"choices": [{"index": 0, "delta": {"role": "x"}}]}]
    content: list[str] = []
    arguments: dict[int, list[str]] = {}
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            piece = draw(TEXT)
            content.append(piece)
            frames.append({"choices": [{"index": 0, "delta": {"content": piece}}]})
        else:
            index, piece = draw(st.integers(0, 1)), draw(TEXT)
            arguments.setdefault(index, []).append(piece)
            call = {"index": index, "function": {"arguments": piece}}
            frames.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    frames.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    ending = draw(st.sampled_from(["done", "error", "cut"]))
    error: type[Exception] | None = None
    if ending == "done":
        frames.append("[DONE]")
    elif ending == "error":
        frames.append({"error": {"message": draw(TEXT)}})
        error = StreamError
    else:
        error = IncompleteStreamError
    expected = ChatResult(
        content="".join(content),
        tool_calls=[
            ToolCall(i, None, "function", "", "".join(arguments[i])) for i in sorted(arguments)
        ],
        finish_reason="stop",
        complete=ending == "done",
    )
    newline = st.sampled_from(["\n", "\r", "\r\n"])
    # Two line endings that do not merge into one CRLF.
    blank = st.sampled_from(["\n\n", "\r\r", "\r\n\r\n", "\n\r\n", "\r\r\n", "\n\r"])
    wire = "\ufeff" if draw(st.booleans()) else ""
    for payload in frames:
        if draw(st.booleans()):
            wire += ": keep-alive" + draw(newline)
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        wire += "data: " + data + draw(blank)
    return wire.encode(), expected, error


def assemble(reads: list[bytes]) -> tuple[type[Exception] | None, ChatResult]:
    decoder, assembler = SSEDecoder(), ChatStreamAssembler()
    for read in reads:
        for event in decoder.feed(read):
            assembler.add(event)
    for event in decoder.close():
        assembler.add(event)
    try:
        return None, assembler.finish()
    except IncompleteStreamError as exc:
        return type(exc), exc.result


def without_error(result: ChatResult) -> ChatResult:
    return ChatResult(**{**_fields(result), "error": None})


def _fields(result: ChatResult) -> dict[str, Any]:
    return {name: getattr(result, name) for name in ChatResult.__dataclass_fields__}


@settings(max_examples=200, deadline=None)
@given(stream=chat_streams(), points=st.lists(st.integers(0, 2000), max_size=40))
def test_any_rechunking_gives_the_same_result(
    stream: tuple[bytes, ChatResult, type[Exception] | None], points: list[int]
) -> None:
    raw, expected, error = stream
    whole = assemble([raw])
    assert whole[0] is error
    assert without_error(whole[1]) == expected
    assert assemble(cut(raw, points)) == whole
    assert assemble([raw[i : i + 1] for i in range(len(raw))]) == whole


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "choices",
                    "delta",
                    "index",
                    "content",
                    "tool_calls",
                    "function",
                    "arguments",
                    "name",
                    "id",
                    "finish_reason",
                    "usage",
                    "prompt_tokens",
                    "completion_tokens",
                    "llmeu",
                    "cost_estimate",
                    "amount",
                    "error",
                    "message",
                    "code",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


def frames_of(payloads: list[Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=300) | SSE_BYTES | st.lists(JSON, max_size=6).map(frames_of))
def test_random_input_raises_only_documented_errors(raw: bytes) -> None:
    decoder, assembler = SSEDecoder(), ChatStreamAssembler()
    for event in decoder.feed(raw) + decoder.close():
        assembler.add(event)
    # Only the documented family may escape; anything else fails the test.
    raised: IncompleteStreamError | None = None
    try:
        result = assembler.finish()
    except IncompleteStreamError as exc:
        raised, result = exc, exc.result
    assert result.complete is (raised is None)
