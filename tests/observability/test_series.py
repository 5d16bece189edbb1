"""The call metrics' own series are written exactly as prometheus_client writes its metrics."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.openmetrics import exposition

from llmeu.observability.series import (
    CounterFamily,
    GaugeFamily,
    HistogramFamily,
    SeriesCollector,
)

BUCKETS = (0.001, 0.01, 0.1, 1.0, 10.0)
LABELS = st.sampled_from([("a", "x"), ("b", "x"), ("a", "y")])
AMOUNTS = st.floats(min_value=0, max_value=100, allow_nan=False) | st.sampled_from(BUCKETS)
generate_openmetrics = cast(Callable[[CollectorRegistry], bytes], exposition.generate_latest)
UPDATES = st.lists(
    st.tuples(st.sampled_from(["counter", "gauge", "histogram"]), LABELS, AMOUNTS), max_size=40
)


def without_created(text: bytes) -> list[str]:
    """The exposition minus `_created` values, which are each side's own clock."""
    return [line for line in text.decode().splitlines() if "_created" not in line]


@settings(max_examples=60, deadline=None)
@given(UPDATES)
def test_the_same_updates_give_the_same_exposition(
    updates: list[tuple[str, tuple[str, str], float]],
) -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    names = ("kind", "where")
    counter = Counter("t_requests", "Requests.", names, registry=theirs)
    gauge = Gauge("t_open", "Open.", names, registry=theirs)
    histogram = Histogram("t_seconds", "Seconds.", names, buckets=BUCKETS, registry=theirs)
    plain = Gauge("t_streams", "Streams.", registry=theirs)
    my_counter = CounterFamily("t_requests", "Requests.", names)
    my_gauge = GaugeFamily("t_open", "Open.", names)
    my_histogram = HistogramFamily("t_seconds", "Seconds.", names, BUCKETS)
    my_plain = GaugeFamily("t_streams", "Streams.")
    ours.register(SeriesCollector([my_counter, my_gauge, my_histogram, my_plain]))
    for kind, labels, amount in updates:
        if kind == "counter":
            counter.labels(*labels).inc(amount)
            my_counter(*labels).inc(amount)
        elif kind == "gauge":
            gauge.labels(*labels).dec(amount)
            my_gauge(*labels).dec(amount)
            plain.inc(amount)
            my_plain().inc(amount)
        else:
            histogram.labels(*labels).observe(amount)
            my_histogram(*labels).observe(amount)
    assert without_created(generate_latest(ours)) == without_created(generate_latest(theirs))
    assert without_created(generate_openmetrics(ours)) == without_created(
        generate_openmetrics(theirs)
    )


def test_an_observation_on_a_bound_counts_in_that_bucket() -> None:
    family = HistogramFamily("t_seconds", "Seconds.", (), (0.1, 1.0))
    series = family()
    for amount in (0.1, 1.0, 1.5, math.inf):
        series.observe(amount)
    assert series.counts == [1, 1, 2]


def test_a_counter_never_goes_down_and_labels_are_checked() -> None:
    family = CounterFamily("t_requests", "Requests.", ("kind",))
    with pytest.raises(ValueError, match="only go up"):
        family("a").inc(-1)
    with pytest.raises(ValueError, match="takes labels"):
        family("a", "b")
