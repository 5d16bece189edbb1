"""An Anthropic Messages server for the probe's tests, with one fault at a time.

It answers `POST …/messages` as Anthropic's wire does — `event:` lines naming
their data's type, a `ping`, content blocks indexed from 0, `message_delta`
then one `message_stop`, no `[DONE]` — unless the model name asks for a
fault (`fake;fault=NAME`, see `FAULTS`); `fake;chop=1` cuts and joins events
across writes, which a reader must not mind. A real HTTP server on 127.0.0.1
in a thread of the test process (`fake_server`); the probe reaches it from
its own process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from tests.probe.fake_server import FakeHandler, FakeServer, fault_of, running

FAULTS = {
    "missing_stop": "transport/message_stop",  # the stream ends after message_delta
    "event_name": "framing/event names",  # an `event:` line naming another type
    "done": "transport/no [DONE]",  # chat completions' `[DONE]` after message_stop
    "index_gap": "content/block indexes",  # the second block is numbered 2
    "bad_input": "content/tool calls",  # input_json_delta partials that join into no JSON
    "error_event": "transport/message_stop",  # an `event: error` in place of the end
    "no_usage": "usage/streamed",  # message_delta without output_tokens
}
WORDS = ["1\n", "2\n", "3\n", "4\n", "5\n"]
PARTIALS = ['{"city"', ': "Paris"}']
USAGE = {"input_tokens": 9, "output_tokens": 5}


def message(model: str, tools: bool) -> dict[str, Any]:
    """The whole answer, as a non-streamed call returns it."""
    text = {"type": "text", "text": "Calling.\n" if tools else "".join(WORDS)}
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {"city": "Paris"}}
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [text, use] if tools else [text],
        "stop_reason": "tool_use" if tools else "end_turn",
        "stop_sequence": None,
        "usage": USAGE,
    }


def events(model: str, tools: bool, fault: str) -> list[dict[str, Any]]:
    """The events of a stream with the `fault` in it (none: a correct stream)."""
    whole = message(model, tools)
    start = {**whole, "content": [], "stop_reason": None, "usage": {**USAGE, "output_tokens": 1}}
    listed: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    texts = ["Calling.\n"] if tools else WORDS
    listed += _block(0, {"type": "text", "text": ""}, "text_delta", "text", texts)
    if tools:
        block = {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}
        partials = ['{"city"', ": Paris"] if fault == "bad_input" else PARTIALS
        index = 2 if fault == "index_gap" else 1
        listed += _block(index, block, "input_json_delta", "partial_json", partials)
    elif fault == "index_gap":
        listed += _block(2, {"type": "text", "text": ""}, "text_delta", "text", ["6\n"])
    usage = {} if fault == "no_usage" else {"output_tokens": USAGE["output_tokens"]}
    listed.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": usage,
        }
    )
    if fault == "error_event":
        listed[-1] = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    elif fault != "missing_stop":
        listed.append({"type": "message_stop"})
    return listed


def _block(index: int, block: dict[str, Any], kind: str, key: str, parts: list[str]) -> list:
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *({"type": "content_block_delta", "index": index, "delta": {"type": kind, key: p}}
          for p in parts),
        {"type": "content_block_stop", "index": index},
    ]  # fmt: skip


def frames(model: str, tools: bool) -> Iterator[bytes]:
    fault = fault_of(model)
    for index, event in enumerate(events(model, tools, fault)):
        name = "content_block_stop" if fault == "event_name" and index == 3 else event["type"]
        yield f"event: {name}\ndata: {json.dumps(event)}\n\n".encode()
    if fault == "done":
        yield b"data: [DONE]\n\n"


class _Handler(FakeHandler):
    def do_POST(self) -> None:
        body = self.body()
        self.server.seen.append(
            (self.path, self.headers.get("x-api-key"), self.headers.get("anthropic-version"))
        )
        model = str(body.get("model"))
        if not self.path.endswith("/messages"):
            return self._error(404, "not_found_error", f"no route {self.path}")
        if model.startswith("missing-model-"):
            return self._error(404, "not_found_error", f"model: {model}")
        roles = {m.get("role") for m in body.get("messages") or ()}
        if not roles or not roles <= {"user", "assistant"}:
            return self._error(400, "invalid_request_error", "messages: unexpected role")
        tools = bool(body.get("tools"))
        if not body.get("stream"):
            return self.send_json(200, message(model, tools))
        self.stream(frames(model, tools), model)

    def _error(self, status: int, kind: str, message: str) -> None:
        self.send_json(status, {"type": "error", "error": {"type": kind, "message": message}})


def fake_messages() -> AbstractContextManager[FakeServer]:
    """The running server (its `seen`: path, x-api-key and anthropic-version of every
    request, in order)."""
    return running(_Handler)
