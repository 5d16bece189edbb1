"""A call learns of its client's hang-up: from llmeu's server hook, or from ASGI `receive()`."""

from __future__ import annotations

import asyncio
from typing import Any

from llmeu.api.http.asgi import DisconnectWatch, HangupHook
from llmeu.calls.hangup import Hangup


async def never() -> Any:
    await asyncio.Event().wait()


async def test_the_server_hook_fires_the_hangup_without_a_task() -> None:
    hook, hangup = HangupHook(), Hangup()
    watch = DisconnectWatch(never, hangup, hook)
    tasks = len(asyncio.all_tasks())
    watch.start()
    assert len(asyncio.all_tasks()) == tasks and not hangup.fired
    hook.lost()
    assert hangup.fired


async def test_a_hangup_before_the_watch_starts_is_not_missed() -> None:
    hook, hangup = HangupHook(), Hangup()
    hook.lost()
    DisconnectWatch(never, hangup, hook).start()
    assert hangup.fired


async def test_a_hangup_after_stop_does_not_touch_the_call() -> None:
    hook, hangup = HangupHook(), Hangup()
    watch = DisconnectWatch(never, hangup, hook)
    watch.start()
    watch.stop()
    hook.lost()
    assert not hangup.fired


async def test_without_the_hook_receive_tells() -> None:
    messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    hangup = Hangup()
    watch = DisconnectWatch(messages.get, hangup)
    watch.start()
    await messages.put({"type": "http.request", "body": b""})
    await messages.put({"type": "http.disconnect"})
    for _ in range(5):
        await asyncio.sleep(0)
    assert hangup.fired
    watch.stop()
