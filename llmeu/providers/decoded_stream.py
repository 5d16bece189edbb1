"""A streamed answer read from an upstream body that a kind decodes into deltas.

What every native streaming kind shares: the first-token, idle and total
timeouts of the endpoint, the call's hang-up bound to the connection's abort
(so a client that goes away closes the upstream at once), and the rule that a
stream is complete only when its body ended *and* the kind saw the upstream's
own end of answer. A kind implements `feed` (bytes in, deltas out; sets
`finish_reason` and `usage` as their events arrive) and `at_end` (raises when
the body ended before the answer did).
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque
from collections.abc import Iterable

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Delta
from llmeu.errors import UpstreamError
from llmeu.providers.base import ChatStream
from llmeu.providers.transport import Response
from llmeu.providers.upstream_http import read_stream_chunk
from llmeu.routing.catalog import Endpoint


class DecodedStream(ChatStream):
    def __init__(self, endpoint: Endpoint, response: Response, started: float, hangup: Hangup):
        self._endpoint = endpoint
        self._response = response
        self._deadline = started + endpoint.timeouts.total
        self._hangup = hangup
        self._pending: deque[Delta] = deque()
        self._first = True
        self._closed = False
        hangup.bind(response.abort)

    @abstractmethod
    def feed(self, chunk: bytes) -> Iterable[Delta]:
        """The deltas carried by the next piece of the body; raises `UpstreamError` for an
        error event or a malformed frame."""

    @abstractmethod
    def at_end(self) -> Iterable[Delta]:
        """The body ended: what is left, or `UpstreamError` when the answer had not."""

    async def next_delta(self) -> Delta | None:
        while not self._pending:
            if self._closed:
                return None
            chunk = await self._read()
            try:
                if chunk is None:
                    self._pending.extend(self.at_end())
                    self._hangup.unbind(self._response.abort)
                    self._closed = True
                    self._response.release()
                else:
                    self._pending.extend(self.feed(chunk))
            except UpstreamError:
                await self.aclose()
                raise
        return self._pending.popleft()

    def buffered_delta(self) -> Delta | None:
        while not self._pending:
            if self._closed:
                return None
            chunk = self._response.read_buffered()
            if chunk is None:
                return None
            try:
                self._pending.extend(self.feed(chunk))
            except UpstreamError:
                self._abort()
                raise
        return self._pending.popleft()

    async def _read(self) -> bytes | None:
        chunk = await read_stream_chunk(
            self._response, self._endpoint, first=self._first, deadline=self._deadline,
            close=self.aclose,
        )  # fmt: skip
        self._first = False
        return chunk

    def _abort(self) -> None:
        self._hangup.unbind(self._response.abort)
        if not self._closed:
            self._closed = True
            self._response.abort()

    async def aclose(self) -> None:
        self._abort()
