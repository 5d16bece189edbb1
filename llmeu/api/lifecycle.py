"""One call lifecycle for every surface, streamed or not.

A surface's handler reads parse → route → call → record → respond, and
everything else happens here, once:

    async with calls.open(request, "chat.completions") as call:   # the key, the trace
        chat = parse_chat(await call.body())
        call.requested(chat.model, stream=..., texts=..., prompt=..., prompt_tokens=...)
        screening = call.screen(lambda: chat_parts(chat))           # personal data
        await call.admit()                                          # the key's limits
        call.route(chat.model, needs, chat.llmeu)                   # policy and route plan
        if chat.stream:
            await call.stream(open_stream, frames)                  # fallback, frames, trace
        else:
            endpoint, answer = await call.complete(ask)             # fallback, trace
            call.counted(...); body = ...(call.routing_block())
            await call.respond(body)

(`calls` is the gateway's `llmeu.api.inference.Calls`.) Endpoints are tried
in the plan's order, only inside the policy, falling back only before the
first byte reaches the client; every attempt is recorded; the client's
connection is watched while an upstream works, and a hang-up aborts the
upstream at once. Leaving the block settles the call whatever happened, with
exactly one trace (`llmeu.api.call_settlement`).

`screen` applies the policy's `personal_data` rules to the prompt's `(path,
text)` parts: `block` refuses, `restrict` narrows the route, `mask` hands the
surface the masked text to send (`keep_prompt` keeps it), and the values come
back in the answer (`restore`; a stream's deltas here, a split placeholder held).
Without a `personal_data` section none of this costs anything.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from llmeu.api.accounting import Accounting, CallCeiling
from llmeu.api.asgi import JSON_HEADERS, SSE_HEADERS, DisconnectWatch, Headers, Request
from llmeu.api.call_settlement import Phase, Settlement, StreamEncoder
from llmeu.api.error_responses import ErrorShape
from llmeu.api.trace import TraceRecorder
from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Delta, StreamOutput, Usage
from llmeu.calls.record import CallStatus
from llmeu.calls.request import RoutingRequest
from llmeu.errors import (
    ClientDisconnected,
    ServiceUnavailable,
    UnsupportedByEndpoint,
    UpstreamError,
)
from llmeu.observability.timing import ResponseTiming
from llmeu.personal.masking import Masking
from llmeu.personal.rules import RestrictTo
from llmeu.personal.scan import Screening, TextParts, screen
from llmeu.personal.streams import StreamRestorer
from llmeu.protocol.routing_block import RoutingBlock
from llmeu.providers.base import ChatStream, Provider
from llmeu.routing.catalog import Capability, Endpoint
from llmeu.routing.fallback import run_with_fallback
from llmeu.routing.policy import LimitsFail, restricted
from llmeu.routing.router import RoutePlan

if TYPE_CHECKING:
    from llmeu.api.inference import Calls

T = TypeVar("T")
log = logging.getLogger("llmeu.api")

Operation = Callable[[Provider, Hangup], Awaitable[T]]
"""What one attempt asks of an endpoint's provider."""


