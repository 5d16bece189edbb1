"""Telling the upstream side of a call that its client went away.

The api watches the client's connection and fires the call's `Hangup` the
moment it closes. A provider binds the abort of whatever it is waiting on —
an upstream connection, a generation thread — so that wait ends at once with
`ClientDisconnected` and the upstream stops without producing another token
for nobody. Work that runs while nothing is bound (routing, the ledger) asks
`check()` before it reaches an upstream.

A hang-up is never delivered as a task cancellation: cancelling the task is
how the server ends a request (shutdown), which the ledger records
differently.
"""

from __future__ import annotations

from collections.abc import Callable

from llmeu.errors import ClientDisconnected

Abort = Callable[[BaseException], None]


class Hangup:
    __slots__ = ("_aborts", "fired")

    def __init__(self) -> None:
        self._aborts: list[Abort] = []
        self.fired = False

    def bind(self, abort: Abort) -> None:
        """Call `abort(ClientDisconnected())` when the client goes away (at once if it has)."""
        if self.fired:
            abort(ClientDisconnected())
        else:
            self._aborts.append(abort)

    def unbind(self, abort: Abort) -> None:
        if abort in self._aborts:
            self._aborts.remove(abort)

    def fire(self) -> None:
        if self.fired:
            return
        self.fired = True
        aborts, self._aborts = self._aborts, []
        for abort in aborts:
            abort(ClientDisconnected())

    def check(self) -> None:
        """Raise `ClientDisconnected` if the client has gone."""
        if self.fired:
            raise ClientDisconnected()
