"""A fake upstream speaking OpenAI's Responses API (`POST …/responses`), run as a real process.

    python -m tests.support.fake_responses_upstream --port 0

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
    tools=custom    a custom tool's call (`apply_patch`, its input `PATCH` in 3 pieces)
    tools=namespace a call of a namespace's function (`collaboration`, `spawn_agent`)
    web_search=1    a `web_search_call` item (a hosted tool's run) before the message
    delay=MS        pause before each delta
    fault=NAME      status_<code> (before any event) | error_mid_stream (an `error` event
                    after half the deltas) | missing_terminal (the body ends before
                    response.completed) | incomplete (max_output_tokens)

Every request is recorded with its body (`GET /_stats`), with when its
connection closed; `POST /_reset` clears them.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from tests.support.fake_server import (
    DIRECTIVES,
    FakeServer,
    Reply,
    Request,
    arguments,
    directives,
    run,
)

ARGUMENTS = ['{"city": ', '"Paris"}']
PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+Grüß "dich"\n*** End Patch\n'
CALLS = {
    "1": {"type": "function_call", "name": "get_weather", "arguments": "".join(ARGUMENTS)},
    "custom": {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH},
    "namespace": {"type": "function_call", "namespace": "collaboration", "name": "spawn_agent",
                  "arguments": "".join(ARGUMENTS)},
}  # fmt: skip
"""The call each `tools=` directive makes."""


@dataclass
class Seen:
    path: str
    body: Any
    stream: bool
    received_at: float
    completed: bool = False
    closed_at: float | None = None


def directives_of(body: dict[str, Any]) -> dict[str, str]:
    items = body.get("input")
    text = items if isinstance(items, str) else json.dumps(items[-1] if items else {})
    return directives(str(body.get("model", "")), [text])


def text_pieces(body: dict[str, Any], d: dict[str, str]) -> list[str]:
    """The output_text deltas of the answer."""
    if d.get("reply") != "echo":
        return [f"tok{i} " for i in range(int(d.get("chunks", "3")))]
    items = body.get("input")
    last = items if isinstance(items, str) else items[-1]["content"]
    text = last if isinstance(last, str) else "".join(p.get("text", "") for p in last)
    text = DIRECTIVES.sub("", text)
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
    if d.get("web_search") == "1":
        items.append({"type": "web_search_call", "id": "ws_up", "status": "completed",
                      "action": {"type": "search", "query": "weather"}})  # fmt: skip
    call = CALLS.get(d.get("tools", ""))
    if call is not None:
        items.append({**call, "id": "fc_up", "call_id": "call_up1", "status": "completed"})
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
        elif kind in ("function_call", "custom_tool_call"):
            field, stem, pieces = (
                ("arguments", "response.function_call_arguments", ARGUMENTS)
                if kind == "function_call"
                else ("input", "response.custom_tool_call_input", PATCH.split("\n", 2))
            )  # fmt: skip
            if kind == "custom_tool_call":
                pieces = [pieces[0] + "\n", pieces[1] + "\n", pieces[2]]
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {**item, field: "", "status": "in_progress"}})  # fmt: skip
            events += [{"type": f"{stem}.delta", **head, "delta": a} for a in pieces]
            events.append({"type": f"{stem}.done", **head, field: item[field]})
        elif kind == "web_search_call":
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {**item, "status": "in_progress"}})  # fmt: skip
            events.append({"type": "response.web_search_call.completed", **head})
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


class Upstream(FakeServer):
    label = "fake responses upstream"

    async def answer(self, request: Request, reply: Reply, connection: int) -> None:
        body = request.json()
        seen = Seen(request.path, body, bool(body.get("stream")), time.time())
        self.log(seen, connection)
        if not request.path.endswith("/responses"):
            await reply.json(404, {"error": {"message": "only /responses here"}})
            return
        d = directives_of(body)
        fault = d.get("fault", "")
        if fault.startswith("status_"):
            code = int(fault.removeprefix("status_"))
            await reply.json(code, {"error": {"message": f"injected {code}"}})
            seen.completed = True
            return
        if not body.get("stream"):
            await reply.json(200, response_object(body, d, output_items(body, d)))
            seen.completed = True
            return
        await self.stream(body, d, reply, seen)

    async def stream(
        self, body: dict[str, Any], d: dict[str, str], reply: Reply, seen: Seen
    ) -> None:
        await reply.start("text/event-stream")
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
                    await reply.chunk(sse("error", {**error, "sequence_number": sequence}))
                    break
                if delay:
                    await asyncio.sleep(delay)
                sent += 1
            await reply.chunk(sse(event["type"], {**event, "sequence_number": sequence}))
        else:
            seen.completed = True
        await reply.chunk(b"")


def sse(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


if __name__ == "__main__":
    run(Upstream(), arguments().parse_args().port)
