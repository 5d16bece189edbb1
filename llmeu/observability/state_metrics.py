"""Gauges read at scrape time from state the gateway keeps anyway: endpoint
health and the ledger's write buffer. Nothing is counted on the request path."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from llmeu.routing.breaker import CircuitBreaker


class LedgerState(Protocol):
    """What the metrics read of the ledger's writer (`llmeu.ledger.writer.Ledger`)."""

    @property
    def depth(self) -> int: ...

    @property
    def healthy(self) -> bool: ...

    @property
    def last_batch_seconds(self) -> float: ...

    @property
    def batches(self) -> int: ...


class GatewayStateCollector:
    def __init__(
        self,
        breaker: CircuitBreaker,
        ledger: LedgerState,
        endpoint_ids: Sequence[str],
        clock: Callable[[], float] = time.monotonic,
    ):
        self._breaker = breaker
        self._ledger = ledger
        self._endpoint_ids = tuple(endpoint_ids)
        self._clock = clock

    def collect(self) -> Iterator[Metric]:
        yield from self._breakers()
        ledger = self._ledger
        yield GaugeMetricFamily(
            "llmeu_ledger_buffer_depth",
            "Trace rows queued for the database (new calls are refused when it is full).",
            value=ledger.depth,
        )
        yield GaugeMetricFamily(
            "llmeu_ledger_healthy",
            "1 while the database accepts writes, 0 while rows are buffered for retry.",
            value=1 if ledger.healthy else 0,
        )
        yield GaugeMetricFamily(
            "llmeu_ledger_last_write_seconds",
            "Duration of the most recent group commit.",
            value=ledger.last_batch_seconds,
        )
        yield CounterMetricFamily(
            "llmeu_ledger_writes", "Group commits written.", value=ledger.batches
        )

    def _breakers(self) -> Iterator[Metric]:
        state = GaugeMetricFamily(
            "llmeu_circuit_breaker_state",
            "Circuit breaker per endpoint: 0 closed, 1 half-open (probing), 2 open.",
            labels=("endpoint",),
        )
        failures = GaugeMetricFamily(
            "llmeu_circuit_breaker_consecutive_failures",
            "Retryable failures of an endpoint since its last success.",
            labels=("endpoint",),
        )
        now = self._clock()
        for endpoint_id in self._endpoint_ids:
            state.add_metric((endpoint_id,), int(self._breaker.health(endpoint_id, now)))
            count = self._breaker.describe(endpoint_id, now)["consecutive_failures"]
            failures.add_metric((endpoint_id,), count if isinstance(count, int) else 0)
        yield state
        yield failures
