"""The cache step of a call: after governance, before any attempt.

Once the governance step has decided the effective policy and the prompt to
send (masked where the policy masks), `Call.consult_cache` asks the answer
cache (`llmeu.cache`) when — and only when — that policy has a `cache:`
section and the request did not opt out. A hit is served without an upstream:
a stream replays the kept deltas through the surface's own encoder, a whole
answer comes back in the shape its ask wants (`asks.Ask`), and the trace is
the call's own, `completed`, marked as a hit of the call that produced the
answer, with no upstream cost and what that call cost as `saved_eur`. A miss
keeps what the completed call produced, once its trace is final.

A request opts out per call: `llmeu: {"cache": false}` neither reads nor
keeps; `Cache-Control: no-cache` keeps the fresh answer without reading one;
`Cache-Control: no-store` reads but keeps nothing of this call.
"""

from __future__ import annotations

from collections.abc import Callable

from llmeu.api.call.trace import TraceRecorder
from llmeu.cache.answers import AnswerCache, Consulted
from llmeu.cache.entry import Answer, Entry, Streamed, Whole, streamed_of
from llmeu.cache.lookups import Cacheable, Lookup, Partition, routed_model
from llmeu.calls.output import Delta, Usage
from llmeu.calls.record import TraceRecord
from llmeu.calls.request import RoutingRequest
from llmeu.providers.base import ChatStream
from llmeu.routing.cache_rules import CacheRules
from llmeu.routing.catalog import Catalog, Endpoint
from llmeu.routing.router import RoutePlan


def directives(cache_control: str | None, narrowing: RoutingRequest | None) -> tuple[bool, bool]:
    """(read, keep) as the request asks them."""
    if narrowing is not None and narrowing.cache is False:
        return False, False
    said = {d.strip().lower() for d in (cache_control or "").split(",")}
    return "no-cache" not in said, "no-store" not in said


def admitted(plan: RoutePlan, catalog: Catalog) -> list[Endpoint]:
    """Every endpoint the policy admits for the call, healthy or not: the model as routed."""
    resting = (catalog.get(x.endpoint_id) for x in plan.excluded if x.rule == "health")
    return [*plan.candidates, *(e for e in resting if e is not None)]


class ReplayedStream(ChatStream):
    """A kept answer's deltas, as a stream whose deltas have all arrived."""

    def __init__(self, answer: Streamed):
        self._deltas = iter(answer.deltas)
        self._answer = answer
        self.input_tokens = answer.input_tokens

    async def next_delta(self) -> Delta | None:
        delta = next(self._deltas, None)
        if delta is None:
            self.finish_reason = self._answer.finish_reason
            self.usage = self._answer.usage
        return delta

    def buffered_delta(self) -> Delta | None:
        return next(self._deltas, None) if self.finish_reason is None else None

    def rest(self) -> list[Delta]:
        """Every delta not taken yet, at once; the stream has then ended."""
        rest = list(self._deltas)
        self.finish_reason = self._answer.finish_reason
        self.usage = self._answer.usage
        return rest

    async def aclose(self) -> None:
        self._deltas = iter(())


class Recording(ChatStream):
    """An upstream's stream that keeps a copy of every delta it gives, for the cache; what
    the upstream says of itself (finish, usage, input tokens) is read from it as it goes."""

    def __init__(self, upstream: ChatStream):
        self._upstream = upstream
        self.deltas: list[Delta] = []

    @property
    def finish_reason(self) -> str | None:
        return self._upstream.finish_reason

    @finish_reason.setter
    def finish_reason(self, value: str | None) -> None:
        self._upstream.finish_reason = value

    @property
    def usage(self) -> Usage | None:
        return self._upstream.usage

    @usage.setter
    def usage(self, value: Usage | None) -> None:
        self._upstream.usage = value

    @property
    def input_tokens(self) -> int | None:
        return self._upstream.input_tokens

    @input_tokens.setter
    def input_tokens(self, value: int | None) -> None:
        self._upstream.input_tokens = value

    async def next_delta(self) -> Delta | None:
        delta = await self._upstream.next_delta()
        if delta is not None:
            self.deltas.append(delta)
        return delta

    def buffered_delta(self) -> Delta | None:
        delta = self._upstream.buffered_delta()
        if delta is not None:
            self.deltas.append(delta)
        return delta

    async def aclose(self) -> None:
        await self._upstream.aclose()

    def streamed(self) -> Streamed:
        return Streamed(self.deltas, self.finish_reason or "stop", self.usage, self.input_tokens)


