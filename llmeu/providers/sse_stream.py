"""A streamed answer read as server-sent events: what the OpenAI, Anthropic and native
Responses streams share.

The reads within the endpoint's first-token, idle and total timeouts, the SSE
decoder and its queue of events, the call's hang-up bound to the connection's
abort, the read to the end of the body after the upstream's terminal event (so
the connection is reused), and the abort of a stream closed early. A kind turns
the queued events into deltas (`next_delta`, `buffered_delta`) and says what
its terminal event is.
"""

from __future__ import annotations

from collections import deque

from llmeu.calls.hangup import Hangup
from llmeu.errors import UpstreamError
from llmeu.protocol.sse import ServerSentEvent, SSEDecoder
from llmeu.providers.base import ChatStream
from llmeu.providers.transport import Response
from llmeu.providers.upstream_http import finish_body, read_stream_chunk
from llmeu.routing.catalog import Endpoint


class SseStream(ChatStream):
    __slots__ = (
        "_deadline", "_decoder", "_done", "_endpoint", "_events", "_first", "_hangup",
        "_response",
    )  # fmt: skip

    def __init__(self, endpoint: Endpoint, response: Response, started: float, hangup: Hangup):
        self._endpoint = endpoint
        self._response = response
        self._decoder = SSEDecoder()
        self._events: deque[ServerSentEvent] = deque()
        self._done = False
        self._first = True
        self._deadline = started + endpoint.timeouts.total
        self._hangup = hangup
        hangup.bind(response.abort)

    async def _read_events(self, cut_short: str) -> None:
        """Queue the events of the next piece of the body. At its end, queue what the
        decoder still holds; with nothing left, the body ended before the terminal event:
        close the stream and raise `UpstreamError(cut_short)`."""
        chunk = await read_stream_chunk(
            self._response, self._endpoint, first=self._first, deadline=self._deadline,
            close=self.aclose,
        )  # fmt: skip
        self._first = False
        if chunk is not None:
            self._events.extend(self._decoder.feed(chunk))
            return
        self._events.extend(self._decoder.close())
        if not self._events:
            await self.aclose()
            raise UpstreamError(cut_short)

    def _read_buffered_events(self) -> bool:
        """Queue the events of what has arrived already, all of it at once (a kind turns
        events into deltas one by one, so an error event still comes after the deltas
        before it); False when nothing has."""
        chunk = self._response.read_buffered(joined=True)
        if chunk is None:
            return False
        self._events.extend(self._decoder.feed(chunk))
        return True

    async def _finish(self) -> None:
        """After the terminal event: read to the end of the body so the connection can be
        reused (nothing follows the terminal event on these wires)."""
        self._done = True
        self._hangup.unbind(self._response.abort)
        await finish_body(self._response, self._endpoint.timeouts.idle)

    async def aclose(self) -> None:
        self._hangup.unbind(self._response.abort)
        if not self._done:
            self._done = True
            self._response.abort()
