"""Server-sent events: frame encoding and an incremental decoder.

The decoder is pure (bytes in, events out, no I/O) and follows the WHATWG
event-stream parsing rules: UTF-8 with replacement of invalid bytes (a
character split across reads is kept whole), one leading BOM dropped, CRLF,
LF and CR line endings (a CRLF split across reads is one line ending), comment
lines, one space after the colon stripped, `data` lines joined with a line
feed, no event for a block without `data`, the unterminated last event dropped
at end of input, `retry` only when all ASCII digits, an `id` containing NUL
ignored. Both the gateway (reading upstream streams) and `llmeu.client` use it.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any, NamedTuple

DONE_DATA = "[DONE]"
DONE_FRAME = b"data: [DONE]\n\n"
_LINE_END = re.compile(r"\r\n|\r|\n")


def encode_frame(payload: bytes) -> bytes:
    """One `data:` frame around an already-encoded JSON payload (which holds no newline)."""
    return b"data: " + payload + b"\n\n"


class ServerSentEvent(NamedTuple):
    """One dispatched event. `id` is the last event ID in force, `""` when none was set.

    Immutable; a named tuple rather than a frozen dataclass because a stream
    makes one per token, and a tuple is made in a third of the time."""

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None

    def json(self) -> Any:
        return json.loads(self.data)


class SSEDecoder:
    """Incremental event-stream decoder: `feed()` each read, `close()` at end of input."""

    __slots__ = (
        "_buffer",
        "_data",
        "_decoder",
        "_event",
        "_last_id",
        "_plain",
        "_retry",
        "_skip_lf",
        "_source_id",
        "_started",
    )

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._started = False
        self._skip_lf = False
        self._data: list[str] = []
        self._event = ""
        self._last_id = ""
        self._source_id = ""
        self._retry: int | None = None
        self._plain = True  # no part of a UTF-8 character is held from the last read

    @property
    def retry(self) -> int | None:
        """The last valid `retry:` value in milliseconds, or None."""
        return self._retry

    @property
    def last_event_id(self) -> str:
        """The ID a reconnection sends: the buffer's value at the last blank line."""
        return self._source_id

    @property
    def pending(self) -> bool:
        """Whether part of an event has arrived and waits for the rest (a line or a block)."""
        return bool(self._buffer or self._data or self._event)

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        """Decode one read; returns the events it completed, in order."""
        if not (self._plain and data.isascii()):
            text = self._decoder.decode(data)
            self._plain = not self._decoder.getstate()[0]
            return self._consume(text)
        text = data.decode("ascii")
        # The usual reads of an upstream stream: `data: ...` lines, each with the blank line
        # ending its event, nothing pending. The same events the line rules give.
        if (
            text.endswith("\n\n")
            and self._started
            and "\r" not in text
            and not (self._skip_lf or self._buffer or self._data or self._event)
        ):
            events = self._data_events(text)
            if events is not None:
                return events
        return self._consume(text)

    def _data_events(self, text: str) -> list[ServerSentEvent] | None:
        """`text` as events of one `data: ` line each (what the line rules make of it), or
        None when it holds anything else: another field, a comment, a line of its own."""
        blocks = text[:-2].split("\n\n")
        for block in blocks:
            if not block.startswith("data: ") or "\n" in block:
                return None
        self._source_id = last_id = self._last_id
        retry = self._retry
        return [ServerSentEvent("message", block[6:], last_id, retry) for block in blocks]

    def close(self) -> list[ServerSentEvent]:
        """End of input: flush the UTF-8 decoder; an unterminated event is dropped."""
        events = self._consume(self._decoder.decode(b"", final=True))
        self._buffer = ""
        self._data = []
        self._event = ""
        return events

    def _consume(self, text: str) -> list[ServerSentEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
        if self._skip_lf and text:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        buf = self._buffer + text if self._buffer else text
        events: list[ServerSentEvent] = []
        if "\r" not in buf:  # the common case (LF only): split without the regex
            lines = buf.split("\n")
            self._buffer = lines.pop()
            for line in lines:
                event = self._process_line(line)
                if event is not None:
                    events.append(event)
            return events
        pos = 0
        end = len(buf)
        search = _LINE_END.search
        while pos < end:
            match = search(buf, pos)
            if match is None:
                break
            line = buf[pos : match.start()]
            pos = match.end()
            if pos == end and buf[end - 1] == "\r":
                self._skip_lf = True
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        self._buffer = buf[pos:]
        return events

    def _process_line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None
        field, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self._last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        self._source_id = self._last_id
        if not self._data:
            self._event = ""
            return None
        event = ServerSentEvent(
            self._event or "message", "\n".join(self._data), self._last_id, self._retry
        )
        self._data = []
        self._event = ""
        return event
