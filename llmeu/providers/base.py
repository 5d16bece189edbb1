"""The interface every upstream adapter implements.

A provider serves one catalog endpoint. Streaming is pull-based: the caller
asks for the next delta and closing the stream stops the upstream at once
(the HTTP connection is aborted, local generation is stopped), so no token is
generated for nobody. Every failure leaves a provider as an `UpstreamError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from llmeu.protocol.wire import AssistantOutput, ChatCompletionRequest, Delta, Usage
from llmeu.routing.catalog import Endpoint


class ChatStream(ABC):
    """Deltas of one streamed completion, in upstream order.

    After `next_delta()` returned None the stream is complete and
    `finish_reason` and `usage` (None when the upstream reported none) are set.
    """

    finish_reason: str | None = None
    usage: Usage | None = None

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


@dataclass(frozen=True, slots=True)
class Completion:
    message: AssistantOutput
    finish_reason: str | None
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class Embeddings:
    vectors: Sequence[Sequence[float]]
    prompt_tokens: int | None


class Provider(ABC):
    """Serves one endpoint of the catalog."""

    def __init__(self, endpoint: Endpoint):
        self.endpoint = endpoint

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Prepare resources (load a model, warm a pool); called once at startup."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release resources at shutdown."""

    @abstractmethod
    async def stream_chat(self, request: ChatCompletionRequest) -> ChatStream:
        """Start a streamed completion; returns once the upstream accepted the request."""

    @abstractmethod
    async def complete_chat(self, request: ChatCompletionRequest) -> Completion:
        """A whole completion in one response."""

    async def embed(
        self, inputs: Sequence[str] | Sequence[Sequence[int]], dimensions: int | None
    ) -> Embeddings:
        from llmeu.errors import InvalidRequest

        raise InvalidRequest(
            f"endpoint {self.endpoint.endpoint_id} does not serve embeddings", param="model"
        )
