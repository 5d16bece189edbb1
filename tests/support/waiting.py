"""Wait for a condition by polling it, never by sleeping a fixed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def until(condition: Callable[[], object], timeout: float = 30, what: str = "") -> None:
    """Poll `condition` (sync) every 5 ms until it is true."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await asyncio.sleep(0.005)


async def until_value(
    probe: Callable[[], Awaitable[T]], accept: Callable[[T], bool], timeout: float = 30
) -> T:
    """Poll the async `probe` until `accept` takes its value; returns that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; last value: {value!r}")
        await asyncio.sleep(0.01)


def wait_for(condition: Callable[[], T | None], timeout: float = 30, what: str = "") -> T:
    """Synchronous polling (for end-to-end tests): returns the first truthy value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.01)
