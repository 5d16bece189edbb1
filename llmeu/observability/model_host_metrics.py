"""The model host as this gateway process sees it, read at scrape time from its link
(`llmeu.providers.host_link`): whether it answers, and how often its keeper restarted it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric


class ModelHostState(Protocol):
    @property
    def up(self) -> bool: ...

    @property
    def restarts(self) -> int: ...


class ModelHostCollector:
    def __init__(self, host: ModelHostState):
        self._host = host

    def collect(self) -> Iterator[Metric]:
        host = self._host
        yield GaugeMetricFamily(
            "llmeu_model_host_up",
            "1 while the process running the local models answers, 0 while it is down.",
            value=1 if host.up else 0,
        )
        yield CounterMetricFamily(
            "llmeu_model_host_restarts",
            "Times the local models' process was restarted after it exited or stopped answering.",
            value=host.restarts,
        )
