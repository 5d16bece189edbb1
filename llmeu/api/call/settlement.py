"""How a call ends: its counts, its final trace, and what the client is told.

`Settlement` is the part of a call (`llmeu.api.call.lifecycle.Call`) that runs
once it is over, whatever ended it: leaving the call's block settles it
(docs/design.md §5: exactly one trace per call). An error before the upstream phase is
`rejected`, after it `failed` (an error frame once a stream has begun); an
endpoint's refusal of what it cannot do is `rejected` too; a hang-up is
`cancelled` with what was produced; a cancelled task — the server ending the
request at shutdown — is `interrupted`. It reads and writes the call's state
(`CallState`), never the lifecycle itself.
"""

from __future__ import annotations

import asyncio
import logging

from llmeu.api.call.accounting import Counts, streamed_counts
from llmeu.api.call.context import CallContext, CallState, Phase
from llmeu.api.http.error_responses import as_api_error, send_error
from llmeu.calls.output import Usage
from llmeu.calls.record import CallStatus
from llmeu.errors import (
    ApiError,
    ClientDisconnected,
    ServiceUnavailable,
    UnsupportedByEndpoint,
    UpstreamError,
)
from llmeu.protocol.error_shape import error_body

log = logging.getLogger("llmeu.api")


def shutting_down() -> ServiceUnavailable:
    """What a call still running when the shutdown grace ran out is told (and recorded)."""
    return ServiceUnavailable(
        "the gateway is shutting down and ended the call before it finished",
        code="gateway_shutdown",
    )


class Settlement:
    """Counting and settling one call."""

    __slots__ = ("_context", "_state")

    def __init__(self, context: CallContext, state: CallState):
        self._context = context
        self._state = state

    def counted(self, counts: Counts) -> None:
        self._state.trace.usage(
            counts.input_tokens, counts.output_tokens, estimated=counts.estimated
        )

    def reported(self, usage: Usage | None) -> None:
        """The prompt cache's share of the input, where the upstream's usage says it."""
        if usage is not None:
            read, created = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
            self._state.trace.cache_tokens(
                read if isinstance(read, int) else None,
                created if isinstance(created, int) else None,
            )

    def count_stream(self, usage: Usage | None) -> None:
        """What a stream produced: counts (the upstream's, else estimates) and content."""
        state = self._state
        self.counted(streamed_counts(usage, state.output, state.prompt_tokens))
        self.reported(usage)
        state.trace.keep_content(state.prompt, state.output.stored())

    async def finish(
        self, status: CallStatus, error: ApiError | None = None, http_status: int | None = None
    ) -> None:
        """The final trace, written durably; the call is no longer in flight."""
        state = self._state
        state.accounting.settle(state.trace.record)
        future = state.trace.finish(status, error=error, http_status=http_status)
        self._context.inflight.pop(state.trace_id, None)
        await state.trace.durable(future)

    async def settle(self, exc: BaseException | None) -> bool:
        """The end of the call's block: records how the call ended unless it already is;
        True when `exc` was answered here (and must not propagate)."""
        state = self._state
        state.watch.stop()
        try:
            if exc is None:
                return False
            if not state.trace.open:  # recorded already: a late hang-up changes nothing
                if isinstance(exc, ClientDisconnected):
                    return True
                if isinstance(exc, Exception) and state.stream_open:
                    # The trace is final, the stream's end was never sent: end it in error.
                    log.error("call %s failed ending its stream", state.trace_id, exc_info=exc)
                    await self._end_stream(as_api_error(exc))
                    return True
                return False
            if isinstance(exc, ClientDisconnected):
                await self._hung_up()
            elif isinstance(exc, asyncio.CancelledError):  # the server ended the request
                await self._ended(shutting_down(), CallStatus.INTERRUPTED)
            elif isinstance(exc, Exception):
                self._scrub(exc)
                error = as_api_error(exc)
                if error.status == 500:
                    log.error("call %s failed", state.trace_id, exc_info=exc)
                refused = isinstance(exc, UnsupportedByEndpoint) or (
                    isinstance(exc, ApiError) and state.phase is Phase.ADMISSION
                )
                await self._ended(error, CallStatus.REJECTED if refused else CallStatus.FAILED)
            else:
                return False
            return True
        finally:
            self._context.inflight.pop(state.trace_id, None)

    def _scrub(self, exc: Exception) -> None:
        """An upstream's error that broke the stream it was serving: its credentials out
        (errors of an attempt were scrubbed when the attempt failed)."""
        state = self._state
        endpoint = state.trace.endpoint
        if isinstance(exc, UpstreamError) and endpoint is not None and state.upstreams:
            state.upstreams.scrub(endpoint, exc)

    async def _close_upstream(self) -> None:
        if self._state.upstream is not None:
            await self._state.upstream.aclose()

    async def _hung_up(self) -> None:
        """The client left: the upstream is stopped (the hang-up aborted it), and the call is
        `cancelled` with what it produced; nobody is left to answer."""
        await self._close_upstream()
        self._count_partial(CallStatus.CANCELLED)
        await self.finish(CallStatus.CANCELLED, http_status=499)

    async def _ended(self, error: ApiError, status: CallStatus) -> None:
        """A refused, failed or interrupted call: before the response began the client gets an
        HTTP error; after, the stream's error frame (and no normal end)."""
        await self._close_upstream()
        state = self._state
        if status is not CallStatus.REJECTED:
            self._count_partial(status)
        if not state.request.response_started:
            await self.finish(status, error)
            routing = state.trace.error_routing() if state.phase is not Phase.ADMISSION else None
            await send_error(
                state.request, error, shape=state.shape, trace_id=state.trace_id, routing=routing
            )
            return
        try:
            await self.finish(status, error, http_status=200)
        finally:
            await self._end_stream(error)

    async def _end_stream(self, error: ApiError) -> None:
        """The error that ends a stream once it has begun (docs/design.md §2: no normal end after
        it). Whatever fails in building it, the client still gets an error frame."""
        state = self._state
        encoder = state.encoder
        if encoder is None or state.stream_ended:
            return
        state.stream_ended = True
        try:
            frame = encoder.error(error, state.trace.routing_block())
        except Exception:  # the routing block itself is what failed: the frame goes without it
            log.exception("call %s: the error frame goes without its routing block", state.trace_id)
            frame = b"data: " + error_body(error, {"trace_id": state.trace_id}) + b"\n\n"
        await state.request.write(frame, more=False)

    def _count_partial(self, status: CallStatus) -> None:
        """What a call that ended early used. A stream: what it produced so far — with the
        upstream's counts for a hang-up, estimated when it failed or was interrupted (and then
        only once an endpoint served). A call waiting for a whole answer: its prompt
        (estimated) when cancelled or interrupted, nothing when the upstream failed."""
        state = self._state
        if state.phase is Phase.STREAM:
            if status is CallStatus.CANCELLED:
                self.count_stream(state.upstream.usage if state.upstream is not None else None)
            elif state.trace.endpoint is not None:
                self.count_stream(None)
        elif (
            state.phase is Phase.COMPLETE
            and status is not CallStatus.FAILED
            and state.prompt_tokens_known
        ):
            self.counted(Counts(state.prompt_tokens(), 0, True))