class Call(Settlement):
    """One call, from its key to its trace; see the module docstring for the order of steps."""

    def __init__(
        self,
        calls: Calls,
        request: Request,
        route: str,
        shape: ErrorShape,
        credentials: Callable[[Request], str | None] | None,
    ):
        self._calls = calls
        self.request = request
        self._route = route
        self._shape = shape
        self._credentials = credentials
        self._phase = Phase.ADMISSION
        self._plan: RoutePlan | None = None
        self._upstreams = calls.upstreams
        self._prompt: object = None
        self._prompt_tokens: Callable[[], int] = int  # no estimate: 0
        self._prompt_tokens_known = False
        self._model = ""
        self._max_output_tokens: int | None = None
        self._hangup = Hangup()
        self._watch = DisconnectWatch(request.receive, self._hangup, request.hangup_hook)
        self._upstream: ChatStream | None = None
        self._encoder: StreamEncoder | None = None
        self._stream_ended = False
        self._output = StreamOutput()
        self._opened = 0.0
        self._upstream_seconds = 0.0  # spent inside attempts, for the overhead headers
        self._key_id = ""
        self._key_policy = ""
        self._restrict: RestrictTo | None = None
        self._masking: Masking | None = None
        self._restorer: StreamRestorer | None = None
        self._wants_receipt = False
        self.trace_id = ""
        self.trace: TraceRecorder
        self._accounting: Accounting

    async def __aenter__(self) -> Call:
        calls = self._calls
        request = self.request
        authorization = (
            self._credentials(request) if self._credentials else request.header(b"authorization")
        )
        key = await calls.keys.authenticate(authorization, request.client)
        if not calls.accepting:
            raise ServiceUnavailable("the gateway is shutting down", code="shutting_down")
        if calls.ledger.full:
            raise ServiceUnavailable(
                "the ledger cannot record calls right now; refusing new calls rather than serve "
                "calls it cannot record",
                code="ledger_unavailable",
            )
        self._opened = time.perf_counter()
        self.trace = TraceRecorder(
            calls.ledger, calls.observers, key_id=key.key_id, route=self._route,
            instance_id=calls.instance_id, headers=request.headers,
            keep_metadata=calls.keep_metadata,
        )  # fmt: skip
        self._accounting = Accounting(calls.limits, key)
        self.trace_id = self.trace.trace_id
        task = asyncio.current_task()
        if task is not None:
            calls.inflight[self.trace_id] = task
        self._key_id = key.key_id
        self._key_policy = key.policy_id
        # Known from the key: a call refused before routing still shows the policy it was
        # under; routing replaces it with the effective (possibly narrowed) policy.
        self.trace.record.policy_id = key.policy_id
        return self

    async def body(self) -> bytes:
        body = await self.request.body(self._calls.max_body_bytes)
        self.trace.received_body(body)
        return body

    def requested(
        self,
        model: str,
        *,
        stream: bool,
        texts: Iterable[str],
        prompt: object,
        prompt_tokens: Callable[[], int] | None = None,
        subject: str | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        """What the client asked for: `texts` (the prompt's text) are kept out of error
        messages, `prompt` is what the trace keeps where the policy stores content,
        `prompt_tokens` the gateway's estimate, for limits and when no usage is reported,
        `subject` the end user the call is made for (its content is erased with theirs), and
        `max_output_tokens` the most the call may produce (0 for embeddings; None: the
        endpoint's cap), which the key's limits reserve."""
        self.trace.requested(model, stream=stream, texts=texts, subject=subject)
        self._model = model
        self._max_output_tokens = max_output_tokens
        self._prompt = prompt
        if prompt_tokens is not None:
            self._prompt_tokens = prompt_tokens
            self._prompt_tokens_known = True

    def screen(self, read: Callable[[], tuple[TextParts, Sequence[str]]]) -> Screening | None:
        """The prompt's text — `read()`: its `(path, text)` parts and the paths of parts that
        are not text — against the key's policy's `personal_data` rules (None, and `read`
        never called, without any); what was found goes on the trace, a refusal is raised
        once it is there."""
        policy = self._calls.policies.get(self._key_policy)
        if policy is None or policy.personal_data is None:
            return None
        rules = policy.personal_data
        parts, unscanned = read()
        screening = screen(parts, unscanned, rules, policy.policy_id)
        self.trace.personal_data(screening.record())
        if screening.refusal is not None:
            raise screening.refusal
        if screening.restrict:
            self._restrict = rules.restrict
        self._masking = screening.masking
        return screening

    def keep_prompt(self, prompt: object) -> None:
        """What the trace keeps of the prompt instead (the masked prompt, never the values)."""
        self._prompt = prompt

    def restore(self, text: str) -> str:
        """A whole answer's text with the values a masking took out put back."""
        return self._masking.restore(text) if self._masking is not None else text

    async def admit(self) -> None:
        """The key's limits; a narrowing cannot change what its policy says of a limits
        store that does not answer (`limits_fail`)."""
        policy = self._calls.policies.get(self._key_policy)
        limits_fail = policy.limits_fail if policy is not None else LimitsFail.OPEN
        serving = self._calls.upstreams.catalog.serving(self._model)
        ceiling = CallCeiling.of(serving, self._max_output_tokens)
        await self._accounting.admit(self._prompt_tokens, ceiling, limits_fail)

    def route(self, model: str, needs: frozenset[Capability], narrowing: object) -> RoutePlan:
        """The effective policy (the key's, narrowed by the request) and the route plan."""
        calls = self._calls
        request_field = narrowing if isinstance(narrowing, RoutingRequest) else None
        self._wants_receipt = request_field is not None and request_field.receipt is True
        policy = calls.policies.effective(
            self._key_policy, request_field, self.request.header(b"x-llmeu-policy")
        )
        if self._restrict is not None:
            policy = restricted(policy, self._restrict)
        self.trace.governed_by(policy)
        # The configuration the call started with serves it to the end, reloads or not.
        self._upstreams = calls.upstreams
        self._plan = self._upstreams.plan(model, needs, policy)
        self.trace.routed(self._plan)
        return self._plan

    async def complete(self, operation: Operation[T]) -> tuple[Endpoint, T]:
        """Try the plan's endpoints until one answers; the answer is the surface's to send."""
        self._upstream_phase(Phase.COMPLETE)  # the final row replaces it; nobody waits for it
        result = await run_with_fallback(self._planned(), lambda ep: self._attempt(ep, operation))
        self._watch.stop()
        return result

    async def stream(
        self,
        open_stream: Operation[ChatStream],
        frames: Callable[[Endpoint], StreamEncoder],
        completing: Callable[[str, Usage], Awaitable[None]] | None = None,
    ) -> None:
        """Stream the answer: the first endpoint that yields a first delta serves; every delta
        goes out as it arrives; the end goes out once the trace is durable. `completing`
        (finish reason, usage) runs once the stream ended and before the call is settled:
        what it keeps is there before the client sees the end, and its failure fails the
        call."""
        began = self._upstream_phase(Phase.STREAM)

        async def first_delta(provider: Provider, hangup: Hangup) -> Delta | None:
            upstream = await open_stream(provider, hangup)
            try:
                delta = await upstream.next_delta()
            except BaseException:
                await upstream.aclose()
                raise
            self._upstream = upstream
            return delta

        endpoint, delta = await run_with_fallback(
            self._planned(), lambda ep: self._attempt(ep, first_delta)
        )
        upstream = self._upstream
        assert upstream is not None
        encoder = self._encoder = frames(endpoint)
        if self._masking is not None:
            self._restorer = StreamRestorer(self._masking)
        await self.trace.durable(began)
        self._hangup.check()
        await self.request.start(200, self._response_headers(SSE_HEADERS))
        pending = encoder.start()
        if delta is not None:
            self.trace.first_token()
        self._calls.ledger.progress(self.trace.record, self._output)  # for a crash mid-stream
        while delta is not None:
            delta = await self._forward(upstream, delta, pending, encoder)
            pending = b""
        if self._restorer is not None and (held := self._restorer.flush()) is not None:
            pending += encoder.delta(held)
        if pending:
            await self.request.write(pending)
        self._watch.stop()
        self._count_stream(upstream.usage)
        reason = upstream.finish_reason or "stop"
        self.trace.finish_reason(reason)
        usage = self._usage(upstream.usage)
        if completing is not None:
            await completing(reason, usage)
        await self._finish(CallStatus.COMPLETED)
        routing = self.trace.routing_block()
        if self._wants_receipt:
            routing.receipt = self._calls.receipts.of_record(self.trace.record)
        end = encoder.finish(reason, usage, routing)
        self._stream_ended = True
        await self.request.write(end, more=False)

    @property
    def key_id(self) -> str:
        """The calling key: the tenant of what the call keeps."""
        return self._key_id

    def keep_content(self, completion: object) -> None:
        self.trace.keep_content(self._prompt, completion)

    def finish_reason(self, reason: str | None) -> None:
        self.trace.finish_reason(reason)

    def routing_block(self) -> RoutingBlock:
        return self.trace.routing_block()

    def usage(self) -> Usage:
        return self._usage()

    async def respond(self, body: bytes) -> None:
        """A completed call's whole answer, sent once its trace is durable."""
        await self._finish(CallStatus.COMPLETED)
        headers = self._response_headers(JSON_HEADERS)
        if self._wants_receipt:
            receipt = self._calls.receipts.of_record(self.trace.record)
            headers.append((b"x-llmeu-receipt", receipt.encode()))
        await self.request.respond(200, body, headers)

    def _upstream_phase(self, phase: Phase) -> asyncio.Future[None]:
        self._phase = phase
        self._watch.start()
        return self.trace.begin(awaited=phase is Phase.STREAM)

    def _planned(self) -> RoutePlan:
        assert self._plan is not None, "route() the call first"
        return self._plan

    async def _attempt(self, endpoint: Endpoint, operation: Operation[T]) -> T:
        """Run one endpoint; the attempt and the endpoint's health are recorded either way."""
        self._hangup.check()
        upstreams = self._upstreams
        provider = upstreams.provider(endpoint)
        upstreams.attempt_started(endpoint, self._key_id)
        attempt = self.trace.attempt_started(endpoint)
        waiting = time.perf_counter()
        try:
            result = await operation(provider, self._hangup)
        except UnsupportedByEndpoint as error:
            self.trace.attempt_refused(attempt, endpoint, error)
            raise
        except UpstreamError as error:
            self.trace.attempt_failed(attempt, error)
            upstreams.attempt_failed(endpoint, error, self._key_id)
            raise
        except (ClientDisconnected, asyncio.CancelledError):
            self.trace.attempt_cancelled(attempt)
            raise
        finally:
            self._upstream_seconds += time.perf_counter() - waiting
        upstreams.attempt_served(endpoint)
        self.trace.attempt_served(attempt, endpoint)
        return result

    async def _forward(
        self, upstream: ChatStream, delta: Delta, pending: bytes, encoder: StreamEncoder
    ) -> Delta | None:
        """Send `delta`'s frame, with the frames already waiting and the further deltas that
        arrived with it: one write, one frame per delta, nothing held back. Returns the next."""
        body = pending
        current: Delta | None = delta
        output = self._output
        try:
            while current is not None:
                output.add(current)  # the trace keeps placeholders, never the values
                restorer = self._restorer
                body += encoder.delta(current if restorer is None else restorer.push(current))
                current = upstream.buffered_delta()
        finally:
            await self.request.write(body)
        return await upstream.next_delta()

    def _response_headers(self, headers: Headers) -> Headers:
        """`headers` plus the trace id and the gateway's overhead up to this response start."""
        timing = ResponseTiming(time.perf_counter() - self._opened, self._upstream_seconds)
        self.trace.response_started(timing)
        return [*headers, (b"x-llmeu-trace-id", self.trace_id.encode()), *timing.headers()]

    def _usage(self, reported: Usage | None = None) -> Usage:
        """The call's counts; the cache's share of the prompt where the upstream reported it."""
        record = self.trace.record
        assert record.input_tokens is not None and record.output_tokens is not None
        usage = Usage(
            record.input_tokens, record.output_tokens, record.input_tokens + record.output_tokens
        )
        if reported is not None:
            usage.cache_creation_input_tokens = reported.cache_creation_input_tokens
            usage.cache_read_input_tokens = reported.cache_read_input_tokens
        return usage
