"""One call's lifecycle: its trace, its attempts, its routing block and its cost.

Every call that passed authentication gets exactly one trace: `open_call`
creates it, `Call.attempt` runs one endpoint and records the attempt, and one
of `finish`/`reject` closes it and returns the future of its durable write.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from llmeu.api.gateway import Gateway
from llmeu.api.http import Headers, Request
from llmeu.api.redaction import redact_all
from llmeu.errors import ApiError, NoCompliantRoute, ServiceUnavailable, UpstreamError
from llmeu.ledger.records import ApiKey, Attempt, CallStatus, TraceRecord, new_trace_id
from llmeu.limits import Admission, Quota
from llmeu.observability.timing import ResponseTiming
from llmeu.protocol.wire import (
    ChatCompletionRequest,
    CostEstimate,
    RoutingBlock,
    encoder,
    text_of,
)
from llmeu.routing.catalog import Endpoint
from llmeu.routing.policy import Policy
from llmeu.routing.router import RoutePlan

T = TypeVar("T")
_DURABLE_WAIT = 10.0


class Call:
    __slots__ = (
        "admission", "endpoint", "gw", "key", "opened", "plan", "policy", "record", "sensitive",
        "upstream_seconds",
    )  # fmt: skip

    def __init__(self, gw: Gateway, key: ApiKey, route: str):
        self.gw = gw
        self.key = key
        self.record = TraceRecord(
            trace_id=new_trace_id(),
            key_id=key.key_id,
            route=route,
            request_model="",
            stream=False,
            received_at=time.time(),
            instance_id=gw.instance_id,
        )
        self.policy: Policy | None = None
        self.plan: RoutePlan | None = None
        self.endpoint: Endpoint | None = None
        self.admission: Admission | None = None
        self.sensitive: list[str] = []  # prompt and output text, kept out of error messages
        self.opened = time.perf_counter()
        self.upstream_seconds = 0.0  # spent inside attempts, for the overhead headers

    @property
    def trace_id(self) -> str:
        return self.record.trace_id

    def governed_by(self, policy: Policy) -> None:
        self.policy = policy
        self.record.policy_id = policy.policy_id

    def routed(self, plan: RoutePlan) -> None:
        self.plan = plan
        self.policy = plan.policy
        self.record.policy_id = plan.policy.policy_id
        self.record.excluded = [x.as_dict() for x in plan.excluded]

    async def admit(self, prompt_tokens: Callable[[], int]) -> None:
        """The key's limits (requests and tokens per minute, budget); 429 when over one.
        The prompt is counted only for a key with a tokens-per-minute limit."""
        key = self.key
        quota = Quota(key.key_id, key.rpm_limit, key.tpm_limit, key.budget_eur)
        tokens = prompt_tokens() if key.tpm_limit is not None else 0
        self.admission = await self.gw.limits.admit(quota, tokens)

    def begin(self) -> asyncio.Future[None]:
        """Record the call as in progress (so a crash leaves it `interrupted`)."""
        return self.gw.ledger.begin(self.record)

    async def attempt(self, endpoint: Endpoint, run: Callable[[], Awaitable[T]]) -> T:
        """Run one endpoint; the attempt and the endpoint's health are recorded either way."""
        now = time.time()
        attempt = Attempt(endpoint.endpoint_id, endpoint.provider, started_at=now)
        self.record.attempts.append(attempt)
        breaker = self.gw.breaker
        breaker.attempt_started(endpoint.endpoint_id, time.monotonic())
        observers = self.gw.observers
        observers.attempt_started(self.record, attempt)
        waiting = time.perf_counter()
        try:
            result = await run()
        except UpstreamError as error:
            attempt.finished_at = time.time()
            attempt.outcome = "failed"
            attempt.error = error.message
            attempt.upstream_status = error.upstream_status
            if error.retryable:
                breaker.failed(endpoint.endpoint_id, time.monotonic())
            observers.attempt_finished(self.record, attempt)
            raise
        except asyncio.CancelledError:
            attempt.finished_at = time.time()
            attempt.outcome = "cancelled"
            observers.attempt_finished(self.record, attempt)
            raise
        finally:
            self.upstream_seconds += time.perf_counter() - waiting
        attempt.outcome = "served"
        breaker.succeeded(endpoint.endpoint_id)
        self.served_by(endpoint)
        observers.attempt_finished(self.record, attempt)
        return result

    def served_by(self, endpoint: Endpoint) -> None:
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

    def response_headers(self, headers: Headers) -> Headers:
        """`headers` plus the trace id and the gateway's overhead up to this response start."""
        timing = ResponseTiming(time.perf_counter() - self.opened, self.upstream_seconds)
        self.gw.observers.response_started(self.record, timing)
        return [*headers, (b"x-llmeu-trace-id", self.trace_id.encode()), *timing.headers()]

    def account(self, input_tokens: int | None, output_tokens: int | None, estimated: bool) -> None:
        record = self.record
        record.input_tokens = input_tokens
        record.output_tokens = output_tokens
        record.tokens_estimated = estimated
        if self.endpoint is not None and input_tokens is not None and output_tokens is not None:
            record.cost_eur = self.endpoint.prices.cost(input_tokens, output_tokens)

    def store_content(self, prompt: object, completion: object) -> None:
        """Keep prompt and output only where the policy's `store_content` allows it."""
        if isinstance(completion, str) and completion:
            self.sensitive.append(completion)
        if self.policy is None or self.policy.store_content.seconds <= 0:
            return
        record = self.record
        record.prompt = encoder.encode(prompt).decode()
        record.completion = completion if isinstance(completion, str) else json.dumps(completion)
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
        )

    def error_routing(self) -> RoutingBlock | dict[str, str]:
        """The `llmeu` block of an error: full when an endpoint was chosen, else the trace id."""
        if self.endpoint is not None:
            return self.routing_block()
        return {"trace_id": self.trace_id}

    def finish(
        self, status: CallStatus, *, error: ApiError | None = None, http_status: int | None = None
    ) -> asyncio.Future[None]:
        record = self.record
        record.status = status
        record.finished_at = time.time()
        if self.policy is None or self.policy.store_content.seconds <= 0:
            self._redact_errors(error)
        self._close_attempts(status, error)
        record.http_status = (
            http_status if http_status is not None else (error.status if error else 200)
        )
        if error is not None:
            record.error_type = error.type
            record.error_code = error.code
            record.error_message = error.message[:2000]
        gw = self.gw
        gw.inflight.pop(record.trace_id, None)
        if self.admission is not None:
            used = (record.input_tokens or 0) + (record.output_tokens or 0)
            gw.limits.settle(self.admission, used, record.cost_eur)
        gw.observers.call_finished(record)
        return gw.ledger.finish(record)

    def _redact_errors(self, error: ApiError | None) -> None:
        """Scrub quoted content from the call's error and from every failed attempt's
        (an attempt that failed before a fallback succeeded quotes its upstream too)."""
        failed = [a for a in self.record.attempts if a.error is not None]
        messages = [a.error for a in failed if a.error is not None]
        if error is not None:
            messages.append(error.message)
        if not messages:
            return
        redacted = redact_all(messages, self.sensitive)
        for attempt, message in zip(failed, redacted, strict=False):
            attempt.error = message
        if error is not None:
            error.message = redacted[-1]

    def _close_attempts(self, status: CallStatus, error: ApiError | None) -> None:
        """The serving attempt ends with its call, cut short by a hang-up or a broken stream."""
        for attempt in self.record.attempts:
            if attempt.finished_at is None:
                attempt.finished_at = self.record.finished_at
            if attempt.outcome in ("served", "pending") and status is not CallStatus.COMPLETED:
                attempt.outcome = "cancelled" if status is CallStatus.CANCELLED else "failed"
                if error is not None:
                    attempt.error = error.message

    @property
    def open(self) -> bool:
        return self.record.status is CallStatus.IN_PROGRESS

    def reject(self, error: ApiError) -> asyncio.Future[None]:
        if isinstance(error, NoCompliantRoute) and error.details:
            self.record.excluded = [dict(d) for d in error.details]
        return self.finish(CallStatus.REJECTED, error=error)


