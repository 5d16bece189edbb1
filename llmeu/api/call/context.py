"""What every call of a gateway works with, and what one call's parts share.

`CallContext` is built once by the gateway (`llmeu.api.gateway`) and handed to
each call; `CallState` is one call's own, shared by its parts — the lifecycle
that runs it (`llmeu.api.call.lifecycle`) and the settlement that ends it
(`llmeu.api.call.settlement`) — so that neither reaches into the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from llmeu.api.call.accounting import Accounting
from llmeu.api.call.trace import TraceRecorder
from llmeu.api.http.asgi import DisconnectWatch, Request
from llmeu.api.http.error_responses import ErrorShape
from llmeu.api.services.auth import KeyRing
from llmeu.api.services.mcp_upstreams import InFlight, ToolServers
from llmeu.api.services.policies import PolicyBook
from llmeu.api.services.receipt_issuer import Receipts
from llmeu.api.services.team_quotas import TeamBook
from llmeu.api.services.upstreams import Upstreams
from llmeu.cache.answers import AnswerCache
from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Delta, StreamOutput, Usage
from llmeu.errors import ApiError
from llmeu.ledger.writer import Ledger
from llmeu.limits import Limiter
from llmeu.observability.hooks import Observers
from llmeu.protocol.routing_block import RoutingBlock
from llmeu.providers.base import ChatStream
from llmeu.routing.durations import Duration
from llmeu.routing.policy import DEFAULT_KEEP_METADATA


@dataclass(slots=True)
class CallContext:
    """The gateway's collaborators of every call. `upstreams` is replaced when the
    configuration is reloaded (a call keeps the one it was routed with); `accepting` turns
    false when the gateway stops; `inflight` knows the calls running, so a shutdown can wait
    for them to record how they ended."""

    keys: KeyRing
    policies: PolicyBook
    upstreams: Upstreams
    tool_servers: ToolServers
    """The MCP tool servers (replaced on a reload, as `upstreams` is)."""
    ledger: Ledger
    limits: Limiter
    observers: Observers
    receipts: Receipts
    instance_id: str
    max_body_bytes: int
    keep_metadata: Duration = DEFAULT_KEEP_METADATA
    cache: AnswerCache | None = None
    """The answer cache, asked only for calls under a policy with a `cache:` section."""
    cors_origins: frozenset[str] = frozenset()
    """The browser origins `--cors-origin` allows (`/mcp` refuses any other, as MCP asks)."""
    teams: TeamBook | None = None
    """The teams whose limits a call of a key in one is admitted under too."""
    accepting: bool = True
    inflight: dict[str, asyncio.Task[Any]] = field(default_factory=dict)
    tool_calls: InFlight = field(default_factory=InFlight)
    """The running tool calls by request id, for a client's `notifications/cancelled`."""


class StreamEncoder(Protocol):
    """A surface's wire for one stream: what goes out before the first delta, one piece per
    delta, the end (with the routing block), or the error that ends a broken stream."""

    def start(self) -> bytes: ...

    def delta(self, delta: Delta) -> bytes: ...

    def deltas(self, deltas: Sequence[Delta]) -> bytes:
        """The pieces of `deltas`, in order, as `delta` writes each: a replayed answer's."""
        ...

    def finish(self, finish_reason: str, usage: Usage, routing: RoutingBlock) -> bytes: ...

    def error(self, error: ApiError, routing: RoutingBlock) -> bytes: ...


class Phase(Enum):
    ADMISSION = "admission"  # an error here refuses the call: `rejected`
    COMPLETE = "complete"
    STREAM = "stream"


@dataclass(slots=True)
class CallState:
    """One call's state, from its key to its end."""

    request: Request
    shape: ErrorShape
    trace: TraceRecorder
    trace_id: str
    accounting: Accounting
    hangup: Hangup
    watch: DisconnectWatch
    phase: Phase = Phase.ADMISSION
    prompt: object = None
    """What the trace keeps of the prompt, where the policy stores content."""
    prompt_tokens: Callable[[], int] = int
    """The gateway's estimate of the prompt's tokens (no estimate: 0)."""
    prompt_tokens_known: bool = False
    upstreams: Upstreams | None = None
    """The endpoints the call was routed among (a reload does not change them)."""
    upstream: ChatStream | None = None
    """The stream being served, once an endpoint gave its first delta."""
    encoder: StreamEncoder | None = None
    stream_ended: bool = False
    output: StreamOutput = field(default_factory=StreamOutput)

    @property
    def stream_open(self) -> bool:
        return self.encoder is not None and not self.stream_ended
