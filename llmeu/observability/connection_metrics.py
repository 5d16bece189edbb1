"""The server's connections, read at scrape time from the counts its guard keeps anyway
(`llmeu.server.connection_guard`): nothing is counted for the metrics on the request path.
Counts are per process, as the guard's are: with `--workers N`, per worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric


class ConnectionState(Protocol):
    """What the metrics read of the connection guard."""

    @property
    def capacity(self) -> int: ...

    def __len__(self) -> int: ...

    @property
    def refused_per_client(self) -> int: ...

    @property
    def refused_busy(self) -> int: ...

    @property
    def refused_proxy_protocol(self) -> int: ...

    @property
    def evicted(self) -> int: ...

    @property
    def head_timeouts(self) -> int: ...


class ConnectionsCollector:
    def __init__(self, guard: ConnectionState):
        self._guard = guard

    def collect(self) -> Iterator[Metric]:
        guard = self._guard
        yield GaugeMetricFamily(
            "llmeu_connections_open", "Client connections this process holds open.",
            value=len(guard),
        )  # fmt: skip
        yield GaugeMetricFamily(
            "llmeu_connections_capacity",
            "Connections this process holds at most before it evicts an idle one or refuses.",
            value=guard.capacity,
        )
        refused = CounterMetricFamily(
            "llmeu_connections_refused",
            "Connections refused at once: per_client (429, the address holds its cap), busy "
            "(503, every connection held is answering) or proxy_protocol (closed: not from a "
            "trusted proxy, or no valid PROXY header first).",
            labels=("reason",),
        )
        refused.add_metric(("per_client",), guard.refused_per_client)
        refused.add_metric(("busy",), guard.refused_busy)
        refused.add_metric(("proxy_protocol",), guard.refused_proxy_protocol)
        yield refused
        yield CounterMetricFamily(
            "llmeu_connections_evicted",
            "Idle connections closed to make room for a new one.",
            value=guard.evicted,
        )
        yield CounterMetricFamily(
            "llmeu_connections_head_timeouts",
            "Connections whose request head did not arrive in time: closed, with a 408 when "
            "part of it had come.",
            value=guard.head_timeouts,
        )
