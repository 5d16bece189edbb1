"""The interface every upstream adapter implements.

A provider serves one catalog endpoint. It takes the canonical request
(`llmeu.calls.request`) and gives back canonical output (`llmeu.calls.output`),
translating both ways at its edge. Streaming is pull-based: the caller asks
for the next delta. Every operation takes the call's `Hangup`: a provider
binds the abort of what it waits on, so a client that goes away stops the
upstream at once (the HTTP connection is aborted, local generation is
stopped) and no token is generated for nobody. Every upstream failure leaves
a provider as an `UpstreamError`; a hang-up as `ClientDisconnected`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Completion, Delta, Embeddings, Usage
from llmeu.calls.request import ChatRequest, EmbeddingInputs
from llmeu.errors import InvalidRequest
from llmeu.routing.catalog import Endpoint


class ChatStream(ABC):
    """Deltas of one streamed completion, in upstream order.

    After `next_delta()` returned None the stream is complete and
    `finish_reason` and `usage` (None when the upstream reported none) are set.
    """

    finish_reason: str | None = None
    usage: Usage | None = None
    input_tokens: int | None = None
    """The prompt's uncached input tokens as the upstream counted them, where known before
    the end (the local model, Anthropic's `message_start`): a surface can say it early."""

    @abstractmethod
    async def next_delta(self) -> Delta | None:
        """The next upstream delta that carries output, or None at the end of the stream."""

    def buffered_delta(self) -> Delta | None:
        """A delta made from data already received, without waiting; None when there is none.

        Lets the caller write several deltas that arrived together in one
        write (still one frame each) instead of one system call per frame.
        Never ends the stream: the end is always seen through `next_delta`.
        """
        return None

    @abstractmethod
    async def aclose(self) -> None:
        """Stop the upstream now; safe to call more than once and after completion."""


class Provider(ABC):
    """Serves one endpoint of the catalog. `secrets` are the credentials it sends upstream
    (its API key): an upstream that quotes them back has them taken out of its errors."""

    secrets: tuple[str, ...] = ()

    def __init__(self, endpoint: Endpoint):
        self.endpoint = endpoint

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Prepare resources (load a model, warm a pool); called once at startup.
        A `ConfigError` makes the endpoint unavailable, with its message as the reason."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release resources at shutdown."""

    def unavailable_reason(self) -> str | None:
        """Why the endpoint cannot serve right now (the process that runs it is down), or
        None. Such an endpoint stays in the plan: its calls fail at once, retryably."""
        return None

    @abstractmethod
    async def stream_chat(self, request: ChatRequest, hangup: Hangup) -> ChatStream:
        """Start a streamed completion; returns once the upstream accepted the request."""

    @abstractmethod
    async def complete_chat(self, request: ChatRequest, hangup: Hangup) -> Completion:
        """A whole completion in one response."""

    async def count_tokens(self, request: ChatRequest, hangup: Hangup) -> int | None:
        """The prompt's input tokens as this endpoint's model counts them; None when the
        endpoint cannot count (the caller then estimates)."""
        return None

    async def embed(
        self, inputs: EmbeddingInputs, dimensions: int | None, hangup: Hangup
    ) -> Embeddings:
        raise InvalidRequest(
            f"endpoint {self.endpoint.endpoint_id} does not serve embeddings", param="model"
        )
