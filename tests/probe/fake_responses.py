"""A Responses API server for the probe's tests, with one fault at a time.

It answers `POST …/responses` as OpenAI's wire does — `event:` lines naming
their data's type, sequence numbers from 0, one terminal event, no `[DONE]`
— unless the model name asks for a fault (`fake;fault=NAME`, see `FAULTS`); `fake;chop=1`
cuts and joins events across writes, which a reader must not mind.
A real HTTP server on 127.0.0.1 in a thread of the test process
(`fake_server`); the probe reaches it from its own process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from tests.probe.fake_server import FakeHandler, FakeServer, fault_of, running

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
    fault = fault_of(model)
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


class _Handler(FakeHandler):
    def do_POST(self) -> None:
        body = self.body()
        self.server.seen.append(self.path)
        model = str(body.get("model"))
        if not self.path.endswith("/responses"):
            return self._error(404, "not_found", f"no route {self.path}")
        if model.startswith("missing-model-"):
            return self._error(404, "model_not_found", f"the model `{model}` does not exist")
        if not isinstance(body.get("input"), str):
            return self._error(400, "invalid_request_error", "input must be a string here")
        tools = bool(body.get("tools"))
        if not body.get("stream"):
            return self.send_json(200, events(model, tools)[-1]["response"])
        self.stream(frames(model, tools), model)

    def _error(self, status: int, kind: str, message: str) -> None:
        self.send_json(status, {"error": {"message": message, "type": kind, "param": None,
                                          "code": kind}})  # fmt: skip


def fake_responses() -> AbstractContextManager[FakeServer]:
    """The running server (its `seen`: the path of every request, in order)."""
    return running(_Handler)
