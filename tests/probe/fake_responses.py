"""A Responses API server for the probe's tests, with one fault at a time.

It answers `POST …/responses` as OpenAI's wire does — `event:` lines naming
their data's type, sequence numbers from 0, one terminal event, no `[DONE]`
— unless the model name asks for a fault (`fake;fault=NAME`, see `FAULTS`); `fake;chop=1`
cuts and joins events across writes, which a reader must not mind.
A real HTTP server on 127.0.0.1 in a thread of the test process; the probe
reaches it from its own process.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = {
    "missing_terminal": "transport/terminal event",  # the stream stops before completed
    "sequence_gap": "framing/sequence_number",  # one number skipped
    "event_name": "framing/event names",  # an `event:` line naming another type
    "done": "transport/no [DONE]",  # chat completions' `[DONE]` after the terminal event
    "no_content_part": "content/event order",  # output_text.delta before any content part
    "text_mismatch": "content/text",  # output_text.done says other than the deltas
    "stray_item": "metadata/ids",  # a delta for an item never added
    "bad_arguments": "content/tool calls",  # the function's arguments are not JSON
    "usage_total": "usage/streamed",  # total_tokens is not input + output
}
WORDS = ["1\n", "2\n", "3\n", "4\n", "5\n"]
ARGUMENTS = ['{"city"', ': "Paris"}']


def events(model: str, tools: bool) -> list[dict[str, Any]]:
    """The events of a correct stream, without sequence numbers."""
    response = {"id": "resp_1", "object": "response", "model": model, "status": "in_progress"}
    if tools:
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_time"}
        head = {"item_id": "fc_1", "output_index": 0}
        body = [
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
            *({"type": "response.function_call_arguments.delta", **head, "delta": a} for a in ARGUMENTS),
            {"type": "response.function_call_arguments.done", **head, "name": "get_time",
             "arguments": "".join(ARGUMENTS)},
        ]  # fmt: skip
        done = {**item, "arguments": "".join(ARGUMENTS), "status": "completed"}
    else:
        text = "".join(WORDS)
        head = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": text, "annotations": []}
        body = [
            {"type": "response.output_item.added", "output_index": 0,
             "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}},
            {"type": "response.content_part.added", **head,
             "part": {**part, "text": ""}},
            *({"type": "response.output_text.delta", **head, "delta": w} for w in WORDS),
            {"type": "response.output_text.done", **head, "text": text},
            {"type": "response.content_part.done", **head, "part": part},
        ]  # fmt: skip
        done = {"type": "message", "id": "msg_1", "role": "assistant", "content": [part]}
    final = {
        **response,
        "status": "completed",
        "output": [done],
        "usage": {"input_tokens": 9, "output_tokens": 5, "total_tokens": 14},
    }
    return [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        *body,
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": final},
    ]


def frames(model: str, tools: bool) -> Iterator[bytes]:
    fault = dict(p.split("=", 1) for p in model.split(";")[1:] if "=" in p).get("fault", "")
    listed = broken(events(model, tools), fault)
    number = 0
    for index, event in enumerate(listed):
        if fault == "sequence_gap" and index == 3:
            number += 1
        name = "response.output_text.delta" if fault == "event_name" and index == 2 else None
        data = json.dumps({**event, "sequence_number": number})
        yield f"event: {name or event['type']}\ndata: {data}\n\n".encode()
        number += 1
    if fault == "done":
        yield b"data: [DONE]\n\n"


def broken(listed: list[dict[str, Any]], fault: str) -> list[dict[str, Any]]:
    """The correct events with the content-level `fault` in them."""
    kinds = [e["type"] for e in listed]
    if fault == "missing_terminal":
        return listed[:-1]
    if fault == "no_content_part" and "response.content_part.added" in kinds:
        return [e for e in listed if e["type"] != "response.content_part.added"]
    out = [dict(e) for e in listed]
    for event in out:
        if fault == "text_mismatch" and event["type"] == "response.output_text.done":
            event["text"] += "13\n"
        if fault == "stray_item" and event["type"] == "response.output_text.delta":
            event["item_id"] = "msg_2"
        if fault == "bad_arguments" and event["type"].startswith("response.function_call_arg"):
            event[
                {"response.function_call_arguments.done": "arguments"}.get(event["type"], "delta")
            ] = "{"
        if fault == "usage_total" and event["type"] == "response.completed":
            usage = {**event["response"]["usage"], "total_tokens": 15}
            event["response"] = {**event["response"], "usage": usage}
    return out


def writes(frames: Iterator[bytes], *, chopped: bool) -> Iterator[bytes]:
    """One event per write, or (`chop=1`, not a fault) three events to two writes, the first
    holding two whole events and half the third, so events arrive several to a read and split
    across reads."""
    if not chopped:
        yield from frames
        return
    for group in itertools.zip_longest(frames, frames, frames, fillvalue=b""):
        data = b"".join(group)
        cut = len(data) - len(group[2]) // 2
        yield from (data[:cut], data[cut:])


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        model = str(body.get("model"))
        if not self.path.endswith("/responses"):
            return self._error(404, "not_found", f"no route {self.path}")
        if model.startswith("missing-model-"):
            return self._error(404, "model_not_found", f"the model `{model}` does not exist")
        if not isinstance(body.get("input"), str):
            return self._error(400, "invalid_request_error", "input must be a string here")
        tools = bool(body.get("tools"))
        if not body.get("stream"):
            final = events(model, tools)[-1]["response"]
            return self._send(200, "application/json", json.dumps(final).encode())
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        try:
            for frame in writes(frames(model, tools), chopped=";chop=1" in model):
                self.wfile.write(frame)
                self.wfile.flush()
                time.sleep(0.01)
        except OSError:
            pass  # the client hung up

    def _error(self, status: int, kind: str, message: str) -> None:
        error = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
        self._send(status, "application/json", json.dumps(error).encode())

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[str] = []  # the path of every request, in order
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}/v1"


@contextmanager
def fake_responses() -> Iterator[_Server]:
    """The running server (`base_url` is `http://127.0.0.1:PORT/v1`) while the block runs."""
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
