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
from collections.abc import Callable, Sequence

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


_HOOKS = (
    "call_started", "attempt_started", "attempt_finished", "response_started", "first_token",
    "call_finished",
)  # fmt: skip


class Observers:
    """The observers of a gateway, called in order; failures are contained.

    Each hook calls only the observers that override it, bound once when an
    observer is added: a hook no observer implements costs an empty loop.
    """

    def __init__(self, observers: Sequence[CallObserver] = ()):
        self._observers: list[CallObserver] = []
        self._hooks: dict[str, tuple[Callable[..., None], ...]] = dict.fromkeys(_HOOKS, ())
        for observer in observers:
            self.add(observer)

    def add(self, observer: CallObserver) -> None:
        self._observers.append(observer)
        for hook in _HOOKS:
            method = getattr(observer, hook, None)
            if method is None or getattr(type(observer), hook, None) is getattr(CallObserver, hook):
                continue  # not implemented, or CallObserver's own, which does nothing
            self._hooks[hook] += (method,)
        self._bind()

    def _bind(self) -> None:
        hooks = self._hooks
        self._call_started = hooks["call_started"]
        self._attempt_started = hooks["attempt_started"]
        self._attempt_finished = hooks["attempt_finished"]
        self._response_started = hooks["response_started"]
        self._first_token = hooks["first_token"]
        self._call_finished = hooks["call_finished"]

    def __bool__(self) -> bool:
        return bool(self._observers)

    def call_started(self, record: TraceRecord, headers: Headers) -> None:
        for hook in self._call_started:
            try:
                hook(record, headers)
            except Exception:  # an observer's bug must not fail the call it observes
                _failed(hook, "call_started")

    def attempt_started(self, record: TraceRecord, attempt: Attempt) -> None:
        for hook in self._attempt_started:
            try:
                hook(record, attempt)
            except Exception:  # an observer's bug must not fail the call it observes
                _failed(hook, "attempt_started")

    def attempt_finished(self, record: TraceRecord, attempt: Attempt) -> None:
        for hook in self._attempt_finished:
            try:
                hook(record, attempt)
            except Exception:  # an observer's bug must not fail the call it observes
                _failed(hook, "attempt_finished")

    def response_started(self, record: TraceRecord, timing: ResponseTiming) -> None:
        for hook in self._response_started:
            try:
                hook(record, timing)
            except Exception:  # an observer's bug must not fail the call it observes
                _failed(hook, "response_started")

    def first_token(self, record: TraceRecord) -> None:
        for hook in self._first_token:
            try:
                hook(record)
            except Exception:  # an observer's bug must not fail the call it observes
                _failed(hook, "first_token")

    def call_finished(self, record: TraceRecord) -> None:
        for hook in self._call_finished:
            try:
                hook(record)
            except Exception:  # an observer's bug must not fail the call it observes
                _failed(hook, "call_finished")


def _failed(hook: Callable[..., None], name: str) -> None:
    log.exception("observer %r failed in %s", getattr(hook, "__self__", hook), name)
