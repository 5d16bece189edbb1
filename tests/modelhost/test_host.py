"""A real model host, spoken to as the gateway does: constrained decoding by a grammar, a
grammar that does not compile refused without harm, a `cancel` frame that stops generation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from importlib.util import find_spec
from typing import Any

import pytest

from llmeu.errors import UnsupportedByEndpoint
from llmeu.modelhost.launch import HostLimits
from llmeu.modelhost.wire import write_frame
from llmeu.providers.host_link import HostLink

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]


def generate(content: str, max_tokens: int, grammar: str | None = None) -> dict[str, Any]:
    return {"op": "generate", "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens, "stop": [], "sampling": {"temp": 0.0}, "seed": 1,
            "grammar": grammar}  # fmt: skip


@pytest.fixture
async def link() -> AsyncIterator[HostLink]:
    host = HostLink(None, limits=HostLimits(threads=2))
    await host.start()
    yield host
    await host.aclose()


async def frames(link: HostLink, request: dict[str, Any]) -> list[dict[str, Any]]:
    reader, writer = await link.connect(request)
    try:
        seen = [await link.read(reader)]
        while seen[-1]["ev"] != "end":
            seen.append(await link.read(reader))
    finally:
        writer.close()
    return seen


async def test_a_grammar_constrains_the_answer(link: HostLink) -> None:
    seen = await frames(link, generate("Is Paris in France?", 8, 'root ::= "yes" | "no"'))
    text = "".join(f["text"] for f in seen if f["ev"] == "text")
    assert text in ("yes", "no")
    assert seen[0]["ev"] == "start" and seen[-1]["reason"] == "stop"


async def test_a_grammar_that_does_not_compile_fails_its_call_alone(link: HostLink) -> None:
    with pytest.raises(UnsupportedByEndpoint) as refused:
        await frames(link, generate("Hi", 4, "root ::= ("))
    assert refused.value.status == 400 and refused.value.param == "tools"
    assert link.up
    assert (await frames(link, generate("Hi", 2)))[-1]["ev"] == "end", "the host goes on"


async def test_a_cancel_frame_stops_generation(link: HostLink) -> None:
    reader, writer = await link.connect(generate("Write a long story about the sea.", 400))
    try:
        assert (await link.read(reader))["ev"] == "start"
        assert (await link.read(reader))["ev"] == "text"
        write_frame(writer, {"op": "cancel"})
        while (frame := await link.read(reader))["ev"] != "end":
            pass
    finally:
        writer.close()
    assert frame["reason"] == "cancelled" and frame["tokens"] < 50
