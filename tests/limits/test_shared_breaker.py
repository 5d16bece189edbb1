"""The circuit breaker shared through the real Redis: two breakers play two gateway processes.

Each test uses a key prefix of its own and deletes what it wrote.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable

import pytest

from llmeu.limits.shared_breaker import SharedCircuitBreaker
from llmeu.routing.breaker import FailureKind

pytestmark = pytest.mark.redis

REDIS_URL = "redis://127.0.0.1:6379/0"
ENDPOINT = "fakeprov-fr-a"
Processes = Callable[[], SharedCircuitBreaker]


@pytest.fixture
async def processes() -> AsyncIterator[Processes]:
    prefix = f"llmeu-test:{secrets.token_hex(6)}:health:"
    built: list[SharedCircuitBreaker] = []

    def process() -> SharedCircuitBreaker:
        breaker = SharedCircuitBreaker(REDIS_URL, failure_threshold=3, cooldown=10.0, prefix=prefix)
        built.append(breaker)
        return breaker

    yield process
    cleaner = built[0].redis
    async for key in cleaner.scan_iter(match=f"{prefix}*"):
        await cleaner.delete(key)
    for breaker in built:
        await breaker.aclose()


async def settled(*breakers: SharedCircuitBreaker) -> None:
    """Every write reached Redis, then every process adopted the shared state."""
    for breaker in breakers:
        if breaker._pending:
            await asyncio.wait(breaker._pending)
    for breaker in breakers:
        await breaker.sync([ENDPOINT])


def fail(breaker: SharedCircuitBreaker, key_id: str, kind: FailureKind, times: int = 1) -> None:
    for _ in range(times):
        breaker.attempt_started(ENDPOINT, 1.0, key_id=key_id)
        breaker.failed(ENDPOINT, 1.0, kind=kind, key_id=key_id)


def state(breaker: SharedCircuitBreaker) -> tuple[object, object]:
    described = breaker.describe(ENDPOINT, 1.0, keys=True)
    return described["state"], described["opened_by"]


async def test_one_keys_5xx_do_not_open_it_while_another_process_sees_another_caller(
    processes: Processes,
) -> None:
    first, second = processes(), processes()
    second.attempt_started(ENDPOINT, 0.0, key_id="kB")
    await settled(second)
    fail(first, "kA", FailureKind.SERVER_ERROR, times=3)
    assert state(first) == ("closed", []), "one key alone never opens it locally"
    await settled(first, second)
    assert state(first) == state(second) == ("closed", [])
    assert first.describe(ENDPOINT, 1.0)["consecutive_failures"] == 3
    fail(second, "kB", FailureKind.SERVER_ERROR)
    await settled(first, second)
    assert state(first) == state(second) == ("open", ["kA", "kB"])


async def test_the_only_caller_opens_it_for_every_process(processes: Processes) -> None:
    first, second = processes(), processes()
    fail(first, "kA", FailureKind.SERVER_ERROR, times=3)
    await settled(first, second)
    assert state(first) == state(second) == ("open", ["kA"])


async def test_connection_errors_open_it_whoever_else_calls(processes: Processes) -> None:
    first, second = processes(), processes()
    second.attempt_started(ENDPOINT, 0.0, key_id="kB")
    await settled(second)
    fail(first, "kA", FailureKind.CONNECTION, times=2)
    fail(second, "kA", FailureKind.TIMEOUT)
    await settled(first, second)
    assert state(first) == state(second) == ("open", ["kA"])


async def test_a_success_anywhere_ends_the_streak(processes: Processes) -> None:
    first, second = processes(), processes()
    fail(first, "kA", FailureKind.CONNECTION, times=2)
    await settled(first, second)
    second.succeeded(ENDPOINT)
    fail(first, "kA", FailureKind.CONNECTION)
    await settled(first, second)
    assert state(second) == ("closed", [])
    assert second.describe(ENDPOINT, 1.0)["consecutive_failures"] == 1


async def test_failures_without_kind_or_key_count_as_before(processes: Processes) -> None:
    first, second = processes(), processes()
    for _ in range(3):
        first.failed(ENDPOINT, 1.0)
    await settled(first, second)
    assert state(second) == ("open", [])
