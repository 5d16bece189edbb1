"""A fake Anthropic Messages upstream with fault injection, run as a real process.

    python -m tests.support.fake_anthropic --port 0 [--api-key KEY]

Speaks Anthropic's wire byte for byte: `POST /v1/messages` (a `message`, or
with `stream: true` Anthropic's events: message_start, content blocks,
message_delta, message_stop, with pings) and `POST /v1/messages/count_tokens`.
A request without `anthropic-version`, or (with `--api-key`) without that
`x-api-key`, is refused as Anthropic refuses it. Directives, `key=value`
pairs separated by `;`, come from the model name after a `;` and from `[[...]]`
in the last user text:

    chunks=N      text deltas (default 6)      delay=MS     pause before each delta
    text=WORD     the word of each delta       tools=1      answer with a tool_use block
    thinking=1    a thinking block (two deltas and a signature) before the text
    cache=1       usage with cache reads (5) and writes (3)
    server=1      a server tool's blocks first (`server_tool_use`, its input streamed, and
                  a `web_search_tool_result`), as a web search run by the provider makes
    fault=NAME    status_<code> | overloaded_event | reset_mid_stream | missing_stop

`GET /_stats` returns every request seen (path, headers that matter, body,
chunks sent, when its connection closed); `POST /_reset` clears them.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from tests.support.fake_server import FakeServer, Reply, Request, arguments, directives, run

ARGUMENTS = '{"city": "Paris"}'
SIGNATURE = "c2lnbmF0dXJlLW9mLXRoZS10aGlua2luZw=="


@dataclass
class Seen:
    path: str
    body: Any
    headers: dict[str, str | None]
    chunks_sent: int = 0
    completed: bool = False
    closed_at: float | None = None


def directives_of(body: dict[str, Any]) -> dict[str, str]:
    messages = body.get("messages") or []
    texts = []
    if messages:
        content = messages[-1].get("content")
        if isinstance(content, list):
            content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        texts.append(str(content or ""))
    return directives(str(body.get("model", "")), texts)


def sse(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def usage(d: dict[str, str], output: int) -> dict[str, int]:
    counts = {"input_tokens": 11, "output_tokens": output}
    if d.get("cache") == "1":
        counts.update(cache_creation_input_tokens=3, cache_read_input_tokens=5)
    return counts


class Upstream(FakeServer):
    label = "fake anthropic"

    def __init__(self, api_key: str | None) -> None:
        super().__init__()
        self.api_key = api_key

    async def answer(self, request: Request, reply: Reply, connection: int) -> None:
        body = request.json()
        headers = request.headers
        seen = Seen(request.path, body, {k: headers.get(k) for k in (
            "x-api-key", "anthropic-version", "authorization")})  # fmt: skip
        self.log(seen, connection)
        if self.api_key is not None and headers.get("x-api-key") != self.api_key:
            await reply.json(401, error("authentication_error", "invalid x-api-key"))
            return
        if not headers.get("anthropic-version"):
            await reply.json(400, error("invalid_request_error", "anthropic-version required"))
            return
        if request.path.endswith("/messages/count_tokens"):
            text = json.dumps(body.get("messages")) + str(body.get("system", ""))
            await reply.json(200, {"input_tokens": 100 + len(text) // 10})
            return
        d = directives_of(body)
        fault = d.get("fault", "")
        if fault.startswith("status_"):
            status = int(fault.removeprefix("status_"))
            kind = "overloaded_error" if status == 529 else "api_error"
            await reply.json(status, error(kind, f"injected {status}"))
            return
        if body.get("stream"):
            await self.stream(body, d, reply, seen)
            return
        await reply.json(200, message(body, d))
        seen.completed = True

    async def stream(
        self,
        body: dict[str, Any],
        d: dict[str, str],
        reply: Reply,
        seen: Seen,
    ) -> None:
        fault = d.get("fault", "")
        n = int(d.get("chunks", "6"))
        delay = float(d.get("delay", "0")) / 1000
        await reply.start("text/event-stream")
        start = message(body, d, empty=True)
        await reply.chunk(sse("message_start", {"type": "message_start", "message": start}))
        await reply.chunk(sse("ping", {"type": "ping"}))
        index = 0
        if d.get("thinking") == "1":
            thinking = {"type": "thinking", "thinking": "", "signature": ""}
            await reply.chunk(block_start(0, thinking))
            for piece in ("Let me think. ", "Paris it is."):
                await reply.chunk(block_delta(0, {"type": "thinking_delta", "thinking": piece}))
            await reply.chunk(block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}))
            await reply.chunk(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
            index = 1
        if d.get("server") == "1":
            index = await server_blocks(reply, index)
        tools = d.get("tools") == "1"
        block = ({"type": "tool_use", "id": "toolu_fake1", "name": "get_weather", "input": {}}
                 if tools else {"type": "text", "text": ""})  # fmt: skip
        await reply.chunk(block_start(index, block))
        for i in range(n):
            if delay:
                await asyncio.sleep(delay)
            if fault == "reset_mid_stream" and i == n // 2:
                reply.reset()
                return
            if fault == "overloaded_event" and i == n // 2:
                await reply.chunk(sse("error", error("overloaded_error", "Overloaded")))
                await reply.chunk(b"")
                return
            if tools:
                size = len(ARGUMENTS)
                piece = ARGUMENTS[i * size // n : (i + 1) * size // n]
                delta = {"type": "input_json_delta", "partial_json": piece}
            else:
                delta = {"type": "text_delta", "text": f"{d.get('text', 'tok')}{i} "}
            await reply.chunk(block_delta(index, delta))
            seen.chunks_sent += 1
        await reply.chunk(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        reason = "tool_use" if tools else "end_turn"
        stop = {"stop_reason": reason, "stop_sequence": None}
        end = {"type": "message_delta", "delta": stop, "usage": usage(d, n)}
        await reply.chunk(sse("message_delta", end))
        if fault != "missing_stop":
            await reply.chunk(sse("message_stop", {"type": "message_stop"}))
        await reply.chunk(b"")
        seen.completed = True


async def server_blocks(reply: Reply, index: int) -> int:
    """A web search the provider ran: its call (input streamed) and its result; the index of
    the block after them."""
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    await reply.chunk(block_start(index, use))
    for piece in ('{"query": ', '"weather Paris"}'):
        await reply.chunk(block_delta(index, {"type": "input_json_delta", "partial_json": piece}))
    await reply.chunk(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://meteo.example.eu", "title": "Météo",
         "encrypted_content": "ZW5j", "page_age": None}]}  # fmt: skip
    await reply.chunk(block_start(index + 1, result))
    await reply.chunk(sse("content_block_stop", {"type": "content_block_stop", "index": index + 1}))
    return index + 2


def block_start(index: int, block: dict[str, Any]) -> bytes:
    start = {"type": "content_block_start", "index": index, "content_block": block}
    return sse("content_block_start", start)


def block_delta(index: int, delta: dict[str, Any]) -> bytes:
    return sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                       "delta": delta})  # fmt: skip


def message(body: dict[str, Any], d: dict[str, str], *, empty: bool = False) -> dict[str, Any]:
    n = int(d.get("chunks", "6"))
    content: list[dict[str, Any]] = []
    reason = None if empty else "end_turn"
    if not empty:
        if d.get("thinking") == "1":
            content.append({"type": "thinking", "thinking": "Let me think. Paris it is.",
                            "signature": SIGNATURE})  # fmt: skip
        if d.get("tools") == "1":
            content.append({"type": "tool_use", "id": "toolu_fake1", "name": "get_weather",
                            "input": json.loads(ARGUMENTS)})  # fmt: skip
            reason = "tool_use"
        else:
            word = d.get("text", "tok")
            content.append({"type": "text", "text": "".join(f"{word}{i} " for i in range(n))})
    counts = usage(d, 0 if empty else n)
    if empty:
        counts.pop("output_tokens")
        counts["output_tokens"] = 1
    return {"id": "msg_fake", "type": "message", "role": "assistant",
            "model": str(body.get("model", "")).split(";")[0], "content": content,
            "stop_reason": reason, "stop_sequence": None, "usage": counts}  # fmt: skip


if __name__ == "__main__":
    parser = arguments()
    parser.add_argument("--api-key")
    args = parser.parse_args()
    run(Upstream(args.api_key), args.port)
