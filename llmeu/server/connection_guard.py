"""How many connections a gateway process holds open, in all and per client address.

Every connection costs a file descriptor, and past the process's descriptor
limit the kernel's accept fails and every new client is reset. The guard keeps
the count below `max_connections` (by default the descriptor limit less what
the ledger, upstreams and files need): a new connection over it first closes
the oldest connection that holds no request — one silent since it opened or
idle between requests, which a slowloris or a forgotten keep-alive is — and
only when every connection is busy is the newcomer answered 503. One client
address may hold at most `max_per_client` connections (429 above; 0 turns the
cap off, as behind a load balancer that is every client's address).

Counts are per process: with `--workers N` each worker holds its own.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from typing import Protocol

DESCRIPTORS_KEPT = 64
"""Descriptors left to the ledger, Redis, upstream connections, logs and model files."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The bounds on the connections of one process (from `Settings`)."""

    head_timeout: float = 10.0
    """Seconds from a connection's start (or a request's first byte) to its complete head."""
    max_connections: int = 0
    """0: the descriptor limit less `DESCRIPTORS_KEPT`."""
    max_per_client: int = 256
    """0: no cap per client address."""

    def open_connections(self) -> int:
        if self.max_connections > 0:
            return self.max_connections
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return 65_536
        return max(16, soft - DESCRIPTORS_KEPT)


class Guarded(Protocol):
    """A connection as the guard sees it."""

    @property
    def idle(self) -> bool:
        """True while the connection holds no request: nothing of a head read, none running."""
        ...

    def close_idle(self) -> None:
        """Close a connection the guard evicts to make room."""


class ConnectionGuard:
    """The open connections of one process, oldest first, and their count per client address."""

    def __init__(self, limits: ConnectionLimits):
        self.limits = limits
        self._capacity = limits.open_connections()
        self._open: dict[Guarded, str] = {}
        self._per_client: dict[str, int] = {}
        self.evicted = 0
        self.refused_per_client = 0
        self.refused_busy = 0
        self.head_timeouts = 0

    @property
    def refused(self) -> int:
        return self.refused_per_client + self.refused_busy

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, connection: Guarded, client: str) -> int | None:
        """Hold `connection` (from `client`'s address); None when admitted, else the status
        to refuse it with: 429 over the per-address cap, 503 when every connection is busy."""
        cap = self.limits.max_per_client
        if cap and self._per_client.get(client, 0) >= cap:
            self.refused_per_client += 1
            return 429
        if len(self._open) >= self._capacity and not self._evict_idle():
            self.refused_busy += 1
            return 503
        self._open[connection] = client
        self._per_client[client] = self._per_client.get(client, 0) + 1
        return None

    def release(self, connection: Guarded) -> None:
        client = self._open.pop(connection, None)
        if client is None:
            return
        left = self._per_client[client] - 1
        if left:
            self._per_client[client] = left
        else:
            del self._per_client[client]

    def _evict_idle(self) -> bool:
        for connection in self._open:  # oldest first
            if connection.idle:
                self.release(connection)
                connection.close_idle()
                self.evicted += 1
                return True
        return False
