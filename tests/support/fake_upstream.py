"""A fake OpenAI-compatible upstream with fault injection, run as a real process.

    python -m tests.support.fake_upstream --port 0 --port-file FILE

Behaviour comes from directives, `key=value` pairs separated by `;`, taken
from the upstream model name (set per endpoint in the gateway's config, e.g.
`model: "fake;fault=status_503"`) and from `[[...]]` in the last message
(e.g. `[[fault=reset_mid_stream;chunks=20]]`); the message wins.

    chunks=N        content deltas to stream (default 6)
    delay=MS        pause before each delta (default 0)
    text=WORD       the word each delta carries (default `tok`)
    tools=1         stream a tool call instead of text
    call=NAME       the tool the call is of (default `get_weather`, with `{"city": "Paris"}`);
                    a tool of one string argument `input` gets `{"input": PATCH}`, whose
                    escapes the pieces split
    tool=NAME       the same as call=NAME
    args=JSON       the arguments the call carries (JSON without `;` or `]`), e.g.
                    `args={"cmd": "echo hi"}` for an agent's shell tool; `args=echo`: the
                    arguments of the request's last tool call, as received
    reasoning=N     stream N reasoning deltas (`reasoning_content`) before the answer
    finish=REASON   the finish reason to end with (default stop, or tool_calls)
    fault=NAME      status_<code> | echo | echo_mid_stream | reset_mid_stream | stall_first |
                    stall_between | malformed_sse | invalid_json | deep_json | huge_chunk | slow_drip |
                    missing_done | error_event | no_usage | quote_key | quote_key_mid_stream
    stall=S         how long a stall lasts (default 3600 s)
    reply=echo      answer with the last message's text (directives taken out), streamed in
                    pieces of `piece=N` characters (default 4); the request body is recorded
                    (`body` in `/_stats`, as for every embeddings request) so a test can read
                    exactly what the upstream got
    status=CODE     the status `echo` answers with (default 400)

Without directives it behaves as an OpenAI-compatible server should: a call
with `tools` and `tool_choice: "required"` gets a tool call, messages with an
unknown role are a 400, and a model named `missing-…` is unknown (404), each
in OpenAI's error shape.

`quote_key` refuses the request as a provider refuses a wrong key, quoting the
`Authorization` header it received (`Incorrect API key provided: …`);
`quote_key_mid_stream` streams half its deltas, then sends an error event quoting
it. `echo` refuses the request the way many upstreams do, quoting its messages
in the error message; `echo_mid_stream` streams half its deltas, then sends
an error event quoting the messages and the text streamed so far.

`GET /_stats` returns every request seen (model, directives, when it arrived,
when its connection closed, whether the response completed); `POST /_reset`
clears them. Connection-close times are what the disconnect tests measure.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
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


@dataclass
class Seen:
    id: int
    path: str
    model: str
    stream: bool
    directives: dict[str, str]
    received_at: float
    connection: int
    closed_at: float | None = None
    completed: bool = False
    chunks_sent: int = 0
    messages: list[Any] = field(default_factory=list)
    body: str | None = None  # the request as received, with `reply=echo`


def directives_of(body: dict[str, Any]) -> dict[str, str]:
    messages = body.get("messages") or []
    texts = []
    if messages:
        content = messages[-1].get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        texts.append(str(content or ""))
    return directives(str(body.get("model", "")), texts)


def chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


class Upstream(FakeServer):
    async def answer(self, request: Request, reply: Reply, connection: int) -> None:
        body = request.json()
        refusal = refuse(body)
        if refusal is not None:
            await reply.json(*refusal)
            return
        d = directives_of(body)
        if body.get("tools") and body.get("tool_choice") == "required":
            d.setdefault("tools", "1")
        seen = Seen(
            id=len(self.requests),
            path=request.path,
            model=str(body.get("model", "")),
            stream=bool(body.get("stream")),
            directives=d,
            received_at=time.time(),
            connection=connection,
            messages=list(body.get("messages") or []),
        )
        if d.get("reply") == "echo" or request.path.endswith("/embeddings") or body.get("tools"):
            seen.body = request.body.decode()
        self.log(seen, connection)
        fault = d.get("fault", "")
        stall = float(d.get("stall", "3600"))
        if fault.startswith("quote_key"):
            d["authorization"] = request.headers.get("authorization", "").removeprefix("Bearer ")
        if fault == "quote_key":
            message = f"Incorrect API key provided: {d['authorization']}"
            await reply.json(401, {"error": {"message": message, "type": "invalid_request_error",
                                             "code": "invalid_api_key"}})  # fmt: skip
            seen.completed = True
            return
        if fault == "echo":
            status = int(d.get("status", "400"))
            await reply.encoded_json(status, echo_error("invalid request", body).encode())
            seen.completed = True
            return
        if fault.startswith("status_"):
            status = int(fault.removeprefix("status_"))
            error = {"error": {"message": f"injected {status}", "type": "fake", "code": None}}
            await reply.json(status, error)
            seen.completed = True
            return
        if fault == "stall_first":
            await asyncio.sleep(stall)
        if request.path.endswith("/embeddings"):
            await self.embeddings(body, reply)
        elif seen.stream:
            await self.stream(body, d, reply, seen)
            return
        else:
            await self.complete(body, d, reply)
        seen.completed = True

    async def complete(self, body: dict[str, Any], d: dict[str, str], reply: Reply) -> None:
        n = int(d.get("chunks", "6"))
        delay = float(d.get("delay", "0")) / 1000
        if delay:
            await asyncio.sleep(delay * n)
        word = d.get("text", "tok")
        message: dict[str, Any] = {"role": "assistant", "content": " ".join([word] * n)}
        if d.get("reply") == "echo":
            message["content"] = echoed(body)
        finish = "stop"
        if d.get("tools") == "1":
            name, arguments = called(body, d)
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": name, "arguments": arguments}}]}  # fmt: skip
            finish = "tool_calls"
        finish = d.get("finish", finish)
        response: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if d.get("fault") != "no_usage":
            response["usage"] = {
                "prompt_tokens": 11,
                "completion_tokens": n,
                "total_tokens": 11 + n,
            }
        await reply.json(200, response)

    async def embeddings(self, body: dict[str, Any], reply: Reply) -> None:
        inputs = body.get("input")
        items = inputs if isinstance(inputs, list) else [inputs]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(str(x)) % 7), 1.0, 0.5]}
            for i, x in enumerate(items)
        ]
        response = {"object": "list", "data": data, "model": body.get("model"),
                    "usage": {"prompt_tokens": 5 * len(items), "total_tokens": 5 * len(items)}}  # fmt: skip
        await reply.json(200, response)

    async def stream(
        self,
        body: dict[str, Any],
        d: dict[str, str],
        reply: Reply,
        seen: Seen,
    ) -> None:
        model = str(body.get("model"))
        fault = d.get("fault", "")
        n = int(d.get("chunks", "6"))
        delay = float(d.get("delay", "200" if fault == "slow_drip" else "0")) / 1000
        word = d.get("text", "tok")
        name, called_with = called(body, d)
        await reply.start("text/event-stream")
        await reply.chunk(chunk(model, {"role": "assistant", "content": ""}))
        for i in range(int(d.get("reasoning", "0"))):
            await reply.chunk(chunk(model, {"reasoning_content": f"think{i} "}))
        for i in range(n):
            if delay:
                await asyncio.sleep(delay)
            if fault == "reset_mid_stream" and i == n // 2:
                reply.reset()
                return
            if fault == "stall_between" and i == n // 2:
                await asyncio.sleep(float(d.get("stall", "3600")))
            if fault == "invalid_json" and i == n // 2:
                await reply.chunk(b"data: {this is not json\n\n")
                continue
            if fault == "deep_json" and i == n // 2:
                await reply.chunk(b'data: {"deep": ' + b"[" * 20_000 + b"]" * 20_000 + b"}\n\n")
                continue
            if fault == "malformed_sse" and i == n // 2:
                await reply.chunk(b"this line is not a field\n\n")
                reply.reset()
                return
            if fault == "echo_mid_stream" and i == n // 2:
                produced = "".join(f"{word}{j} " for j in range(i))
                error = echo_error(f"output rejected after {produced!r}", body)
                await reply.chunk(b"data: " + error.encode() + b"\n\n")
                await reply.chunk(b"")
                return
            if fault == "quote_key_mid_stream" and i == n // 2:
                message = f"key {d['authorization']} was revoked while streaming"
                await reply.chunk(b"data: " + json.dumps({"error": {"message": message}}).encode()
                                  + b"\n\n")  # fmt: skip
                await reply.chunk(b"")
                return
            if fault == "error_event" and i == n // 2:
                error = {"error": {"message": "injected mid-stream error", "type": "fake"}}
                await reply.chunk(b"data: " + json.dumps(error).encode() + b"\n\n")
                await reply.chunk(b"")
                return
            if d.get("reply") == "echo":
                break
            if d.get("tools") == "1":  # the name first, then the arguments in n - 1 pieces
                delta: dict[str, Any] = {"tool_calls": [{"index": 0, "id": "call_1",
                    "type": "function", "function": {"name": name,
                    "arguments": "" if n > 1 else called_with}}]}  # fmt: skip
                if i > 0:
                    size = len(called_with)
                    piece = called_with[(i - 1) * size // (n - 1) : i * size // (n - 1)]
                    delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
            else:
                text = ("x" * (1 << 20)) if fault == "huge_chunk" and i == 0 else f"{word}{i} "
                delta = {"content": text}
            await reply.chunk(chunk(model, delta))
            seen.chunks_sent += 1
        if d.get("reply") == "echo":
            text, size = echoed(body), int(d.get("piece", "4"))
            for start in range(0, len(text), size):
                await reply.chunk(chunk(model, {"content": text[start : start + size]}))
                seen.chunks_sent += 1
        finish = d.get("finish", "tool_calls" if d.get("tools") == "1" else "stop")
        await reply.chunk(chunk(model, {}, finish))
        options = body.get("stream_options") or {}
        if options.get("include_usage") and fault != "no_usage":
            usage = {"prompt_tokens": 11, "completion_tokens": n, "total_tokens": 11 + n}
            payload = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                       "created": int(time.time()), "model": model, "choices": [], "usage": usage}  # fmt: skip
            await reply.chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")
        if fault != "missing_done":
            await reply.chunk(b"data: [DONE]\n\n")
        await reply.chunk(b"")
        seen.completed = True


def echoed(body: dict[str, Any]) -> str:
    """The last message's text without its directives: what `reply=echo` answers."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return DIRECTIVES.sub("", str(content or ""))


