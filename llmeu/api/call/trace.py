"""The trace of one call: filled in as the call goes, finished once, written durably.

Every call that passed authentication gets exactly one trace. The recorder
is its only writer: the lifecycle and the surfaces call its methods, never
set record fields. It tells the observers (metrics, spans, the call log) of
each step, keeps prompt and output text out of error messages when the
policy stores no content, and hands the finished record to the ledger.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import time
from collections.abc import Iterable
from typing import Any

from llmeu.api.call.redaction import redact_all
from llmeu.calls.output import StreamOutput
from llmeu.calls.record import Attempt, CallStatus, TraceRecord, new_trace_id
from llmeu.errors import ApiError, NoCompliantRoute, UpstreamError
from llmeu.evidence.receipts import policy_sha256
from llmeu.ledger.retention import subject_digest
from llmeu.ledger.writer import Ledger
from llmeu.observability.hooks import Headers, Observers
from llmeu.observability.timing import ResponseTiming
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.routing_block import CacheHit, CostEstimate, RoutingBlock
from llmeu.routing.catalog import Endpoint
from llmeu.routing.durations import Duration
from llmeu.routing.policy import DEFAULT_KEEP_METADATA, Policy, policy_document
from llmeu.routing.router import RoutePlan
from llmeu.routing.tool_servers import ToolServer

_DURABLE_WAIT = 10.0


class TraceRecorder:
    __slots__ = (
        "_dropped",
        "_ignored",
        "_keep_metadata",
        "_ledger",
        "_observers",
        "_quoting",
        "_sensitive",
        "endpoint",
        "policy",
        "record",
        "trace_id",
    )

    def __init__(
        self,
        ledger: Ledger,
        observers: Observers,
        *,
        key_id: str,
        route: str,
        instance_id: str,
        headers: Headers,
        keep_metadata: Duration = DEFAULT_KEEP_METADATA,
    ):
        self._ledger = ledger
        self._keep_metadata = keep_metadata
        self._observers = observers
        self.record = TraceRecord(
            trace_id=new_trace_id(),
            key_id=key_id,
            route=route,
            request_model="",
            stream=False,
            received_at=time.time(),
            instance_id=instance_id,
        )
        self.trace_id = self.record.trace_id
        self.policy: Policy | None = None
        self.endpoint: Endpoint | None = None
        self._sensitive: list[str] = []  # prompt and output text, kept out of error messages
        self._quoting: list[Attempt] = []
        self._ignored: dict[str, str] = {}  # attempts whose error quotes what an upstream sent
        self._dropped: list[str] = []
        observers.call_started(self.record, headers)

    @property
    def open(self) -> bool:
        return self.record.status is CallStatus.IN_PROGRESS

    def requested(
        self, model: str, *, stream: bool, texts: Iterable[str], subject: str | None = None
    ) -> None:
        """What the client asked for; `texts` are the prompt's, kept out of error messages;
        `subject` the end user the call is for, kept as its digest (erasure by subject)."""
        self.record.request_model = model
        self.record.stream = stream
        self._sensitive.extend(texts)
        if subject:
            self.record.subject_sha256 = subject_digest(subject)

    def received_body(self, body: bytes) -> None:
        """The request body exactly as received: its digest goes into the call's receipt."""
        self.record.request_sha256 = hashlib.sha256(body).hexdigest()

    def governed_by(self, policy: Policy) -> None:
        self.policy = policy
        self.record.policy_id = policy.policy_id
        self.record.policy_sha256 = _policy_digest(policy)

    def routed(self, plan: RoutePlan) -> None:
        if plan.policy is not self.policy:  # the same policy is not digested twice
            self.governed_by(plan.policy)
        self.record.excluded = [x.as_dict() for x in plan.excluded]

    def personal_data(self, found: dict[str, Any]) -> None:
        self.record.personal_data = found

    def begin(self, *, awaited: bool = False) -> asyncio.Future[None]:
        """Record the call as in progress (so a crash leaves it `interrupted`); `awaited`
        when the call waits for that row before it answers (a stream's first frame)."""
        return self._ledger.begin(self.record, awaited=awaited)

    def attempt_started(self, endpoint: Endpoint) -> Attempt:
        attempt = Attempt(endpoint.endpoint_id, endpoint.provider, started_at=time.time())
        self.record.attempts.append(attempt)
        self._observers.attempt_started(self.record, attempt)
        return attempt

    def attempt_failed(self, attempt: Attempt, error: UpstreamError) -> None:
        attempt.finished_at = time.time()
        attempt.outcome = "failed"
        attempt.error = error.message
        attempt.upstream_status = error.upstream_status
        if error.quotes_upstream:
            self._quoting.append(attempt)
        self._observers.attempt_finished(self.record, attempt)

    def attempt_refused(self, attempt: Attempt, endpoint: Endpoint, error: UpstreamError) -> None:
        """The endpoint refused the request before running it (`UnsupportedByEndpoint`):
        the trace names it, though no model ran."""
        attempt.finished_at = time.time()
        attempt.outcome = "rejected"
        attempt.error = error.message
        if error.quotes_upstream:
            self._quoting.append(attempt)
        record = self.record
        record.endpoint_id = endpoint.endpoint_id
        record.provider = endpoint.provider
        record.inference_region = endpoint.inference_region
        record.sovereignty_class = endpoint.sovereignty_class.value
        self._observers.attempt_finished(record, attempt)

    def attempt_cancelled(self, attempt: Attempt) -> None:
        attempt.finished_at = time.time()
        attempt.outcome = "cancelled"
        self._observers.attempt_finished(self.record, attempt)

    def attempt_served(self, attempt: Attempt, endpoint: Endpoint) -> None:
        attempt.outcome = "served"
        self._served_by(endpoint)
        self._observers.attempt_finished(self.record, attempt)

    def served_from_cache(
        self, endpoint: Endpoint, kind: str, source_trace_id: str, saved_eur: float | None
    ) -> None:
        """The answer comes from the answer cache: where it was produced, by which call, and
        what that call cost. No attempt is made; the call costs nothing upstream."""
        record = self.record
        record.cache_hit = kind
        record.cache_source = source_trace_id
        record.saved_eur = saved_eur
        self._served_by(endpoint)

    def _served_by(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        record = self.record
        record.endpoint_id = endpoint.endpoint_id
        record.provider = endpoint.provider
        record.model_used = endpoint.model
        record.model_version = endpoint.model_version
        record.inference_region = endpoint.inference_region
        record.sovereignty_class = endpoint.sovereignty_class.value
        if self.policy is not None:
            record.retention = self.policy.route_retention(endpoint).text

    def tool_routed(self, server: ToolServer, tool: str) -> None:
        """A tool call's site: the tool server it reaches, recorded as an endpoint's is (its
        provider, class and the route's retention), with the tool as the server names it."""
        record = self.record
        record.mcp_server = server.server_id
        record.mcp_tool = tool
        record.provider = server.provider
        record.sovereignty_class = server.sovereignty_class.value
        if self.policy is not None:
            record.retention = self.policy.route_retention(server).text

    def tool_attempt_started(self, server: ToolServer) -> Attempt:
        attempt = Attempt(server.server_id, server.provider, started_at=time.time())
        self.record.attempts.append(attempt)
        self._observers.attempt_started(self.record, attempt)
        return attempt

    def tool_attempt_served(self, attempt: Attempt, sent: int, received: int) -> None:
        """The server answered (a result or its own error); the bytes each way."""
        attempt.finished_at = time.time()
        attempt.outcome = "served"
        attempt.upstream_status = 200
        self.record.bytes_in = sent
        self.record.bytes_out = received
        self._observers.attempt_finished(self.record, attempt)

    def response_started(self, timing: ResponseTiming) -> None:
        self._observers.response_started(self.record, timing)

    def first_token(self) -> None:
        self.record.first_token_at = time.time()
        self._observers.first_token(self.record)

    def delivering(self, output: StreamOutput) -> None:
        """The stream's output as it is delivered: about once a second its progress is marked
        on the in-progress row, so that a process that dies mid-stream leaves an
        `interrupted` trace with the tokens it delivered (`Ledger.progress`)."""
        self._ledger.progress(self.record, output)

    def usage(
        self, input_tokens: int | None, output_tokens: int | None, *, estimated: bool
    ) -> None:
        record = self.record
        record.input_tokens = input_tokens
        record.output_tokens = output_tokens
        record.tokens_estimated = estimated
        if record.cache_hit is not None:
            record.cost_eur = 0.0
        elif self.endpoint is not None and input_tokens is not None and output_tokens is not None:
            record.cost_eur = self.endpoint.prices.cost(input_tokens, output_tokens)

    def cache_tokens(self, read: int | None, created: int | None) -> None:
        """The prompt cache's share of the input tokens, where the upstream reported it: the
        tokens read from it cost the provider's cached price (`cached_input`)."""
        record = self.record
        record.cache_read_tokens = read
        record.cache_creation_tokens = created
        used, produced = record.input_tokens, record.output_tokens
        if read and self.endpoint and record.cache_hit is None and used is not None:
            record.cost_eur = self.endpoint.prices.cost(used, produced or 0, cached_tokens=read)

    def ignored(self, features: str, *, kind: str = "features") -> None:
        """What the caller asked for that the gateway does not apply, by kind (request
        fields, beta features, policy notices): a kind said again replaces what it said."""
        self._ignored[kind] = features
        said = "; ".join(text for text in self._ignored.values() if text)
        self.record.ignored_features = said[:500] or None

    def dropped_tools(self, tools: list[str]) -> None:
        """The hosted tools left out of what the attempt's endpoint got (the last attempt's are
        the call's): in the routing block, and on the trace with the ignored features."""
        self._dropped = tools
        self.ignored(f"dropped tools: {', '.join(tools)}" if tools else "", kind="dropped_tools")

    @property
    def dropped(self) -> list[str]:
        return self._dropped

    def finish_reason(self, reason: str | None) -> None:
        self.record.finish_reason = reason

    def keep_content(self, prompt: object, completion: object) -> None:
        """Keep prompt and output only where the policy's `store_content` allows it; the
        output's digest (for the receipt) is kept either way."""
        if isinstance(completion, str) and completion:
            self._sensitive.append(completion)
        text = completion if isinstance(completion, str) else json.dumps(completion)
        record = self.record
        record.content_sha256 = hashlib.sha256(text.encode()).hexdigest()
        if not self._stores_content():
            return
        record.prompt = encoder.encode(prompt).decode()
        record.completion = text
        assert self.policy is not None
        record.content_expires_at = time.time() + self.policy.store_content.seconds

    def routing_block(self) -> RoutingBlock:
        record = self.record
        endpoint = self.endpoint
        assert endpoint is not None, "a routing block describes a served call"
        return RoutingBlock(
            trace_id=record.trace_id,
            model_used=endpoint.model,
            model_version=endpoint.model_version,
            provider=endpoint.provider,
            endpoint_id=endpoint.endpoint_id,
            inference_region=endpoint.inference_region,
            sovereignty_class=endpoint.sovereignty_class.value,
            policy_id=record.policy_id or "",
            retention=record.retention or endpoint.retention.text,
            cost_estimate=CostEstimate(
                currency="EUR",
                input_tokens=record.input_tokens,
                output_tokens=record.output_tokens,
                amount=record.cost_eur,
                estimated=record.tokens_estimated,
            ),
            cache=None
            if record.cache_hit is None or record.cache_source is None
            else CacheHit(True, record.cache_hit, record.cache_source, record.saved_eur),
            dropped_tools=self._dropped or None,
        )

    def error_routing(self) -> RoutingBlock | dict[str, str]:
        """The `llmeu` block of an error: full when an endpoint was chosen, else the trace id."""
        if self.endpoint is not None:
            return self.routing_block()
        return {"trace_id": self.trace_id}

    def finish(
        self, status: CallStatus, *, error: ApiError | None = None, http_status: int | None = None
    ) -> asyncio.Future[None]:
        """The final trace, queued for the ledger; returns the future of its durable write."""
        record = self.record
        record.status = status
        record.finished_at = time.time()
        keep = self._keep_metadata
        if self.policy is not None and self.policy.keep_metadata is not None:
            keep = self.policy.keep_metadata
        record.metadata_expires_at = record.received_at + keep.seconds
        if not self._stores_content():
            self._redact_errors(error)
        self._close_attempts(status, error)
        record.http_status = (
            http_status if http_status is not None else (error.status if error else 200)
        )
        if error is not None:
            record.error_type = error.type
            record.error_code = error.code
            record.error_message = error.message[:2000]
            if isinstance(error, NoCompliantRoute) and error.details:
                record.excluded = [dict(d) for d in error.details]
        self._observers.call_finished(record)
        return self._ledger.finish(record)

    async def durable(self, future: asyncio.Future[None]) -> None:
        """Wait until a record is durable; while the database is down (or goes down while
        waiting), don't hold the caller: the record waits in the ledger's buffer."""
        await self._ledger.durable(future, _DURABLE_WAIT)

    def _stores_content(self) -> bool:
        return self.policy is not None and self.policy.store_content.seconds > 0

    def _redact_errors(self, error: ApiError | None) -> None:
        """Scrub quoted content from what upstreams said: the call's error and every failed
        attempt's (an attempt that failed before a fallback succeeded quotes its upstream
        too). The gateway's own messages quote nothing and are left whole."""
        quoted = isinstance(error, UpstreamError) and error.quotes_upstream
        failed = [a for a in self._quoting if a.error is not None]
        messages = [a.error for a in failed if a.error is not None]
        if error is not None and quoted:
            messages.append(error.message)
        if not messages:
            return
        redacted = redact_all(messages, self._sensitive)
        for attempt, message in zip(failed, redacted, strict=False):
            attempt.error = message
        if error is not None and quoted:
            error.message = redacted[-1]
            error.args = (error.message,)

    def _close_attempts(self, status: CallStatus, error: ApiError | None) -> None:
        """The serving attempt ends with its call, cut short by a hang-up or a broken stream."""
        for attempt in self.record.attempts:
            if attempt.finished_at is None:
                attempt.finished_at = self.record.finished_at
            if attempt.outcome in ("served", "pending") and status is not CallStatus.COMPLETED:
                attempt.outcome = "cancelled" if status is CallStatus.CANCELLED else "failed"
                if error is not None:
                    attempt.error = error.message


@functools.lru_cache(maxsize=256)
def _policy_digest(policy: Policy) -> str:
    """SHA-256 of the policy as applied; policies are values, and few, so each is hashed once."""
    return policy_sha256(policy_document(policy))
