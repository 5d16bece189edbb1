"""A Redis that hangs: a redis-server of the test's own, stopped with SIGSTOP.

The first limited call waits one short timeout, well under the old 5 s; then
no call waits on Redis until a background probe finds it answering again.
Meanwhile limited calls are admitted unchecked or refused, as the key's policy
says, and operators see it: the state, the metrics, one log line per change.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry

from llmeu.errors import LimitsUnavailable, RateLimited
from llmeu.limits import Quota
from llmeu.limits.redis import SPEND_KEY, RedisLimiter
from llmeu.observability.limits_metrics import LimitsCollector
from llmeu.routing.policy import LimitsFail
from tests.support.processes import free_port
from tests.support.waiting import until

TIMEOUT = 0.25
PROBE_INTERVAL = 0.1
# The contract: one call pays at most about one timeout, never the old 5 s.
ONE_TIMEOUT_AT_MOST = 1.5


@dataclass
class StoppableRedis:
    proc: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture
def redis_server() -> Iterator[StoppableRedis]:
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not answers(port):
        assert time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.02)
    yield StoppableRedis(proc, f"redis://127.0.0.1:{port}/0")
    os.kill(proc.pid, signal.SIGCONT)
    proc.terminate()
    proc.wait(timeout=10)


LEDGER_SPEND: dict[str, float] = {}


async def ledger_spend() -> Mapping[str, float]:
    return LEDGER_SPEND


@pytest.fixture
async def limiter(redis_server: StoppableRedis) -> AsyncIterator[RedisLimiter]:
    built = RedisLimiter(redis_server.url, timeout=TIMEOUT, probe_interval=PROBE_INTERVAL)
    await built.start(ledger_spend)
    yield built
    redis_server.resume()
    await built.aclose()


def metrics(limiter: RedisLimiter) -> dict[tuple[str, str], float]:
    registry = CollectorRegistry()
    registry.register(LimitsCollector(limiter.state))
    return {
        (sample.name, sample.labels.get("outcome", "")): sample.value
        for family in registry.collect()
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


def limit_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "llmeu.limits"]


async def timed_admit(
    limiter: RedisLimiter, quota: Quota, limits_fail: LimitsFail = LimitsFail.OPEN
) -> float:
    started = time.monotonic()
    await limiter.admit(quota, 1, limits_fail=limits_fail)
    return time.monotonic() - started


async def test_a_hung_redis_costs_one_short_timeout_then_calls_go_unchecked(
    limiter: RedisLimiter, redis_server: StoppableRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="llmeu.limits")
    quota = Quota("k-outage", rpm=1000)
    await timed_admit(limiter, quota)
    assert limiter.state.status == "ok"

    redis_server.stop()
    assert await timed_admit(limiter, quota) < ONE_TIMEOUT_AT_MOST
    assert limiter.state.status == "degraded"
    started = time.monotonic()
    for _ in range(20):
        await limiter.admit(quota, 1)
    assert time.monotonic() - started < TIMEOUT, "20 calls together wait less than one timeout"
    assert metrics(limiter) == {
        ("llmeu_limits_degraded", ""): 1,
        ("llmeu_limits_unchecked_calls_total", "admitted"): 21,
        ("llmeu_limits_unchecked_calls_total", "refused"): 0,
    }
    [degraded] = limit_logs(caplog)
    assert "Redis does not answer" in degraded and "TimeoutError" in degraded

    redis_server.resume()
    await until(lambda: limiter.state.status == "ok", timeout=10, what="the probe")
    assert metrics(limiter)[("llmeu_limits_degraded", "")] == 0
    checked = Quota("k-checked-again", rpm=2)
    await limiter.admit(checked, 1)
    await limiter.admit(checked, 1)
    with pytest.raises(RateLimited):
        await limiter.admit(checked, 1)
    _, recovered = limit_logs(caplog)
    assert "answers again" in recovered and "21 limited calls were admitted unchecked" in recovered


async def test_a_policy_that_fails_closed_refuses_at_once_with_a_503(
    limiter: RedisLimiter, redis_server: StoppableRedis
) -> None:
    quota = Quota("k-closed", budget_eur=10.0)
    redis_server.stop()
    with pytest.raises(LimitsUnavailable) as refused:
        await limiter.admit(quota, 1, limits_fail=LimitsFail.CLOSED)
    assert (refused.value.status, refused.value.code) == (503, "limits_unavailable")
    assert refused.value.retry_after == PROBE_INTERVAL
    assert "limits_fail: closed" in refused.value.message
    started = time.monotonic()
    for _ in range(20):
        with pytest.raises(LimitsUnavailable):
            await limiter.admit(quota, 1, limits_fail=LimitsFail.CLOSED)
    await limiter.admit(Quota("k-unlimited"), 1, limits_fail=LimitsFail.CLOSED)
    assert time.monotonic() - started < TIMEOUT
    assert metrics(limiter)[("llmeu_limits_unchecked_calls_total", "refused")] == 21


async def test_spend_missed_during_the_outage_is_copied_again_from_the_ledger(
    limiter: RedisLimiter, redis_server: StoppableRedis
) -> None:
    quota = Quota("k-budget", budget_eur=1.0)
    LEDGER_SPEND[quota.key_id] = 0.0
    admission = await limiter.admit(quota, 1)
    assert await limiter.redis.hget(SPEND_KEY, quota.key_id) == b"0.0"

    redis_server.stop()
    await limiter.admit(quota, 1)  # trips the breaker
    limiter.settle(admission, 10, 1.5)  # Redis never hears of it
    LEDGER_SPEND[quota.key_id] = 1.5  # the ledger does
    redis_server.resume()
    await until(lambda: limiter.state.status == "ok", timeout=10, what="the probe")
    assert await limiter.redis.hget(SPEND_KEY, quota.key_id) is None
    with pytest.raises(RateLimited) as spent:
        await limiter.admit(quota, 1)
    assert spent.value.code == "insufficient_quota"


async def test_a_redis_that_hangs_at_start_starts_degraded(
    redis_server: StoppableRedis,
) -> None:
    redis_server.stop()
    limiter = RedisLimiter(redis_server.url, timeout=TIMEOUT, probe_interval=PROBE_INTERVAL)
    await limiter.start(ledger_spend)
    assert limiter.state.status == "degraded"
    redis_server.resume()
    await until(lambda: limiter.state.status == "ok", timeout=10, what="the probe")
    await limiter.aclose()
