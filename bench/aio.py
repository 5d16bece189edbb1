"""Run a benchmark's main coroutine: uvloop when installed, clean stop on Ctrl-C and SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Interrupted(Exception):
    """The run was stopped by SIGINT or SIGTERM; every child was stopped on the way out."""


async def _cancelled_by_signals(coroutine: Coroutine[Any, Any, T]) -> T:
    # Cancelling the task unwinds every `finally`, so supervisors stop their children;
    # a Python-level signal handler raising inside a uvloop callback would only be logged.
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await coroutine
    except asyncio.CancelledError:
        raise Interrupted from None
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_cancelled_by_signals(coroutine))
    return uvloop.run(_cancelled_by_signals(coroutine))
