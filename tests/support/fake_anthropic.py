"""A fake Anthropic Messages upstream with fault injection, run as a real process.

    python tests/support/fake_anthropic.py --port 0 [--api-key KEY]

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
    fault=NAME    status_<code> | overloaded_event | reset_mid_stream | missing_stop

`GET /_stats` returns every request seen (path, headers that matter, body,
chunks sent, when its connection closed); `POST /_reset` clears them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from typing import Any

_DIRECTIVE = re.compile(r"\[\[([^\]]*)\]\]")
ARGUMENTS = '{"city": "Paris"}'
SIGNATURE = "c2lnbmF0dXJlLW9mLXRoZS10aGlua2luZw=="


def directives_of(body: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in str(body.get("model", "")).split(";")[1:]:
        key, _, value = part.partition("=")
        found[key.strip()] = value.strip()
    messages = body.get("messages") or []
    if messages:
        content = messages[-1].get("content")
        if isinstance(content, list):
            content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        for match in _DIRECTIVE.finditer(str(content or "")):
            for part in match.group(1).split(";"):
                key, _, value = part.partition("=")
                if key.strip():
                    found[key.strip()] = value.strip()
    return found


def sse(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def usage(d: dict[str, str], output: int) -> dict[str, int]:
    counts = {"input_tokens": 11, "output_tokens": output}
    if d.get("cache") == "1":
        counts.update(cache_creation_input_tokens=3, cache_read_input_tokens=5)
    return counts


class Upstream:
    def __init__(self, api_key: str | None) -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen: list[dict[str, Any]] = []
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                raw = await reader.readexactly(length) if length else b""
                if not await self.respond(method, path, headers, raw, reader, writer, seen):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for request in seen:
                request["closed_at"] = request["closed_at"] or time.time()
            writer.close()

    async def respond(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        raw: bytes,
        reader: asyncio.StreamReader,
        w: asyncio.StreamWriter,
        seen: list[dict[str, Any]],
    ) -> bool:
        if path == "/_stats":
            await send_json(w, 200, {"requests": self.requests})
            return True
        if path == "/_reset":
            self.requests.clear()
            await send_json(w, 200, {})
            return True
        body = json.loads(raw or b"{}")
        request = {"path": path, "body": body, "headers": {k: headers.get(k) for k in (
            "x-api-key", "anthropic-version", "authorization")}, "chunks_sent": 0,
            "completed": False, "closed_at": None}  # fmt: skip
        self.requests.append(request)
        seen.append(request)
        if self.api_key is not None and headers.get("x-api-key") != self.api_key:
            await send_json(w, 401, error("authentication_error", "invalid x-api-key"))
            return True
        if not headers.get("anthropic-version"):
            await send_json(w, 400, error("invalid_request_error", "anthropic-version required"))
            return True
        if path.endswith("/messages/count_tokens"):
            text = json.dumps(body.get("messages")) + str(body.get("system", ""))
            await send_json(w, 200, {"input_tokens": 100 + len(text) // 10})
            return True
        d = directives_of(body)
        fault = d.get("fault", "")
        if fault.startswith("status_"):
            status = int(fault.removeprefix("status_"))
            kind = "overloaded_error" if status == 529 else "api_error"
            await send_json(w, status, error(kind, f"injected {status}"))
            return True
        if body.get("stream"):
            await self.stream(body, d, reader, w, request)
            return fault != "reset_mid_stream"
        await send_json(w, 200, message(body, d))
        request["completed"] = True
        return True

    async def stream(
        self,
        body: dict[str, Any],
        d: dict[str, str],
        r: asyncio.StreamReader,
        w: asyncio.StreamWriter,
        request: dict[str, Any],
    ) -> None:
        fault = d.get("fault", "")
        n = int(d.get("chunks", "6"))
        delay = float(d.get("delay", "0")) / 1000
        w.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip

        async def emit(data: bytes) -> None:
            if r.at_eof() or w.transport.is_closing():
                raise ConnectionResetError("the client closed the connection")
            w.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await w.drain()

        start = message(body, d, empty=True)
        await emit(sse("message_start", {"type": "message_start", "message": start}))
        await emit(sse("ping", {"type": "ping"}))
        index = 0
        if d.get("thinking") == "1":
            await emit(sse("content_block_start", {"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))  # fmt: skip
            for piece in ("Let me think. ", "Paris it is."):
                await emit(block_delta(0, {"type": "thinking_delta", "thinking": piece}))
            await emit(block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}))
            await emit(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
            index = 1
        tools = d.get("tools") == "1"
        block = ({"type": "tool_use", "id": "toolu_fake1", "name": "get_weather", "input": {}}
                 if tools else {"type": "text", "text": ""})  # fmt: skip
        await emit(sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": block}))  # fmt: skip
        for i in range(n):
            if delay:
                await asyncio.sleep(delay)
            if fault == "reset_mid_stream" and i == n // 2:
                w.transport.abort()
                return
            if fault == "overloaded_event" and i == n // 2:
                await emit(sse("error", error("overloaded_error", "Overloaded")))
                await emit(b"")
                return
            if tools:
                size = len(ARGUMENTS)
                piece = ARGUMENTS[i * size // n : (i + 1) * size // n]
                delta = {"type": "input_json_delta", "partial_json": piece}
            else:
                delta = {"type": "text_delta", "text": f"{d.get('text', 'tok')}{i} "}
            await emit(block_delta(index, delta))
            request["chunks_sent"] += 1
        await emit(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        reason = "tool_use" if tools else "end_turn"
        await emit(sse("message_delta", {"type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": usage(d, n)}))  # fmt: skip
        if fault != "missing_stop":
            await emit(sse("message_stop", {"type": "message_stop"}))
        await emit(b"")
        request["completed"] = True


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


async def send_json(w: asyncio.StreamWriter, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    w.write(f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n".encode() + body)  # fmt: skip
    await w.drain()


async def main(port: int, api_key: str | None) -> None:
    upstream = Upstream(api_key)
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", port)
    print(f"fake anthropic on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key")
    args = parser.parse_args()
    asyncio.run(main(args.port, args.api_key))
