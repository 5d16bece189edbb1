"""Labelled counters, gauges and histograms kept as plain numbers, exposed through a collector.

prometheus_client's metrics take a lock on every update, and a histogram
walks its buckets in Python: about 15 µs of every call's CPU for the dozen
updates a call makes. The call hooks all run on the gateway's event loop,
one thread, and a scrape reads the values on that same loop, so no lock is
needed: an update here is an attribute add, a histogram's bucket is found by
bisection. `SeriesCollector` hands the families to a prometheus_client
registry, which writes them exactly as it writes its own metrics of the same
name, type, labels and buckets (`_total`/`_created` for counters,
cumulative `_bucket` with `le`, `_count`, `_sum`, `_created` for histograms).

Not thread-safe by design: update these only from the event loop's thread.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar, cast

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

_go_float = cast(Callable[[float], str], floatToGoString)  # the `le` text Prometheus writes


class CounterValue:
    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter can only go up")
        self.value += amount


class GaugeValue:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = float(value)


class HistogramValue:
    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds  # ends with +Inf
        self.counts = [0] * len(bounds)  # per bucket, not cumulative
        self.sum = 0.0
        self.created = time.time()

    def observe(self, amount: float) -> None:
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.sum += amount


V = TypeVar("V", CounterValue, GaugeValue, HistogramValue)


class Family(Generic[V]):
    """One metric family; `family(*label_values)` is the series of those labels, made once."""

    kind = ""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = ()):
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.series: dict[tuple[str, ...], V] = {}
        if not self.labelnames:
            self.series[()] = self._new()

    def __call__(self, *values: str) -> V:
        series = self.series.get(values)
        if series is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values}")
            series = self.series[values] = self._new()
        return series

    def _new(self) -> V:
        raise NotImplementedError

    def metric(self) -> Metric:
        metric = Metric(self.name, self.documentation, self.kind)
        for values, series in self.series.items():
            labels = dict(zip(self.labelnames, values, strict=True))
            self._samples(metric, labels, series)
        return metric

    def _samples(self, metric: Metric, labels: dict[str, str], series: V) -> None:
        raise NotImplementedError


class CounterFamily(Family[CounterValue]):
    kind = "counter"

    def _new(self) -> CounterValue:
        return CounterValue()

    def _samples(self, metric: Metric, labels: dict[str, str], series: CounterValue) -> None:
        metric.add_sample(self.name + "_total", labels, series.value)
        metric.add_sample(self.name + "_created", labels, series.created)


class GaugeFamily(Family[GaugeValue]):
    kind = "gauge"

    def _new(self) -> GaugeValue:
        return GaugeValue()

    def _samples(self, metric: Metric, labels: dict[str, str], series: GaugeValue) -> None:
        metric.add_sample(self.name, labels, series.value)


class HistogramFamily(Family[HistogramValue]):
    kind = "histogram"

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]
    ):
        bounds = sorted(float(b) for b in buckets)
        if not bounds or bounds[-1] != math.inf:
            bounds.append(math.inf)
        self.bounds = tuple(bounds)
        self._les = tuple(_go_float(b) for b in bounds)
        super().__init__(name, documentation, labelnames)

    def _new(self) -> HistogramValue:
        return HistogramValue(self.bounds)

    def _samples(self, metric: Metric, labels: dict[str, str], series: HistogramValue) -> None:
        total = 0
        for le, count in zip(self._les, series.counts, strict=True):
            total += count
            metric.add_sample(self.name + "_bucket", {**labels, "le": le}, total)
        metric.add_sample(self.name + "_count", labels, total)
        metric.add_sample(self.name + "_sum", labels, series.sum)
        metric.add_sample(self.name + "_created", labels, series.created)


AnyFamily = CounterFamily | GaugeFamily | HistogramFamily


class SeriesCollector(Collector):
    """The families, for a prometheus_client registry."""

    def __init__(self, families: Sequence[AnyFamily]):
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        for family in self._families:
            yield family.metric()
