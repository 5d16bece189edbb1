"""The connection guard's arithmetic: caps per address and in all, the oldest idle evicted."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from llmeu.server.connection_guard import DESCRIPTORS_KEPT, ConnectionGuard, ConnectionLimits


@dataclass(eq=False)
class Connection:
    idle: bool = True
    closed: bool = False

    def close_idle(self) -> None:
        self.closed = True


def test_one_address_is_capped_others_are_not() -> None:
    guard = ConnectionGuard(ConnectionLimits(max_connections=100, max_per_client=2))
    assert guard.admit(Connection(), "10.0.0.1") is None
    assert guard.admit(Connection(), "10.0.0.1") is None
    assert guard.admit(Connection(), "10.0.0.1") == 429
    assert guard.admit(Connection(), "10.0.0.2") is None


def test_a_released_connection_gives_its_address_room_again() -> None:
    guard = ConnectionGuard(ConnectionLimits(max_connections=100, max_per_client=1))
    first = Connection()
    assert guard.admit(first, "a") is None
    guard.release(first)
    guard.release(first)  # twice is once
    assert guard.admit(Connection(), "a") is None
    assert len(guard) == 1


@pytest.mark.parametrize(
    ("idle", "evicted"),
    [((True, True, True), 0), ((False, True, True), 1), ((False, False, True), 2)],
    ids=["oldest-idle", "skips-a-busy-one", "the-only-idle-one"],
)
def test_at_capacity_the_oldest_idle_connection_makes_room(
    idle: tuple[bool, ...], evicted: int
) -> None:
    guard = ConnectionGuard(ConnectionLimits(max_connections=3, max_per_client=0))
    held = [Connection(idle=i) for i in idle]
    for connection in held:
        assert guard.admit(connection, "a") is None
    assert guard.admit(Connection(), "a") is None
    assert [c.closed for c in held] == [i == evicted for i in range(3)]
    assert len(guard) == 3


def test_when_every_connection_is_busy_the_newcomer_is_refused() -> None:
    guard = ConnectionGuard(ConnectionLimits(max_connections=2, max_per_client=0))
    for _ in range(2):
        assert guard.admit(Connection(idle=False), "a") is None
    assert guard.admit(Connection(), "a") == 503
    assert guard.refused == 1


def test_the_default_capacity_leaves_descriptors_to_the_process() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    capacity = ConnectionGuard(ConnectionLimits()).capacity
    if soft != resource.RLIM_INFINITY:
        assert capacity == max(16, soft - DESCRIPTORS_KEPT)


def test_a_connection_admitted_under_no_address_counts_for_none() -> None:
    guard = ConnectionGuard(ConnectionLimits(max_connections=100, max_per_client=1))
    for _ in range(3):  # a trusted proxy's connections: no cap until a request names a client
        assert guard.admit(Connection(), None) is None
    assert guard.admit(Connection(), "a") is None
    assert len(guard) == 4


def test_a_proxied_connection_counts_for_the_client_of_its_request() -> None:
    guard = ConnectionGuard(ConnectionLimits(max_connections=100, max_per_client=1))
    first, second, third = Connection(), Connection(), Connection()
    for connection in (first, second, third):
        assert guard.admit(connection, None) is None
    assert guard.attribute(first, "a")
    assert guard.attribute(first, "a")  # the same client again: still one
    assert not guard.attribute(second, "a")  # over the cap: refused, counted for none
    assert guard.refused_per_client == 1
    assert guard.attribute(third, "b")  # another client is counted apart
    assert guard.attribute(first, None)  # its answer ended: "a" has room again
    assert guard.attribute(second, "a")
    guard.release(second)
    assert guard.admit(Connection(), "a") is None
    guard.release(third)
    assert guard.attribute(third, "b")  # released meanwhile: nothing to count
    assert guard.admit(Connection(), "b") is None
