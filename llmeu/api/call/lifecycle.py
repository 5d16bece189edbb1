"""One call lifecycle for every surface, streamed or not.

A surface's handler reads parse → govern → call → respond, and everything
else happens here, once:

    async with calls.open(request, "chat.completions") as call:   # the key, the trace
        chat = parse_chat(await call.body())
        chat = await call.govern(chat_intent(chat, stream=..., subject=...))
        await call.consult_cache(lambda: chat_cacheable(chat))      # the answer cache, if any
        if chat.stream:
            await call.stream(asks.chat_stream(chat), frames)       # fallback, frames, trace
        else:
            endpoint, answer = await call.complete(asks.chat_answer(chat))
            call.counted(...); body = ...(call.routing_block())
            await call.respond(body)

(`calls` is the gateway's `llmeu.api.call.door.Calls`.) `govern` is the one
governance step (`llmeu.api.call.governance`), which also decides where the
call's hosted tools may go (`Call.tools`); `consult_cache` the cache step
(`llmeu.api.call.caching`). Endpoints are then tried in the plan's order, only
inside the policy, falling back only before the first byte reaches the client
(`llmeu.api.call.attempts`); the client's connection is watched while an
upstream works, and a hang-up aborts the upstream at once. Leaving the block
settles the call whatever happened, with exactly one trace
(`llmeu.api.call.settlement`).

A masked prompt's values come back in the answer: a stream's deltas here (a
split placeholder held until it is whole), a whole answer's text through
`restore`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TypeVar

from llmeu.api.call.accounting import Accounting, CallCeiling, Counts, call_usage
from llmeu.api.call.asks import Ask, Operation
from llmeu.api.call.attempts import Attempts
from llmeu.api.call.caching import CacheStep, directives
from llmeu.api.call.context import CallContext, CallState, Phase, StreamEncoder
from llmeu.api.call.delivery import deliver
from llmeu.api.call.governance import NO_HOSTED_TOOLS, Governance, Intent, tool_passage
from llmeu.api.call.settlement import Settlement
from llmeu.api.call.trace import TraceRecorder
from llmeu.api.http.asgi import JSON_HEADERS, SSE_HEADERS, DisconnectWatch, Headers, Request
from llmeu.api.http.error_responses import ErrorShape
from llmeu.cache.lookups import Cacheable
from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Delta, Usage
from llmeu.calls.record import CallStatus
from llmeu.calls.request import RoutingRequest
from llmeu.errors import ServiceUnavailable
from llmeu.ledger.api_keys import ApiKey
from llmeu.observability.timing import ResponseTiming
from llmeu.personal.masking import Masking
from llmeu.personal.streams import StreamRestorer
from llmeu.protocol.routing_block import RoutingBlock
from llmeu.providers.base import ChatStream, Provider
from llmeu.routing.catalog import Endpoint
from llmeu.routing.router import RoutePlan

T = TypeVar("T")
P = TypeVar("P")


class Call:
    """One call, from its key to its trace; see the module docstring for the order of steps."""

    __slots__ = ("_attempts", "_cache", "_context", "_credentials", "_governance", "_key",
                 "_key_policy", "_masking", "_model", "_narrowing", "_notices", "_opened",
                 "_plan", "_restorer", "_route", "_settlement", "_shape", "_state", "_upstreams",
                 "_wants_receipt", "request", "tools", "trace", "trace_id")  # fmt: skip

    def __init__(
        self,
        context: CallContext,
        governance: Governance,
        request: Request,
        route: str,
        shape: ErrorShape,
        credentials: Callable[[Request], str | None] | None,
    ):
        self._context = context
        self._governance = governance
        self.request = request
        self._route = route
        self._shape = shape
        self._credentials = credentials
        self._plan: RoutePlan | None = None
        self._upstreams = context.upstreams
        self._model = ""
        self._opened = 0.0
        self._key_policy = ""
        self._key: ApiKey
        self._masking: Masking | None = None
        self._restorer: StreamRestorer | None = None
        self._wants_receipt = False
        self._narrowing: RoutingRequest | None = None
        self._notices: list[str] = []
        self._cache = CacheStep()
        self.tools = NO_HOSTED_TOOLS  # where the call's hosted tools may go, once governed
        self.trace_id = ""
        self.trace: TraceRecorder
        self._state: CallState
        self._settlement: Settlement
        self._attempts: Attempts

    async def __aenter__(self) -> Call:
        context = self._context
        request = self.request
        authorization = (
            self._credentials(request) if self._credentials else request.header(b"authorization")
        )
        key = await context.keys.authenticate(authorization, request.client)
        if not context.accepting:
            raise ServiceUnavailable("the gateway is shutting down", code="shutting_down")
        if context.ledger.full:
            raise ServiceUnavailable(
                "the ledger cannot record calls right now; refusing new calls rather than serve "
                "calls it cannot record",
                code="ledger_unavailable",
            )
        self._opened = time.perf_counter()
        trace = self.trace = TraceRecorder(
            context.ledger, context.observers, key_id=key.key_id, route=self._route,
            instance_id=context.instance_id, headers=request.headers,
            keep_metadata=context.keep_metadata,
        )  # fmt: skip
        hangup = Hangup()
        self._state = CallState(
            request, self._shape, trace, trace.trace_id,
            Accounting(context.limits, key, context.teams), hangup,
            DisconnectWatch(request.receive, hangup, request.hangup_hook),
        )  # fmt: skip
        self._settlement = Settlement(context, self._state)
        self._attempts = Attempts(trace, hangup, key.key_id)
        self.trace_id = trace.trace_id
        task = asyncio.current_task()
        if task is not None:
            context.inflight[self.trace_id] = task
        self._key, self._key_policy = key, key.policy_id
        # Known from the key: a call refused before routing still shows the policy it was
        # under; routing replaces it with the effective (possibly narrowed) policy.
        trace.record.policy_id = key.policy_id
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        return await self._settlement.settle(exc)

    async def body(self) -> bytes:
        body = await self.request.body(self._context.max_body_bytes)
        self.trace.received_body(body)
        return body

    async def govern(self, intent: Intent[P]) -> P:
        """The governance step (`llmeu.api.call.governance`): record, screen, mask, admit,
        route. Returns the prompt to send upstream: masked where the policy masks."""
        state = self._state
        trace = self.trace
        trace.requested(intent.model, stream=intent.stream, texts=intent.texts,
                        subject=intent.subject)  # fmt: skip
        self._model = intent.model
        prompt = intent.prompt
        governance = self._governance
        screening = governance.screen(self._key_policy, lambda: intent.parts(intent.prompt))
        if screening is not None:
            trace.personal_data(screening.record())
            if screening.refusal is not None:
                raise screening.refusal
            self._masking = screening.masking
            if screening.masking is not None:
                prompt = intent.masked(prompt, screening)
        state.prompt = intent.kept(prompt)
        estimate = intent.prompt_tokens
        if estimate is not None:
            state.prompt_tokens = lambda: estimate(prompt)
            state.prompt_tokens_known = True
        serving = self._context.upstreams.catalog.serving(intent.model)
        await governance.admit(self._key_policy, state.accounting, state.prompt_tokens,
                               CallCeiling.of(serving, intent.max_output_tokens))  # fmt: skip
        restrict = governance.restriction(self._key_policy, screening) if screening else None
        header = self.request.header(b"x-llmeu-policy")
        policy = governance.policy(self._key_policy, intent.narrowing, header, restrict)
        self._narrowing = intent.narrowing
        self._wants_receipt = intent.narrowing is not None and intent.narrowing.receipt is True
        trace.governed_by(policy)
        # The configuration the call started with serves it to the end, reloads or not.
        self._upstreams = state.upstreams = self._context.upstreams
        plan = self._upstreams.plan(intent.model, intent.needs, policy)
        self._plan, self.tools = tool_passage(intent, prompt, plan)
        if self.tools.hosted:
            tools = self.tools
            self._attempts.started = lambda ep: trace.dropped_tools(tools.dropped(ep))
        trace.routed(self._plan)
        return prompt

    async def consult_cache(self, request: Callable[[], Cacheable]) -> None:
        """The cache step (`llmeu.api.call.caching`), taken after `govern`: nothing unless the
        effective policy has a `cache:` section (`request` is not even read), and nothing for
        a call with hosted tools (what they run is not in the request's cache key)."""
        if self.tools.hosted:
            return
        self._cache = await CacheStep.consult(
            self._context.cache, self.trace, self._planned(), self._upstreams.catalog,
            request, directives(self.request.header(b"cache-control"), self._narrowing),
        )  # fmt: skip

    def restore(self, text: str) -> str:
        """A whole answer's text with the values a masking took out put back."""
        return self._masking.restore(text) if self._masking is not None else text

    def restore_json(self, text: str) -> str:
        """A whole answer's JSON text (a tool call's arguments) with the values put back,
        JSON-escaped."""
        return self._masking.restore_json(text) if self._masking is not None else text

    def ignored(self, features: str, *, kind: str = "features") -> None:
        """What the caller asked for that the gateway does not apply (`kind`: request fields,
        beta features…; a kind said again replaces what it said)."""
        self.trace.ignored(features, kind=kind)

    def notice(self, text: str) -> None:
        """Something the caller asked for that the call's policy did not let happen: told in
        an `x-llmeu-notice` header of the answer (streamed or whole) and kept on the trace
        with the ignored features."""
        self._notices.append(text)
        self.trace.ignored("; ".join(self._notices), kind="notices")

    async def complete(self, ask: Ask[T]) -> tuple[Endpoint, T]:
        """Try the plan's endpoints until one answers (or take the cache's answer); the
        answer is the surface's to send."""
        hit = self._cache_hit(Phase.COMPLETE)
        if hit is not None:
            return hit, ask.replayed(self._cache.answer())
        self._upstream_phase(Phase.COMPLETE)  # the final row replaces it; nobody waits for it
        endpoint, result = await self._attempts.run(self._planned(), self._upstreams, ask.run)
        self._state.watch.stop()
        self._cache.produced(lambda: ask.kept(result))
        return endpoint, result

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
        state = self._state
        cached = self._cache_hit(Phase.STREAM)
        began = None if cached is not None else self._upstream_phase(Phase.STREAM)

        async def first_delta(provider: Provider, hangup: Hangup) -> Delta | None:
            upstream = self._cache.recording(await open_stream(provider, hangup))
            try:
                delta = await upstream.next_delta()
            except BaseException:
                await upstream.aclose()
                raise
            state.upstream = upstream
            return delta

        replay = None
        if cached is None:
            plan, upstreams = self._planned(), self._upstreams
            endpoint, delta = await self._attempts.run(plan, upstreams, first_delta)
        else:
            endpoint, state.upstream = cached, (replay := self._cache.replayed())
            delta = await replay.next_delta()
        upstream = state.upstream
        assert upstream is not None
        encoder = state.encoder = frames(endpoint)
        if self._masking is not None:
            self._restorer = StreamRestorer(self._masking)
        if began is not None:
            await self.trace.durable(began)
        state.hangup.check()
        await self.request.start(200, self._response_headers(SSE_HEADERS))
        pending = encoder.start()
        if delta is not None:
            self.trace.first_token()
            self.trace.delivering(state.output)  # marked as it goes, for a crash mid-stream
        await deliver(self.request, upstream, delta, pending, encoder, state.output,
                      self._restorer, replay)  # fmt: skip
        state.watch.stop()
        self._settlement.count_stream(upstream.usage)
        reason = upstream.finish_reason or "stop"
        self.trace.finish_reason(reason)
        usage = call_usage(self.trace.record, upstream.usage)
        if completing is not None:
            await completing(reason, usage)
        await self._settlement.finish(CallStatus.COMPLETED)
        end = encoder.finish(reason, usage, self._final_routing())
        state.stream_ended = True
        await self.request.write(end, more=False)
        await self._cache.keep(self.trace.record)

    @property
    def key(self) -> ApiKey:
        """The calling key: the tenant of what the call keeps, its own policy (before any
        narrowing); the tool calls a call makes are made with it."""
        return self._key

    @property
    def upstream_input_tokens(self) -> int | None:
        """The prompt's input tokens as the serving stream's upstream counted them, where it
        said so before its first delta (the local model, Anthropic's `message_start`)."""
        upstream = self._state.upstream
        return upstream.input_tokens if upstream is not None else None

    def counted(self, counts: Counts) -> None:
        self._settlement.counted(counts)

    def reported(self, usage: Usage | None) -> None:
        self._settlement.reported(usage)

    def keep_content(self, completion: object) -> None:
        self.trace.keep_content(self._state.prompt, completion)

    def finish_reason(self, reason: str | None) -> None:
        self.trace.finish_reason(reason)

    def routing_block(self) -> RoutingBlock:
        return self.trace.routing_block()

    def usage(self) -> Usage:
        return call_usage(self.trace.record)

    async def respond(self, body: bytes) -> None:
        """A completed call's whole answer, sent once its trace is durable."""
        await self._settlement.finish(CallStatus.COMPLETED)
        headers = self._response_headers(JSON_HEADERS)
        if self._wants_receipt:
            receipt = self._context.receipts.of_record(self.trace.record)
            headers.append((b"x-llmeu-receipt", receipt.encode()))
        await self.request.respond(200, body, headers)
        await self._cache.keep(self.trace.record)

    def _final_routing(self) -> RoutingBlock:
        routing = self.trace.routing_block()
        if self._wants_receipt:
            routing.receipt = self._context.receipts.of_record(self.trace.record)
        return routing

    def _upstream_phase(self, phase: Phase) -> asyncio.Future[None]:
        self._state.phase = phase
        self._state.watch.start()
        return self.trace.begin(awaited=phase is Phase.STREAM)

    def _cache_hit(self, phase: Phase) -> Endpoint | None:
        """The endpoint that produced the cached answer this call is served, if any: the call
        is then recorded as a hit, with no attempt (and nothing to watch or wait for).

        A stream served from the cache writes its frames over several turns of the loop, so
        it leaves an in-progress row at once, as any stream does. A whole answer usually goes
        from here to its final trace without awaiting anything, and its in-progress row would
        only meet that final row in the ledger's batch and be dropped there unwritten
        (`Ledger._write`): it is made at the loop's next turn, and only if the call is still
        open then (a surface that awaits before it answers, as a stored Responses answer
        does, still leaves one for a crash to find)."""
        if self._cache.hit is None:
            return None
        self._state.phase = phase
        if phase is Phase.STREAM:
            self.trace.begin()
        else:
            asyncio.get_running_loop().call_soon(self._begin_if_open)
        return self._cache.serve(self.trace)

    def _begin_if_open(self) -> None:
        if self.trace.open:
            self.trace.begin()

    def _planned(self) -> RoutePlan:
        assert self._plan is not None, "govern() the call first"
        return self._plan

    def _response_headers(self, headers: Headers) -> Headers:
        """`headers` plus the trace id and the gateway's overhead up to this response start."""
        timing = ResponseTiming(time.perf_counter() - self._opened, self._attempts.seconds)
        self.trace.response_started(timing)
        said = [*headers, (b"x-llmeu-trace-id", self.trace_id.encode()), *timing.headers()]
        if self._notices:
            said += [(b"x-llmeu-notice", n.encode("ascii", "replace")) for n in self._notices]
        if dropped := self.trace.dropped:
            said.append((b"x-llmeu-dropped-tools", ", ".join(dropped).encode()))
        return said
