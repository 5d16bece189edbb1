"""An encoder of AWS event-stream messages, written from the AWS specification for the tests.

    message := prelude headers payload message_crc
    prelude := total_length:u32 headers_length:u32 prelude_crc:u32
    header  := name_length:u8 name type:u8 value        (type 7: string, u16 length)

Lengths and CRCs are big-endian; `prelude_crc` is the CRC-32 of the first
8 bytes, `message_crc` the CRC-32 of everything before it. Bedrock's
ConverseStream sends one message per event (`:message-type` `event`, its
`:event-type`) or an exception (`:message-type` `exception`,
`:exception-type`), each with a JSON payload. The product decodes with
botocore's parser; `tests/providers/test_eventstream.py` checks this encoder
against that parser, so the fake Bedrock speaks what the parser takes.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

STRING = 7
CONTENT_TYPE = "application/vnd.amazon.eventstream"


def encode_message(headers: list[tuple[str, str]], payload: bytes) -> bytes:
    encoded = b"".join(
        struct.pack(">B", len(name)) + name + struct.pack(">BH", STRING, len(value)) + value
        for name, value in ((n.encode(), v.encode()) for n, v in headers)
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event(event_type: str, body: dict[str, Any]) -> bytes:
    """A ConverseStream event; Bedrock pads each payload with a `p` field (length hiding)."""
    payload = json.dumps({**body, "p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"[
        : 1 + len(event_type) % 40]}).encode()  # fmt: skip
    headers = [(":event-type", event_type), (":content-type", "application/json"),
               (":message-type", "event")]  # fmt: skip
    return encode_message(headers, payload)


def exception(exception_type: str, message: str) -> bytes:
    headers = [(":exception-type", exception_type), (":content-type", "application/json"),
               (":message-type", "exception")]  # fmt: skip
    return encode_message(headers, json.dumps({"message": message}).encode())


def corrupt(message: bytes) -> bytes:
    """The same message with one payload byte flipped: the message CRC no longer matches."""
    flipped = bytearray(message)
    flipped[-5] ^= 0x01
    return bytes(flipped)
