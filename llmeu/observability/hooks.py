"""Hooks into each call's lifecycle, for metrics, tracing and logs.

An observer overrides the hooks it needs (the others do nothing). Hooks run
inline on the request path, so they must be cheap and must not block; an
exception in one is logged and never fails the call it observes.

The API calls the hooks in this order: `call_started`; for each endpoint tried
`attempt_started` then `attempt_finished`; `response_started` when the
response's headers go out (not for error responses); `first_token` for a
stream's first delta; `call_finished` once, with the final status.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from llmeu.calls.record import Attempt, TraceRecord
from llmeu.observability.timing import ResponseTiming

log = logging.getLogger("llmeu.observers")

Headers = Sequence[tuple[bytes, bytes]]


class CallObserver:
    def call_started(self, record: TraceRecord, headers: Headers) -> None:
        """A call passed authentication; `headers` are the request's (e.g. `traceparent`)."""

    def attempt_started(self, record: TraceRecord, attempt: Attempt) -> None:
        """An endpoint is about to be tried."""

    def attempt_finished(self, record: TraceRecord, attempt: Attempt) -> None:
        """The attempt served, failed or was cancelled (`attempt.outcome`)."""

    def response_started(self, record: TraceRecord, timing: ResponseTiming) -> None:
        """A successful response's headers are going out; `timing` splits the time so far."""

    def first_token(self, record: TraceRecord) -> None:
        """The first output delta of a stream is going to the client."""

    def call_finished(self, record: TraceRecord) -> None:
        """The call has its final status; its trace is queued for the ledger."""


class Observers:
    """The observers of a gateway, called in order; failures are contained."""

    def __init__(self, observers: Sequence[CallObserver] = ()):
        self._observers = list(observers)

    def add(self, observer: CallObserver) -> None:
        self._observers.append(observer)

    def __bool__(self) -> bool:
        return bool(self._observers)

    def call_started(self, record: TraceRecord, headers: Headers) -> None:
        self._notify("call_started", record, headers)

    def attempt_started(self, record: TraceRecord, attempt: Attempt) -> None:
        self._notify("attempt_started", record, attempt)

    def attempt_finished(self, record: TraceRecord, attempt: Attempt) -> None:
        self._notify("attempt_finished", record, attempt)

    def response_started(self, record: TraceRecord, timing: ResponseTiming) -> None:
        self._notify("response_started", record, timing)

    def first_token(self, record: TraceRecord) -> None:
        self._notify("first_token", record)

    def call_finished(self, record: TraceRecord) -> None:
        self._notify("call_finished", record)

    def _notify(self, hook: str, *args: object) -> None:
        for observer in self._observers:
            try:
                getattr(observer, hook)(*args)
            except Exception:  # an observer's bug must not fail the call it observes
                log.exception("observer %r failed in %s", observer, hook)
