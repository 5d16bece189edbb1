"""How many connections a gateway process holds open, in all and per client address.

Every connection costs a file descriptor, and past the process's descriptor
limit the kernel's accept fails and every new client is reset. The guard keeps
the count below `max_connections` (by default the descriptor limit less what
the ledger, upstreams and files need): a new connection over it first closes
the oldest connection that holds no request — one silent since it opened or
idle between requests, which a slowloris or a forgotten keep-alive is — and
only when every connection is busy is the newcomer answered 503. One client
address may hold at most `max_per_client` connections (429 above; 0 turns the
cap off).

Behind a trusted proxy (`--trusted-proxy`, `llmeu.protocol.forwarded`) the
client's address is known only once a request's head names it, so a
connection from a trusted proxy is admitted under no address and counts for
the client whose request it carries, from that request's head until its
answer ends (`attribute`): a balancer's pooled connections count for the
clients they serve at the moment, and an idle one for nobody. Over the cap,
that request is refused with the 429 and its connection closed.

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
        self._open: dict[Guarded, str | None] = {}
        self._per_client: dict[str, int] = {}
        self.evicted = 0
        self.refused_per_client = 0
        self.refused_busy = 0
        self.refused_proxy_protocol = 0
        """With `--proxy-protocol`: from a peer not trusted, or without a valid header."""
        self.head_timeouts = 0

    @property
    def refused(self) -> int:
        return self.refused_per_client + self.refused_busy + self.refused_proxy_protocol

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, connection: Guarded, client: str | None) -> int | None:
        """Hold `connection` (from `client`'s address; None: not known yet, counted for no
        address); None when admitted, else the status to refuse it with: 429 over the
        per-address cap, 503 when every connection is busy."""
        if client is not None and self._over_cap(client):
            return 429
        if len(self._open) >= self._capacity and not self._evict_idle():
            self.refused_busy += 1
            return 503
        self._open[connection] = client
        if client is not None:
            self._per_client[client] = self._per_client.get(client, 0) + 1
        return None

    def attribute(self, connection: Guarded, client: str | None) -> bool:
        """Count the held `connection` for `client` from now on (None: for no address);
        False, and counted for no address, when `client` holds its cap already."""
        if connection not in self._open:
            return True  # released meanwhile: nothing to count
        if self._open[connection] == client:
            return True
        self._forget(connection)
        if client is not None and self._over_cap(client):
            self._open[connection] = None
            return False
        self._open[connection] = client
        if client is not None:
            self._per_client[client] = self._per_client.get(client, 0) + 1
        return True

    def release(self, connection: Guarded) -> None:
        if connection in self._open:
            self._forget(connection)
            del self._open[connection]

    def _over_cap(self, client: str) -> bool:
        cap = self.limits.max_per_client
        if cap and self._per_client.get(client, 0) >= cap:
            self.refused_per_client += 1
            return True
        return False

    def _forget(self, connection: Guarded) -> None:
        """Take `connection` off its address's count (it stays held)."""
        client = self._open[connection]
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
