"""A fake upstream speaking OpenAI's Responses API (`POST …/responses`), run as a real process.

    python tests/support/fake_responses_upstream.py --port 0

Streamed (`stream: true`) it sends OpenAI's events in OpenAI's order — `event:`
lines, sequence numbers from 0, one terminal event, no `[DONE]` — and whole
it sends the response object. Behaviour comes from directives, `key=value`
pairs separated by `;`, in the model name (`fake;reasoning=2`) and in `[[...]]`
in the last input text; the input wins.

    chunks=N        output_text deltas (default 3), each `tokI `
    reply=echo      answer with the last input text (directives taken out), in pieces of
                    `piece=N` characters (default 4)
    reasoning=N     a reasoning item first, its summary streamed in N deltas (`thinkI `),
                    with `encrypted_content` `enc-<N>` when the request includes it
    parts=2         the reasoning summary in two parts
    tools=1         a function call (`get_weather`, arguments in 2 pieces) instead of text
    delay=MS        pause before each delta
    fault=NAME      status_<code> (before any event) | error_mid_stream (an `error` event
                    after half the deltas) | missing_terminal (the body ends before
                    response.completed) | incomplete (max_output_tokens)

Every request is recorded with its body (`GET /_stats`), with when its
connection closed; `POST /_reset` clears them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from typing import Any

_DIRECTIVE = re.compile(r"\[\[([^\]]*)\]\]")
ARGUMENTS = ['{"city": ', '"Paris"}']


def directives_of(body: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in str(body.get("model", "")).split(";")[1:]:
        key, _, value = part.partition("=")
        found[key] = value
    items = body.get("input")
    text = items if isinstance(items, str) else json.dumps(items[-1] if items else {})
    for match in _DIRECTIVE.findall(text):
        for part in match.split(";"):
            key, _, value = part.partition("=")
            found[key.strip()] = value.strip()
    return found


def text_pieces(body: dict[str, Any], d: dict[str, str]) -> list[str]:
    """The output_text deltas of the answer."""
    if d.get("reply") != "echo":
        return [f"tok{i} " for i in range(int(d.get("chunks", "3")))]
    items = body.get("input")
    last = items if isinstance(items, str) else items[-1]["content"]
    text = last if isinstance(last, str) else "".join(p.get("text", "") for p in last)
    text = _DIRECTIVE.sub("", text)
    size = int(d.get("piece", "4"))
    return [text[start : start + size] for start in range(0, len(text), size)]


def output_items(body: dict[str, Any], d: dict[str, str]) -> list[dict[str, Any]]:
    """The finished output items the directives ask for."""
    items: list[dict[str, Any]] = []
    steps = int(d.get("reasoning", "0"))
    if steps:
        texts = [f"think{i} " for i in range(steps)]
        summary = (
            [{"type": "summary_text", "text": "".join(texts[:1])},
             {"type": "summary_text", "text": "".join(texts[1:])}]
            if d.get("parts") == "2" else [{"type": "summary_text", "text": "".join(texts)}]
        )  # fmt: skip
        item: dict[str, Any] = {"type": "reasoning", "id": "rs_up", "summary": summary}
        if "reasoning.encrypted_content" in (body.get("include") or ()):
            item["encrypted_content"] = f"enc-{steps}"
        items.append(item)
    if d.get("tools") == "1":
        items.append({"type": "function_call", "id": "fc_up", "call_id": "call_up1",
                      "name": "get_weather", "arguments": "".join(ARGUMENTS),
                      "status": "completed"})  # fmt: skip
    else:
        text = "".join(text_pieces(body, d))
        part = {"type": "output_text", "text": text, "annotations": []}
        items.append({"type": "message", "id": "msg_up", "role": "assistant",
                      "status": "completed", "content": [part]})  # fmt: skip
    return items


def response_object(body: dict[str, Any], d: dict[str, str], output: list[Any]) -> dict[str, Any]:
    incomplete = d.get("fault") == "incomplete"
    return {
        "id": "resp_upstream", "object": "response", "created_at": int(time.time()),
        "model": body.get("model"), "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "output": output, "store": body.get("store"),
        "usage": {"input_tokens": 13, "output_tokens": 7, "total_tokens": 20,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 2}},
    }  # fmt: skip


def stream_events(body: dict[str, Any], d: dict[str, str]) -> list[dict[str, Any]]:
    """Every event of a streamed answer, without sequence numbers."""
    output = output_items(body, d)
    shell = {**response_object(body, d, []), "status": "in_progress"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": shell},
        {"type": "response.in_progress", "response": shell},
    ]
    for index, item in enumerate(output):
        head = {"item_id": item["id"], "output_index": index}
        kind = item["type"]
        if kind == "reasoning":
            added = {"type": "reasoning", "id": item["id"], "summary": []}
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": added})  # fmt: skip
            pieces = [f"think{i} " for i in range(int(d["reasoning"]))]
            bounds = [pieces[:1], pieces[1:]] if d.get("parts") == "2" else [pieces]
            for s, texts in enumerate(bounds):
                part = {"type": "summary_text", "text": ""}
                events.append({"type": "response.reasoning_summary_part.added", **head,
                               "summary_index": s, "part": part})  # fmt: skip
                events += [{"type": "response.reasoning_summary_text.delta", **head,
                            "summary_index": s, "delta": t} for t in texts]  # fmt: skip
                done = "".join(texts)
                events.append({"type": "response.reasoning_summary_text.done", **head,
                               "summary_index": s, "text": done})  # fmt: skip
                events.append({"type": "response.reasoning_summary_part.done", **head,
                               "summary_index": s, "part": {**part, "text": done}})  # fmt: skip
        elif kind == "function_call":
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {**item, "arguments": "", "status": "in_progress"}})  # fmt: skip
            events += [{"type": "response.function_call_arguments.delta", **head, "delta": a}
                       for a in ARGUMENTS]  # fmt: skip
            events.append({"type": "response.function_call_arguments.done", **head,
                           "arguments": item["arguments"]})  # fmt: skip
        else:
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {**item, "content": [], "status": "in_progress"}})  # fmt: skip
            part = {"type": "output_text", "text": "", "annotations": []}
            head = {**head, "content_index": 0}
            events.append({"type": "response.content_part.added", **head, "part": part})
            events += [{"type": "response.output_text.delta", **head, "delta": piece,
                        "logprobs": []} for piece in text_pieces(body, d)]  # fmt: skip
            text = item["content"][0]["text"]
            events.append({"type": "response.output_text.done", **head, "text": text,
                           "logprobs": []})  # fmt: skip
            events.append({"type": "response.content_part.done", **head,
                           "part": {**part, "text": text}})  # fmt: skip
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = response_object(body, d, output)
    events.append({"type": f"response.{final['status']}", "response": final})
    return events


class Upstream:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen: list[dict[str, Any]] = []
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                _, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                raw = await reader.readexactly(length) if length else b""
                if not await self.respond(path, raw, reader, writer, seen):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for record in seen:
                record.setdefault("closed_at", time.time())
            writer.close()

    async def respond(
        self,
        path: str,
        raw: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        seen: list[dict[str, Any]],
    ) -> bool:
        if path == "/_stats":
            await send_json(writer, 200, {"requests": self.requests})
            return True
        if path == "/_reset":
            self.requests.clear()
            await send_json(writer, 200, {})
            return True
        body = json.loads(raw or b"{}")
        record: dict[str, Any] = {"path": path, "body": body, "stream": bool(body.get("stream")),
                                  "received_at": time.time(), "completed": False}  # fmt: skip
        self.requests.append(record)
        seen.append(record)
        if not path.endswith("/responses"):
            await send_json(writer, 404, {"error": {"message": "only /responses here"}})
            return True
        d = directives_of(body)
        fault = d.get("fault", "")
        if fault.startswith("status_"):
            code = int(fault.removeprefix("status_"))
            await send_json(writer, code, {"error": {"message": f"injected {code}"}})
            record["completed"] = True
            return True
        if not body.get("stream"):
            await send_json(writer, 200, response_object(body, d, output_items(body, d)))
            record["completed"] = True
            return True
        return await self.stream(body, d, reader, writer, record)

    async def stream(
        self,
        body: dict[str, Any],
        d: dict[str, str],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        record: dict[str, Any],
    ) -> bool:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        events = stream_events(body, d)
        fault = d.get("fault", "")
        delay = float(d.get("delay", "0")) / 1000
        deltas = sum(1 for e in events if e["type"].endswith(".delta"))
        sent = 0
        for sequence, event in enumerate(events):
            if fault == "missing_terminal" and event["type"] == "response.completed":
                break
            if event["type"].endswith(".delta"):
                if fault == "error_mid_stream" and sent == deltas // 2:
                    error = {"type": "error", "code": "server_error",
                             "message": "injected mid-stream error", "param": None}  # fmt: skip
                    await emit(reader, writer, "error", {**error, "sequence_number": sequence})
                    break
                if delay:
                    await asyncio.sleep(delay)
                sent += 1
            await emit(reader, writer, event["type"], {**event, "sequence_number": sequence})
        else:
            record["completed"] = True
        await emit(reader, writer, "", None)
        return True


async def emit(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, kind: str, data: Any
) -> None:
    if reader.at_eof() or writer.transport.is_closing():  # the peer hung up: write no more
        raise ConnectionResetError("the client closed the connection")
    payload = b"" if data is None else f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()
    writer.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
    await writer.drain()


async def send_json(writer: asyncio.StreamWriter, status: int, body: Any) -> None:
    raw = json.dumps(body).encode()
    writer.write(
        f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n"
        f"content-length: {len(raw)}\r\n\r\n".encode()
        + raw
    )
    await writer.drain()


async def main(port: int) -> None:
    upstream = Upstream()
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(main(parser.parse_args().port))
