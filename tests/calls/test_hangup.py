"""A hang-up reaches whatever the call's upstream waits on, once, and only while bound."""

from __future__ import annotations

import pytest

from llmeu.calls.hangup import Hangup
from llmeu.errors import ClientDisconnected


def test_fire_aborts_what_is_bound_with_client_disconnected() -> None:
    hangup, seen = Hangup(), []
    hangup.bind(seen.append)
    hangup.fire()
    hangup.fire()
    assert len(seen) == 1 and isinstance(seen[0], ClientDisconnected)


def test_binding_after_the_hang_up_aborts_at_once() -> None:
    hangup, seen = Hangup(), []
    hangup.fire()
    hangup.bind(seen.append)
    assert len(seen) == 1


def test_an_unbound_abort_is_left_alone() -> None:
    hangup, seen = Hangup(), []
    hangup.bind(seen.append)
    hangup.unbind(seen.append)
    hangup.fire()
    assert seen == []


def test_check_raises_only_after_the_hang_up() -> None:
    hangup = Hangup()
    hangup.check()
    hangup.fire()
    with pytest.raises(ClientDisconnected):
        hangup.check()