def shutting_down() -> ServiceUnavailable:
    """What a call still running when the shutdown grace ran out is told (and recorded)."""
    return ServiceUnavailable(
        "the gateway is shutting down and ended the call before it finished",
        code="gateway_shutdown",
    )


def open_call(gw: Gateway, key: ApiKey, route: str, request: Request) -> Call:
    if not gw.accepting:
        raise ServiceUnavailable("the gateway is shutting down", code="shutting_down")
    if gw.ledger.full:
        raise ServiceUnavailable(
            "the ledger cannot record calls right now; refusing new calls rather than serve "
            "calls it cannot record",
            code="ledger_unavailable",
        )
    call = Call(gw, key, route)
    request.call = call
    task = asyncio.current_task()
    if task is not None:
        gw.inflight[call.trace_id] = task
    gw.observers.call_started(call.record, request.headers)
    return call


async def durable(gw: Gateway, future: asyncio.Future[None]) -> None:
    """Wait until a record is durable; while the database is down (or goes down while
    waiting), don't hold the caller: the record waits in the ledger's buffer."""
    await gw.ledger.durable(future, _DURABLE_WAIT)


def estimate_tokens(text: str) -> int:
    """The gateway's own count when the upstream reported none: ~4 characters a token."""
    return tokens_for_characters(len(text))


def tokens_for_characters(characters: int) -> int:
    return math.ceil(characters / 4)


def estimate_prompt_tokens(chat: ChatCompletionRequest) -> int:
    """Prompt text and tool definitions at ~4 characters a token, plus 3 per message."""
    text = "".join(text_of(m) for m in chat.messages)
    tools = encoder.encode(chat.tools).decode() if chat.tools else ""
    return estimate_tokens(text + tools) + 3 * len(chat.messages)
