"""What both stream assemblers keep while folding: the output so far and how the stream ended.

A fold is open until its stream's terminal event (done), an error, or a
frame it cannot read (malformed); after that it folds nothing. `result()`
gives what arrived without judging it; `finish()` gives it only for a stream
that ended well, and raises otherwise with the partial result attached.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import ClassVar

from llmeu.client._errors import IncompleteStreamError, MalformedStreamError, StreamError
from llmeu.client._types import ChatDelta, ChatResult, ErrorInfo, RoutingBlock, ToolCall, Usage
from llmeu.protocol.sse import ServerSentEvent


class FoldState(Enum):
    OPEN = "open"
    DONE = "done"
    ERROR = "error"
    MALFORMED = "malformed"


class StreamFold(ABC):
    """Folds the events of one stream into a `ChatResult`; subclasses read their wire."""

    incomplete: ClassVar[str]
    """What `finish()` says of a stream that stopped before its terminal event."""

    def __init__(self) -> None:
        self._state = FoldState.OPEN
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._llmeu: RoutingBlock | None = None
        self._error: ErrorInfo | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._malformed: tuple[str, str] | None = None

    @property
    def ended(self) -> bool:
        """True once the terminal event or an error arrived: later events change nothing."""
        return self._state is not FoldState.OPEN

    def add(self, event: ServerSentEvent) -> None:
        self.fold(event)

    @abstractmethod
    def fold(self, event: ServerSentEvent) -> list[ChatDelta]:
        """Fold one event in; returns the output deltas it carried, in order."""

    def finish(self) -> ChatResult:
        """The result; raises when the stream did not end with its terminal event.

        `StreamError` for an error, `MalformedStreamError` for a frame that
        could not be read, `IncompleteStreamError` when the stream just
        stopped. Each carries the partial result as `.result`.
        """
        result = self.result()
        if self._state is FoldState.ERROR:
            raise StreamError(result)
        if self._state is FoldState.MALFORMED:
            assert self._malformed is not None
            data, message = self._malformed
            raise MalformedStreamError(message, result, data)
        if self._state is FoldState.OPEN:
            raise IncompleteStreamError(self.incomplete, result)
        return result

    def result(self) -> ChatResult:
        """What has been assembled so far, without judging completeness."""
        return ChatResult(
            content="".join(self._content),
            tool_calls=self._tool_calls(),
            finish_reason=self._finish_reason,
            usage=self._usage,
            llmeu=self._llmeu,
            error=self._error,
            complete=self._state is FoldState.DONE,
            id=self._id,
            model=self._model,
            reasoning="".join(self._reasoning),
            refusal="".join(self._refusal),
        )

    @abstractmethod
    def _tool_calls(self) -> list[ToolCall]:
        """The tool calls assembled so far, in order."""

    def _fail(self, payload: object) -> None:
        self._error = ErrorInfo.from_payload(payload)
        self._state = FoldState.ERROR

    def _reject(self, data: str, message: str) -> list[ChatDelta]:
        """Ends the fold as malformed; returns no deltas, for `return self._reject(...)`."""
        self._malformed = (data, message)
        self._state = FoldState.MALFORMED
        return []
