"""The event-stream decoder against the WHATWG parsing rules, one rule per row.

Every row is fed twice: as one read, and one byte per read (the hardest
re-chunking; the hypothesis tests cover the ones in between).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmeu.client import ServerSentEvent, SSEDecoder

Event = tuple[str, str, str]


def decode(chunks: list[bytes]) -> tuple[list[Event], int | None]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return [(e.event, e.data, e.id) for e in events], decoder.retry


def bytewise(chunks: list[bytes]) -> list[bytes]:
    joined = b"".join(chunks)
    return [joined[i : i + 1] for i in range(len(joined))]


def msg(data: str, id: str = "") -> Event:
    return ("message", data, id)


CASES = [
    # line endings
    pytest.param([b"data: a\n\n"], [msg("a")], None, id="lf"),
    pytest.param([b"data: a\r\n\r\n"], [msg("a")], None, id="crlf"),
    pytest.param([b"data: a\r\r"], [msg("a")], None, id="cr"),
    pytest.param([b"data: a\r\ndata: b\rdata: c\n\n"], [msg("a\nb\nc")], None, id="mixed-endings"),
    pytest.param(
        [b"data: a\r", b"\ndata: b\r\n\r\n"], [msg("a\nb")], None, id="crlf-split-across-reads"
    ),
    pytest.param([b"data: a\r", b"\r"], [msg("a")], None, id="cr-then-cr-across-reads"),
    pytest.param([b"data: a\n\r\n"], [msg("a")], None, id="lf-then-crlf"),
    # byte order mark
    pytest.param([b"\xef\xbb\xbfdata: a\n\n"], [msg("a")], None, id="bom-dropped"),
    pytest.param([b"\xef", b"\xbb", b"\xbfdata: a\n\n"], [msg("a")], None, id="bom-split"),
    pytest.param(
        [b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n"],
        [msg("b")],
        None,
        id="only-one-bom-dropped",
    ),
    pytest.param(
        [b"data: a\n\n\xef\xbb\xbfdata: b\n\n"], [msg("a")], None, id="bom-later-is-part-of-a-name"
    ),
    # comments and fields
    pytest.param([b": keep-alive\ndata: a\n\n"], [msg("a")], None, id="comment-line"),
    pytest.param([b": ping\n\n"], [], None, id="comment-only-block"),
    pytest.param([b"data:a\n\n"], [msg("a")], None, id="no-space-after-colon"),
    pytest.param([b"data:  a\n\n"], [msg(" a")], None, id="only-one-space-stripped"),
    pytest.param([b"data:\ta\n\n"], [msg("\ta")], None, id="tab-not-stripped"),
    pytest.param([b"data: a: b\n\n"], [msg("a: b")], None, id="colon-in-value"),
    pytest.param([b"data\n\n"], [msg("")], None, id="field-without-colon"),
    pytest.param([b"data\ndata\n\n"], [msg("\n")], None, id="two-empty-data-lines"),
    pytest.param([b"data:\n\n"], [msg("")], None, id="empty-data-dispatches"),
    pytest.param([b"data: a\ndata: b\n\n"], [msg("a\nb")], None, id="data-lines-joined"),
    pytest.param([b"Data: a\n\n"], [], None, id="field-names-case-sensitive"),
    pytest.param([b" data: a\n\n"], [], None, id="leading-space-is-part-of-name"),
    pytest.param([b"foo: bar\ndata: a\n\n"], [msg("a")], None, id="unknown-field-ignored"),
    pytest.param([b"data: a\x00b\n\n"], [msg("a\x00b")], None, id="nul-in-data-kept"),
    # event type
    pytest.param([b"event: ping\ndata: x\n\n"], [("ping", "x", "")], None, id="event-type"),
    pytest.param([b"event:\ndata: x\n\n"], [msg("x")], None, id="empty-event-type-is-message"),
    pytest.param(
        [b"event: e\ndata: 1\n\ndata: 2\n\n"],
        [("e", "1", ""), msg("2")],
        None,
        id="event-type-reset-after-dispatch",
    ),
    pytest.param(
        [b"event: e\n\ndata: 2\n\n"], [msg("2")], None, id="event-type-reset-without-data"
    ),
    pytest.param([b"event: e \ndata: x\n\n"], [("e ", "x", "")], None, id="trailing-space-kept"),
    # last event id
    pytest.param(
        [b"id: 1\ndata: a\n\ndata: b\n\n"], [msg("a", "1"), msg("b", "1")], None, id="id-persists"
    ),
    pytest.param([b"id: 7\n\ndata: a\n\n"], [msg("a", "7")], None, id="id-alone-no-empty-event"),
    pytest.param(
        [b"id: 1\n\nid: 2\x003\ndata: a\n\n"], [msg("a", "1")], None, id="id-with-nul-ignored"
    ),
    pytest.param(
        [b"id: 1\ndata: a\n\nid\ndata: b\n\n"],
        [msg("a", "1"), msg("b", "")],
        None,
        id="empty-id-resets",
    ),
    # retry
    pytest.param([b"retry: 1500\n\n"], [], 1500, id="retry-digits"),
    pytest.param([b"retry: 1500\nretry: 20\n\n"], [], 20, id="retry-last-wins"),
    pytest.param([b"retry: 1500\nretry: x\n\n"], [], 1500, id="retry-invalid-keeps-previous"),
    pytest.param([b"retry: 15a\n\n"], [], None, id="retry-not-all-digits"),
    pytest.param([b"retry: -1\n\n"], [], None, id="retry-negative"),
    pytest.param([b"retry: 1.5\n\n"], [], None, id="retry-decimal"),
    pytest.param([b"retry:\n\n"], [], None, id="retry-empty"),
    pytest.param(["retry: \u0661\u0662\n\n".encode()], [], None, id="retry-non-ascii-digits"),
    # end of input
    pytest.param([b"data: a\n\ndata: b\n"], [msg("a")], None, id="unterminated-event-dropped"),
    pytest.param([b"data: a"], [], None, id="unterminated-line-dropped"),
    pytest.param([b"data: a\r"], [], None, id="cr-at-end-is-one-line-ending"),
    # UTF-8
    pytest.param([b"data: a\xffb\n\n"], [msg("a\ufffdb")], None, id="invalid-byte-replaced"),
    pytest.param(
        [b"data: \xed\xa0\x80\n\n"], [msg("\ufffd\ufffd\ufffd")], None, id="surrogate-replaced"
    ),
    pytest.param([b"data: \xe2\x82", b"\xac\n\n"], [msg("\u20ac")], None, id="split-3-byte-char"),
    pytest.param(
        [b"data: \xf0", b"\x9f", b"\x98", b"\x80\n\n"], [msg("\U0001f600")], None, id="split-emoji"
    ),
    pytest.param([b"data: \xe2\x82\n\n"], [msg("\ufffd")], None, id="truncated-char-replaced"),
    pytest.param([b"data: \xe2\x82"], [], None, id="truncated-char-at-end-no-error"),
]


@pytest.mark.parametrize(("chunks", "events", "retry"), CASES)
def test_whole_reads(chunks: list[bytes], events: list[Event], retry: int | None) -> None:
    assert decode(chunks) == (events, retry)


@pytest.mark.parametrize(("chunks", "events", "retry"), CASES)
def test_one_byte_per_read(chunks: list[bytes], events: list[Event], retry: int | None) -> None:
    assert decode(bytewise(chunks)) == (events, retry)


def test_event_carries_the_retry_in_force() -> None:
    [event] = SSEDecoder().feed(b"retry: 3000\ndata: a\n\n")
    assert event == ServerSentEvent(event="message", data="a", id="", retry=3000)


def test_events_come_out_as_soon_as_their_blank_line_arrives() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert [e.data for e in decoder.feed(b"\ndata: b")] == ["a"]
    assert decoder.feed(b"\n") == []
    assert [e.data for e in decoder.feed(b"\n")] == ["b"]


def test_json_helper_reads_the_data() -> None:
    [event] = SSEDecoder().feed(b'data: {"a": [1, 2]}\n\n')
    assert event.json() == {"a": [1, 2]}


LAST_EVENT_ID = [
    pytest.param(b"id: 1\ndata: a\n\n", "1", id="set-by-a-dispatched-event"),
    pytest.param(b"id: 3\n\n", "3", id="set-by-a-block-without-data"),
    pytest.param(b"id: 1\ndata: a\n\nid: 2\ndata: b\n", "1", id="not-by-an-unfinished-block"),
    pytest.param(b"id: 1\n\nid: 2\x00\n\n", "1", id="not-by-an-id-with-nul"),
]


@pytest.mark.parametrize(("raw", "expected"), LAST_EVENT_ID)
def test_last_event_id_is_the_one_a_reconnection_would_send(raw: bytes, expected: str) -> None:
    # WHATWG "dispatch the event", step 1: the source's last event ID string
    # takes the buffer's value at each blank line, data or not; never mid-block.
    decoder = SSEDecoder()
    decoder.feed(raw)
    decoder.close()
    assert decoder.last_event_id == expected


@pytest.mark.parametrize("chunks", [c.values[0] for c in CASES])
def test_one_event_per_read_decodes_as_the_line_rules_do(chunks: list[bytes]) -> None:
    """Each event of a case in a read of its own (the usual shape of an upstream stream,
    which the decoder reads on a shorter path), after a stream that set an id and a retry:
    the same events, ids, retry and last event id as one byte per read."""
    lead = b"id: 7\nretry: 900\n: comment\n\n"
    raw = b"".join(chunks)
    reads = [lead] + [part + b"\n\n" for part in raw.split(b"\n\n") if part]
    whole, bytewise_decoder = SSEDecoder(), SSEDecoder()
    fast = [e for read in reads for e in whole.feed(read)] + whole.close()
    slow = [e for read in bytewise(reads) for e in bytewise_decoder.feed(read)]
    slow += bytewise_decoder.close()
    assert fast == slow
    assert (whole.last_event_id, whole.retry) == (
        bytewise_decoder.last_event_id,
        bytewise_decoder.retry,
    )


def test_a_data_line_read_alone_keeps_the_id_in_force() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"id: 42\n\n")
    [event] = decoder.feed(b"data: {}\n\n")
    assert event == ServerSentEvent(event="message", data="{}", id="42", retry=None)
    assert decoder.last_event_id == "42"


@given(
    datas=st.lists(
        st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12), max_size=8
    ),
    per_read=st.integers(1, 4),
)
def test_data_events_several_to_a_read_decode_as_the_line_rules_do(
    datas: list[str], per_read: int
) -> None:
    """Reads of several `data: ` events each (an upstream's events, several to a read of
    the socket, which the decoder reads on a shorter path) after a stream that set an id
    and a retry: the same events, ids and retry as one byte per read."""
    events = [f"data: {d}\n\n".encode() for d in datas]
    reads = [b"id: 7\nretry: 900\n: comment\n\n"] + [
        b"".join(events[i : i + per_read]) for i in range(0, len(events), per_read)
    ]
    whole, bytewise_decoder = SSEDecoder(), SSEDecoder()
    fast = [e for read in reads for e in whole.feed(read)] + whole.close()
    slow = [e for read in bytewise(reads) for e in bytewise_decoder.feed(read)]
    slow += bytewise_decoder.close()
    assert fast == slow
    assert [e.data for e in fast] == datas
    assert (whole.last_event_id, whole.retry) == ("7", 900)
