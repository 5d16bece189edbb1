"""The model host's framed protocol: a 4-byte big-endian length, then a msgpack map.

One connection carries one request and its answer, so closing it is how a
client cancels (the host stops generating before its next token); a
`cancel` frame on the same connection does the same without closing it.

Requests (the `op` key):

    ping                                   → pong {pid, restarts}
    count    {messages}                    → count {tokens}
    generate {messages | prompt_tokens, max_tokens, stop, sampling, seed, grammar}
                                           → start {prompt_tokens}, text {text}…,
                                             end {reason, tokens}
    embed    {texts}                       → embeddings {vectors, tokens}
    cancel                                 (on a generate's connection)

Any request may be answered with `error {kind, message}` instead; `kind` is
one of `ERROR_KINDS`.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import msgspec

MAX_FRAME_BYTES = 64 << 20
ERROR_KINDS = ("context", "grammar", "timeout", "memory", "failed", "invalid")

_LENGTH = struct.Struct(">I")
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(dict[str, Any])


class FrameError(Exception):
    """A frame that is not the protocol's: too long or not a msgpack map."""


def encode(message: dict[str, Any]) -> bytes:
    body = _encoder.encode(message)
    return _LENGTH.pack(len(body)) + body


def decode(body: bytes) -> dict[str, Any]:
    try:
        return _decoder.decode(body)
    except msgspec.DecodeError as error:
        raise FrameError(f"not a frame: {error}") from None


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next frame; None when the other side closed the connection between frames."""
    try:
        head = await reader.readexactly(_LENGTH.size)
    except asyncio.IncompleteReadError as error:
        if error.partial:
            raise FrameError("the connection closed inside a frame") from None
        return None
    (length,) = _LENGTH.unpack(head)
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {length} bytes (at most {MAX_FRAME_BYTES})")
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise FrameError("the connection closed inside a frame") from None
    return decode(body)


def write_frame(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    writer.write(encode(message))
