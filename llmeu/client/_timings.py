"""Timings of one call, measured on the client's side of the wire.

The clock starts when the request is sent. "First content" is the first frame
that carries output (text, reasoning, a refusal or a tool-call fragment): not
the connection opening, not the 200 status line, not the role-only first
frame and not a metadata-only frame (finish, usage, routing block), because a
server that answers those at once would otherwise report a TTFT it does not
have.

TPOT (time per output token) is the time from the first to the last content
frame divided by the tokens after the first. The token count is the server's
`completion_tokens` when it reported usage; otherwise each content frame is
counted as one token (servers send one frame per token) and `tokens_estimated`
says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Timings:
    """Monotonic instants (seconds, same clock) and the durations derived from them.

    `started_at` is the wall-clock time of `request_start`, for display and logs.
    """

    started_at: float
    request_start: float
    first_content: float | None
    last_content: float | None
    end: float
    output_tokens: int | None
    tokens_estimated: bool

    @property
    def ttft(self) -> float | None:
        """Seconds from sending the request to the first content; `None` if none came."""
        if self.first_content is None:
            return None
        return self.first_content - self.request_start

    @property
    def total(self) -> float:
        return self.end - self.request_start

    @property
    def tpot(self) -> float | None:
        """Seconds per output token after the first; `None` with fewer than two tokens."""
        if self.first_content is None or self.last_content is None:
            return None
        if self.output_tokens is None or self.output_tokens < 2:
            return None
        return (self.last_content - self.first_content) / (self.output_tokens - 1)


class TimingRecorder:
    """Collects the instants of one call; `clock` must be monotonic."""

    __slots__ = ("_clock", "_content_frames", "_first", "_last", "_start", "_started_at")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._started_at = time.time()
        self._start = clock()
        self._first: float | None = None
        self._last: float | None = None
        self._content_frames = 0

    def content(self) -> None:
        """Call once for every frame that carried output."""
        now = self._clock()
        if self._first is None:
            self._first = now
        self._last = now
        self._content_frames += 1

    def finish(self, completion_tokens: int | None) -> Timings:
        """Close the measurement; `completion_tokens` is the server's count, if it sent one."""
        tokens = completion_tokens
        if tokens is None and self._content_frames:
            tokens = self._content_frames
        return Timings(
            started_at=self._started_at,
            request_start=self._start,
            first_content=self._first,
            last_content=self._last,
            end=self._clock(),
            output_tokens=tokens,
            tokens_estimated=completion_tokens is None,
        )