ARGUMENTS = '{"city": "Paris"}'
PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+Grüß "dich" \\o/\n*** End Patch\n'


def called(body: dict[str, Any], d: dict[str, str]) -> tuple[str, str]:
    """The tool a call is of (`call=`) and its arguments: `{"input": PATCH}` for a function of
    one string argument `input` (a custom tool's function form), else `ARGUMENTS`."""
    name = d.get("call") or d.get("tool", "get_weather")
    if d.get("args") == "echo":
        calls = [c for m in body.get("messages") or () for c in m.get("tool_calls") or ()]
        return name, str(calls[-1]["function"]["arguments"]) if calls else "{}"
    if "args" in d:
        return name, d["args"]
    for tool in body.get("tools") or ():
        function = tool.get("function") or {}
        properties = (function.get("parameters") or {}).get("properties") or {}
        if function.get("name") == name and set(properties) == {"input"}:
            return name, json.dumps({"input": PATCH})
    return name, ARGUMENTS


ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


def refuse(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """What an OpenAI-compatible server answers to a request it cannot take."""
    model = str(body.get("model", ""))
    if model.startswith("missing-"):
        error = {"message": f"The model `{model}` does not exist", "type": "invalid_request_error",
                 "param": "model", "code": "model_not_found"}  # fmt: skip
        return 404, {"error": error}
    messages = body.get("messages")
    if messages is not None and (
        not isinstance(messages, list)
        or any(not isinstance(m, dict) or m.get("role") not in ROLES for m in messages)
    ):
        error = {"message": "invalid message role", "type": "invalid_request_error",
                 "param": "messages", "code": None}  # fmt: skip
        return 400, {"error": error}
    return None


def echo_error(reason: str, body: dict[str, Any]) -> str:
    """An OpenAI-shaped error whose message quotes the request's messages."""
    quoted = json.dumps(body.get("messages"), ensure_ascii=False)
    error = {"message": f"{reason}: messages={quoted}", "type": "invalid_request_error",
             "param": "messages", "code": None}  # fmt: skip
    return json.dumps({"error": error}, ensure_ascii=False)


if __name__ == "__main__":
    parser = arguments()
    parser.add_argument("--port-file", type=Path)
    args = parser.parse_args()
    run(Upstream(), args.port, args.port_file)
