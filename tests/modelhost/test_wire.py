"""The model host's frames and its one-line start faults: pure, no process."""

from __future__ import annotations

import asyncio
import signal
import struct
from typing import Any

import pytest

from llmeu.modelhost.start_check import describe_fault
from llmeu.modelhost.wire import MAX_FRAME_BYTES, FrameError, encode, read_frame


async def _read(data: bytes) -> dict[str, Any] | None:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return await read_frame(reader)


@pytest.mark.parametrize(
    "message",
    [
        {"op": "ping"},
        {"op": "generate", "messages": [{"role": "user", "content": "é ✓"}], "grammar": None},
        {"ev": "embeddings", "vectors": [[0.25, -1.0]], "tokens": 3},
    ],
    ids=["ping", "generate", "embeddings"],
)
async def test_a_frame_reads_back_as_written(message: dict[str, Any]) -> None:
    assert await _read(encode(message)) == message


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (encode({"op": "ping"})[:-1], "inside a frame"),
        (b"\x00\x00", "inside a frame"),
        (struct.pack(">I", MAX_FRAME_BYTES + 1), "at most"),
        (struct.pack(">I", 1) + b"\x01", "not a frame"),
    ],
    ids=["cut-body", "cut-length", "too-long", "not-a-map"],
)
async def test_a_broken_frame_is_refused(data: bytes, error: str) -> None:
    with pytest.raises(FrameError, match=error):
        await _read(data)


async def test_a_close_between_frames_is_the_end() -> None:
    assert await _read(b"") is None


@pytest.mark.parametrize(
    ("returncode", "last_line", "says"),
    [
        (-signal.SIGSEGV, "", "crashed with SIGSEGV in its start check"),
        (-signal.SIGILL, "", "--no-binary llama-cpp-python"),
        (-signal.SIGKILL, "", "ended by SIGKILL at start"),
        (3, "ImportError: no llama_cpp", "could not start: ImportError: no llama_cpp"),
        (3, "", "could not start: exit status 3"),
    ],
    ids=["segv", "sigill", "killed", "import-error", "silent"],
)
def test_a_start_fault_is_one_line_naming_the_cause(
    returncode: int, last_line: str, says: str
) -> None:
    line = describe_fault(returncode, last_line)
    assert says in line and "\n" not in line
