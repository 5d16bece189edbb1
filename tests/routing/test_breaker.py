"""The circuit breaker: time is passed in, so every transition is checked exactly."""

from __future__ import annotations

from typing import Any

import pytest

from llmeu.errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable
from llmeu.routing.breaker import CircuitBreaker, FailureKind, failure_kind
from llmeu.routing.router import Health


def breaker() -> CircuitBreaker:
    return CircuitBreaker(failure_threshold=3, cooldown=10.0)


def test_opens_after_the_threshold_of_consecutive_failures() -> None:
    b = breaker()
    b.failed("a", 0.0)
    b.failed("a", 1.0)
    assert b.health("a", 1.0) is Health.HEALTHY
    b.failed("a", 2.0)
    assert b.health("a", 2.0) is Health.OPEN
    assert b.snapshot(2.0) == {"a": Health.OPEN}
    assert b.describe("a", 2.0) == {"state": "open", "consecutive_failures": 3}


def test_a_success_resets_the_count() -> None:
    b = breaker()
    b.failed("a", 0.0)
    b.failed("a", 0.0)
    b.succeeded("a")
    b.failed("a", 0.0)
    assert b.health("a", 0.0) is Health.HEALTHY
    assert b.snapshot(0.0) == {}


def test_after_the_cooldown_one_probe_is_let_through() -> None:
    b = breaker()
    for _ in range(3):
        b.failed("a", 0.0)
    assert b.health("a", 9.9) is Health.OPEN
    assert b.health("a", 10.0) is Health.PROBING
    b.attempt_started("a", 10.0)
    assert b.health("a", 10.5) is Health.OPEN, "others wait for the probe"
    b.succeeded("a")
    assert b.health("a", 10.5) is Health.HEALTHY


def test_a_failed_probe_opens_the_circuit_for_another_cooldown() -> None:
    b = breaker()
    for _ in range(3):
        b.failed("a", 0.0)
    b.attempt_started("a", 10.0)
    b.failed("a", 11.0)
    assert b.health("a", 20.9) is Health.OPEN
    assert b.health("a", 21.0) is Health.PROBING


def test_a_probe_that_never_reports_frees_the_endpoint_after_a_cooldown() -> None:
    b = breaker()
    for _ in range(3):
        b.failed("a", 0.0)
    b.attempt_started("a", 10.0)
    assert b.health("a", 19.9) is Health.OPEN
    assert b.health("a", 20.0) is Health.PROBING


def test_endpoints_are_independent() -> None:
    b = breaker()
    for _ in range(3):
        b.failed("a", 0.0)
    assert b.health("b", 0.0) is Health.HEALTHY
    assert b.describe("b", 0.0) == {"state": "closed", "consecutive_failures": 0}


