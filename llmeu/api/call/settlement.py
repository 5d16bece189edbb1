"""How a call ends: its counts, its final trace, and what the client is told.

`Settlement` is the half of `llmeu.api.call.lifecycle.Call` that runs once a call
is over, whatever ended it: leaving the call's block settles it (DESIGN §5:
exactly one trace per call). An error before the upstream phase is
`rejected`, after it `failed` (an error frame once a stream has begun); an
endpoint's refusal of what it cannot do is `rejected` too; a hang-up is
`cancelled` with what was produced; a cancelled task — the server ending the
request at shutdown — is `interrupted`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from enum import Enum
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from llmeu.api.call.accounting import Accounting, Counts, streamed_counts
from llmeu.api.call.trace import TraceRecorder
from llmeu.api.http.asgi import DisconnectWatch, Request
from llmeu.api.http.error_responses import ErrorShape, as_api_error, send_error
from llmeu.calls.output import Delta, StreamOutput, Usage
from llmeu.calls.record import CallStatus
from llmeu.errors import ApiError, ClientDisconnected, ServiceUnavailable, UnsupportedByEndpoint
from llmeu.protocol.error_shape import error_body
from llmeu.protocol.routing_block import RoutingBlock
from llmeu.providers.base import ChatStream

if TYPE_CHECKING:
    from llmeu.api.call.door import Calls

log = logging.getLogger("llmeu.api")


class StreamEncoder(Protocol):
    """A surface's wire for one stream: what goes out before the first delta, one piece per
    delta, the end (with the routing block), or the error that ends a broken stream."""

    def start(self) -> bytes: ...

    def delta(self, delta: Delta) -> bytes: ...

    def finish(self, finish_reason: str, usage: Usage, routing: RoutingBlock) -> bytes: ...

    def error(self, error: ApiError, routing: RoutingBlock) -> bytes: ...


class Phase(Enum):
    ADMISSION = "admission"  # an error here refuses the call: `rejected`
    COMPLETE = "complete"
    STREAM = "stream"


def shutting_down() -> ServiceUnavailable:
    """What a call still running when the shutdown grace ran out is told (and recorded)."""
    return ServiceUnavailable(
        "the gateway is shutting down and ended the call before it finished",
        code="gateway_shutdown",
    )


class Settlement:
    """Counting and settling a call; `Call` holds the state it reads."""

    trace: TraceRecorder
    trace_id: str
    request: Request
    _calls: Calls
    _shape: ErrorShape
    _phase: Phase
    _watch: DisconnectWatch
    _accounting: Accounting
    _encoder: StreamEncoder | None
    _stream_ended: bool
    _upstream: ChatStream | None
    _output: StreamOutput
    _prompt: object
    _prompt_tokens: Callable[[], int]
    _prompt_tokens_known: bool

    def counted(self, counts: Counts) -> None:
        self.trace.usage(counts.input_tokens, counts.output_tokens, estimated=counts.estimated)

    def reported(self, usage: Usage | None) -> None:
        """The prompt cache's share of the input, where the upstream's usage says it."""
        if usage is not None:
            read, created = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
            self.trace.cache_tokens(
                read if isinstance(read, int) else None,
                created if isinstance(created, int) else None,
            )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._watch.stop()
        try:
            if exc is None:
                return False
            if not self.trace.open:  # recorded already: a late hang-up changes nothing
                if isinstance(exc, ClientDisconnected):
                    return True
                if isinstance(exc, Exception) and self._stream_open:
                    # The trace is final, the stream's end was never sent: end it in error.
                    log.error("call %s failed ending its stream", self.trace_id, exc_info=exc)
                    await self._end_stream(as_api_error(exc))
                    return True
                return False
            if isinstance(exc, ClientDisconnected):
                await self._hung_up()
            elif isinstance(exc, asyncio.CancelledError):  # the server ended the request
                await self._ended(shutting_down(), CallStatus.INTERRUPTED)
            elif isinstance(exc, Exception):
                error = as_api_error(exc)
                if error.status == 500:
                    log.error("call %s failed", self.trace_id, exc_info=exc)
                refused = isinstance(exc, UnsupportedByEndpoint) or (
                    isinstance(exc, ApiError) and self._phase is Phase.ADMISSION
                )
                await self._ended(error, CallStatus.REJECTED if refused else CallStatus.FAILED)
            else:
                return False
            return True
        finally:
            self._calls.inflight.pop(self.trace_id, None)

    def _count_stream(self, usage: Usage | None) -> None:
        """What a stream produced: counts (the upstream's, else estimates) and content."""
        self.counted(streamed_counts(usage, self._output, self._prompt_tokens))
        self.reported(usage)
        self.trace.keep_content(self._prompt, self._output.stored())

    async def _finish(
        self, status: CallStatus, error: ApiError | None = None, http_status: int | None = None
    ) -> None:
        self._accounting.settle(self.trace.record)
        future = self.trace.finish(status, error=error, http_status=http_status)
        self._calls.inflight.pop(self.trace_id, None)
        await self.trace.durable(future)

    async def _close_upstream(self) -> None:
        if self._upstream is not None:
            await self._upstream.aclose()

    async def _hung_up(self) -> None:
        """The client left: the upstream is stopped (the hang-up aborted it), and the call is
        `cancelled` with what it produced; nobody is left to answer."""
        await self._close_upstream()
        self._count_partial(CallStatus.CANCELLED)
        await self._finish(CallStatus.CANCELLED, http_status=499)

    async def _ended(self, error: ApiError, status: CallStatus) -> None:
        """A refused, failed or interrupted call: before the response began the client gets an
        HTTP error; after, the stream's error frame (and no normal end)."""
        await self._close_upstream()
        trace = self.trace
        if status is not CallStatus.REJECTED:
            self._count_partial(status)
        if not self.request.response_started:
            await self._finish(status, error)
            routing = trace.error_routing() if self._phase is not Phase.ADMISSION else None
            await send_error(
                self.request, error, shape=self._shape, trace_id=self.trace_id, routing=routing
            )
            return
        try:
            await self._finish(status, error, http_status=200)
        finally:
            await self._end_stream(error)

    @property
    def _stream_open(self) -> bool:
        return self._encoder is not None and not self._stream_ended

    async def _end_stream(self, error: ApiError) -> None:
        """The error that ends a stream once it has begun (DESIGN §2: no normal end after
        it). Whatever fails in building it, the client still gets an error frame."""
        encoder = self._encoder
        if encoder is None or self._stream_ended:
            return
        self._stream_ended = True
        try:
            frame = encoder.error(error, self.trace.routing_block())
        except Exception:  # the routing block itself is what failed: the frame goes without it
            log.exception("call %s: the error frame goes without its routing block", self.trace_id)
            frame = b"data: " + error_body(error, {"trace_id": self.trace_id}) + b"\n\n"
        await self.request.write(frame, more=False)

    def _count_partial(self, status: CallStatus) -> None:
        """What a call that ended early used. A stream: what it produced so far — with the
        upstream's counts for a hang-up, estimated when it failed or was interrupted (and then
        only once an endpoint served). A call waiting for a whole answer: its prompt
        (estimated) when cancelled or interrupted, nothing when the upstream failed."""
        if self._phase is Phase.STREAM:
            if status is CallStatus.CANCELLED:
                self._count_stream(self._upstream.usage if self._upstream is not None else None)
            elif self.trace.endpoint is not None:
                self._count_stream(None)
        elif (
            self._phase is Phase.COMPLETE
            and status is not CallStatus.FAILED
            and self._prompt_tokens_known
        ):
            self.counted(Counts(self._prompt_tokens(), 0, True))
