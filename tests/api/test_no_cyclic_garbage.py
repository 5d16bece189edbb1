"""A call that completes leaves no reference cycles behind: what it made is freed by
reference counting as it ends, so the collector has no garbage of a call's to find, and its
first generation may hold many objects (`llmeu.server.runner._tune_collector`). Every route,
streamed or not, through the ASGI interface (here without llmeu's own server, so a task
watches each call's connection). Calls that fail may leave cycles (an exception kept with its
traceback); the collector still runs, and finds them."""

from __future__ import annotations

import gc
import types
from collections import Counter
from typing import Any

import httpx
import pytest

from llmeu.api.app import App
from tests.api.test_open_row import CALLS


def _ours(thing: object) -> str | None:
    """What names a piece of garbage as llmeu's: its type, or the code it was running."""
    module = getattr(type(thing), "__module__", "") or ""
    if module.startswith("llmeu"):
        return type(thing).__qualname__
    code = None
    if isinstance(thing, types.FrameType):
        code = thing.f_code
    elif isinstance(thing, types.CoroutineType | types.GeneratorType | types.AsyncGeneratorType):
        code = getattr(thing, "cr_code", None) or getattr(thing, "gi_code", None)
        code = code or getattr(thing, "ag_code", None)
    if code is not None and "/llmeu/" in code.co_filename:
        return f"{type(thing).__name__} of {code.co_name}"
    return None


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
async def test_a_call_leaves_no_cyclic_garbage_of_its_own(
    app: App, client: httpx.AsyncClient, call: tuple[str, dict[str, Any], dict[str, str]]
) -> None:
    path, body, headers = call
    response = await client.post(path, json=body, headers=headers)  # warm: caches, the pool
    assert response.status_code == 200, response.text
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.garbage.clear()
    try:
        for _ in range(10):
            response = await client.post(path, json=body, headers=headers)
            assert response.status_code == 200, response.text
        await app.gateway.ledger.flush(10)
        gc.collect()
        found = Counter(name for thing in gc.garbage if (name := _ours(thing)) is not None)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"
