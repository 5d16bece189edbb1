"""The circuit breaker: time is passed in, so every transition is checked exactly."""

from __future__ import annotations

from llmeu.routing.breaker import CircuitBreaker
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