class CacheStep:
    """One call's use of the cache: what it found, and what it will keep."""

    __slots__ = ("_cache", "_catalog", "_consulted", "_keep", "_produced", "_rules")

    def __init__(self) -> None:
        self._cache: AnswerCache | None = None
        self._rules: CacheRules | None = None
        self._catalog: Catalog | None = None
        self._consulted: Consulted | None = None
        self._keep = False
        self._produced: Callable[[], Answer] | None = None

    @classmethod
    async def consult(
        cls,
        cache: AnswerCache | None,
        trace: TraceRecorder,
        plan: RoutePlan,
        catalog: Catalog,
        request: Callable[[], Cacheable],
        read_keep: tuple[bool, bool],
    ) -> CacheStep:
        """Look the governed call up, when its effective policy (`trace.policy`) has a cache
        and the request (`read_keep`) did not opt out."""
        step = cls()
        policy = trace.policy
        if cache is None or policy is None or policy.cache is None:
            return step
        read, keep = read_keep
        if not (read or keep):
            cache.skipped()
            return step
        record = trace.record
        step._cache, step._rules, step._catalog = cache, policy.cache, catalog
        partition = Partition.of(
            record.policy_id or "", record.policy_sha256 or "", policy.cache, record.key_id
        )
        routed = routed_model(admitted(plan, catalog))
        lookup = Lookup(partition, record.route, routed, request())
        step._consulted = await cache.look_up(lookup, policy.cache, read=read)
        step._keep = keep and step._consulted.hit is None
        return step

    @property
    def hit(self) -> Entry | None:
        """The entry that answers the call, if the look-up found one."""
        return self._consulted.hit if self._consulted is not None else None

    def serve(self, trace: TraceRecorder) -> Endpoint | None:
        """The endpoint that produced the answer found, recorded on `trace` as the hit it
        is; None on a miss."""
        consulted = self._consulted
        if consulted is None or consulted.hit is None or consulted.kind is None:
            return None
        entry = consulted.hit
        assert self._catalog is not None
        # The key holds every admitted endpoint's facts: the producing one is in the catalog.
        endpoint = self._catalog.get(entry.endpoint_id)
        assert endpoint is not None, "an entry's endpoint is one its key names"
        trace.served_from_cache(endpoint, consulted.kind.value, entry.source_trace_id,
                                entry.cost_eur)  # fmt: skip
        return endpoint

    def answer(self) -> Answer:
        assert self._consulted is not None and self._consulted.hit is not None
        return self._consulted.hit.answer

    def replayed(self) -> ReplayedStream:
        answer = self.answer()
        assert isinstance(answer, Streamed | Whole), "a stream's entry keeps a chat answer"
        return ReplayedStream(streamed_of(answer))

    def recording(self, upstream: ChatStream) -> ChatStream:
        """The upstream's stream, copied for the cache when the call's answer is to be kept."""
        if not self._keep:
            return upstream
        recording = Recording(upstream)
        self._produced = recording.streamed
        return recording

    def produced(self, answer: Callable[[], Answer]) -> None:
        """A whole answer the call got, to keep once the call completed."""
        if self._keep:
            self._produced = answer

    async def keep(self, record: TraceRecord) -> None:
        """Keep what the completed call produced, with the call's trace as its source."""
        cache, consulted, produced = self._cache, self._consulted, self._produced
        if cache is None or consulted is None or produced is None or self._rules is None:
            return
        self._produced = None
        if record.endpoint_id is None:
            return
        entry = Entry(record.trace_id, record.endpoint_id, produced(), record.cost_eur)
        ttl = float(self._rules.ttl.seconds)
        await cache.keep(consulted, entry, ttl, record.subject_sha256)
