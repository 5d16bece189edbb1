"""Metrics of the per-key limits, read at scrape time from the limiter's state.

An operator needs to see when limits are not enforced: while the limits store
(Redis) does not answer, limited calls are decided without their limits —
admitted (`limits_fail: open`) or refused (`limits_fail: closed`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric


class LimitsState(Protocol):
    """What the metrics read of the limiter's state (`llmeu.limits.limiter.LimitsState`)."""

    @property
    def degraded(self) -> bool: ...

    @property
    def unchecked_admitted(self) -> int: ...

    @property
    def unchecked_refused(self) -> int: ...


class LimitsCollector:
    def __init__(self, state: LimitsState):
        self._state = state

    def collect(self) -> Iterator[Metric]:
        state = self._state
        yield GaugeMetricFamily(
            "llmeu_limits_degraded",
            "1 while the limits store does not answer and limited calls go unchecked, else 0.",
            value=1 if state.degraded else 0,
        )
        unchecked = CounterMetricFamily(
            "llmeu_limits_unchecked_calls",
            "Limited calls decided without their limits while the limits store did not "
            "answer: admitted (limits_fail: open) or refused (limits_fail: closed).",
            labels=("outcome",),
        )
        unchecked.add_metric(("admitted",), state.unchecked_admitted)
        unchecked.add_metric(("refused",), state.unchecked_refused)
        yield unchecked