# Who opens a circuit. Events, one second apart: ("call", key) an attempt starts,
# (kind, key) it fails, ("ok", key) it succeeds, ("wait", seconds) time passes.
# Threshold 3, callers remembered for 60 s.
FAIRNESS = [
    pytest.param([("call", "A"), ("5xx", "A"), ("5xx", "A"), ("5xx", "A")], "open", ["A"],
                 id="5xx-from-the-only-caller"),
    pytest.param([("call", "B"), ("call", "A"), ("5xx", "A"), ("5xx", "A"), ("5xx", "A")],
                 "closed", [], id="5xx-from-one-key-while-another-calls"),
    pytest.param([("call", "B"), ("wait", 61), ("call", "A"), ("5xx", "A"), ("5xx", "A"),
                  ("5xx", "A")], "open", ["A"], id="5xx-after-the-other-caller-left"),
    pytest.param([("call", "B"), ("call", "A"), ("5xx", "A"), ("5xx", "A"), ("5xx", "B")],
                 "open", ["A", "B"], id="5xx-from-two-keys"),
    pytest.param([("call", "B"), ("call", "A"), ("429", "A"), ("429", "A"), ("429", "A")],
                 "closed", [], id="429-from-one-key-while-another-calls"),
    pytest.param([("call", "B"), ("call", "A"), ("conn", "A"), ("conn", "A"), ("conn", "A")],
                 "open", ["A"], id="connection-errors-from-one-key"),
    pytest.param([("call", "B"), ("call", "A"), ("timeout", "A"), ("timeout", "A"),
                  ("timeout", "A")], "open", ["A"], id="timeouts-from-one-key"),
    pytest.param([("call", "B"), ("call", "A"), ("401", "A"), ("401", "A"), ("401", "A")],
                 "open", ["A"], id="credentials-refused"),
    pytest.param([("call", "B"), ("call", "A"), ("5xx", "A"), ("5xx", "A"), ("timeout", "A")],
                 "closed", [], id="one-timeout-and-uncorroborated-5xx"),
    pytest.param([("call", "B"), ("call", "A"), ("5xx", "A"), ("timeout", "A"), ("5xx", "B")],
                 "open", ["A", "B"], id="a-second-key-corroborates-the-streak"),
    pytest.param([("call", "A"), ("5xx", "A"), ("5xx", "A"), ("ok", "B"), ("5xx", "A")],
                 "closed", [], id="a-success-ends-the-streak"),
    pytest.param([("fail", None), ("fail", None), ("fail", None)], "open", [],
                 id="unclassified-without-key-counts-as-before"),
    pytest.param([("call", "B"), ("5xx", None), ("5xx", None), ("5xx", None)], "open", [],
                 id="5xx-without-key-counts-as-before"),
]  # fmt: skip
KINDS = {
    "5xx": FailureKind.SERVER_ERROR,
    "429": FailureKind.RATE_LIMITED,
    "conn": FailureKind.CONNECTION,
    "timeout": FailureKind.TIMEOUT,
    "401": FailureKind.REFUSED,
}


@pytest.mark.parametrize(("events", "state", "opened_by"), FAIRNESS)
def test_which_failures_open_the_circuit(
    events: list[tuple[str, Any]], state: str, opened_by: list[str]
) -> None:
    b = breaker()
    now = 0.0
    for event, value in events:
        now += 1
        if event == "wait":
            now += value
        elif event == "call":
            b.attempt_started("e", now, key_id=value)
        elif event == "ok":
            b.attempt_started("e", now, key_id=value)
            b.succeeded("e")
        elif event == "fail":
            b.failed("e", now)
        else:
            b.failed("e", now, kind=KINDS[event], key_id=value)
    described = b.describe("e", now, keys=True)
    assert (described["state"], described["opened_by"]) == (state, opened_by)


def test_the_keys_are_shown_only_when_asked() -> None:
    b = breaker()
    b.attempt_started("e", 0.0, key_id="kA")
    for _ in range(3):
        b.failed("e", 1.0, kind=FailureKind.SERVER_ERROR, key_id="kA")
    assert b.describe("e", 1.0) == {"state": "open", "consecutive_failures": 3}
    assert b.describe("e", 1.0, keys=True) == {
        "state": "open", "consecutive_failures": 3, "failing_keys": ["kA"], "opened_by": ["kA"],
    }  # fmt: skip
    b.attempt_started("e", 11.0, key_id="kB")  # the probe
    b.succeeded("e")
    assert b.describe("e", 11.0, keys=True)["opened_by"] == []


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        pytest.param(UpstreamUnavailable("refused"), FailureKind.CONNECTION, id="connection"),
        pytest.param(UpstreamTimeout("no first token"), FailureKind.TIMEOUT, id="timeout"),
        pytest.param(UpstreamTimeout("408", upstream_status=408), FailureKind.TIMEOUT, id="408"),
        pytest.param(UpstreamUnavailable("503", upstream_status=503), FailureKind.SERVER_ERROR,
                     id="503"),
        pytest.param(UpstreamUnavailable("429", upstream_status=429), FailureKind.RATE_LIMITED,
                     id="429"),
        pytest.param(UpstreamError("401", upstream_status=401, retryable=True),
                     FailureKind.REFUSED, id="401"),
        pytest.param(UpstreamError("404", upstream_status=404, retryable=True),
                     FailureKind.REFUSED, id="404"),
        pytest.param(UpstreamError("odd", retryable=True), FailureKind.UNCLASSIFIED,
                     id="unclassified"),
    ],
)  # fmt: skip
def test_failure_kind_of_an_upstream_error(error: UpstreamError, kind: FailureKind) -> None:
    assert failure_kind(error) is kind
