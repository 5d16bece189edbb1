"""The test encoder of AWS event-stream frames against botocore's parser (what llmeu decodes
with): valid frames decode to the same headers and payload, split anywhere; a flipped byte
fails the CRC check."""

from __future__ import annotations

import json

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from tests.support import eventstream

FRAMES = [
    pytest.param(eventstream.event("messageStart", {"role": "assistant"}), id="messageStart"),
    pytest.param(
        eventstream.event(
            "contentBlockDelta", {"delta": {"text": "héllo ✓"}, "contentBlockIndex": 0}
        ),
        id="delta",
    ),
    pytest.param(eventstream.exception("throttlingException", "slow down"), id="exception"),
    pytest.param(eventstream.encode_message([], b""), id="empty"),
]


@pytest.mark.parametrize("frame", FRAMES)
def test_botocore_decodes_each_frame(frame: bytes) -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(frame)
    (message,) = list(buffer)
    assert message.prelude.total_length == len(frame)
    if message.payload:
        assert isinstance(json.loads(message.payload), dict)


def test_headers_and_payload_round_trip() -> None:
    frame = eventstream.event("contentBlockDelta", {"delta": {"text": "hi"},
                                                    "contentBlockIndex": 2})  # fmt: skip
    buffer = EventStreamBuffer()
    buffer.add_data(frame)
    (message,) = list(buffer)
    assert message.headers == {":event-type": "contentBlockDelta",
                               ":content-type": "application/json", ":message-type": "event"}  # fmt: skip
    body = json.loads(message.payload)
    assert body["delta"] == {"text": "hi"} and body["contentBlockIndex"] == 2


@pytest.mark.parametrize("size", [1, 3, 7, 16, 64])
def test_frames_split_at_any_byte_decode_in_order(size: int) -> None:
    frames = [
        eventstream.event("contentBlockDelta", {"delta": {"text": f"t{i}"}}) for i in range(5)
    ]
    data = b"".join(frames)
    buffer = EventStreamBuffer()
    texts = []
    for start in range(0, len(data), size):
        buffer.add_data(data[start : start + size])
        texts.extend(json.loads(m.payload)["delta"]["text"] for m in buffer)
    assert texts == [f"t{i}" for i in range(5)]


def test_a_flipped_byte_fails_the_crc() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(eventstream.corrupt(eventstream.event("messageStop", {"stopReason": "x"})))
    with pytest.raises(ChecksumMismatch):
        list(buffer)
