"""A fake Azure OpenAI resource (deployment and v1 URL forms), run as a real process.

    python -m tests.support.fake_azure --port N --api-key KEY

Requires the `api-key` header, and `api-version` on the deployment form, as
Azure does (401 and 404 in Azure's error shape otherwise). Answers speak the
OpenAI wire with Azure's additions: a first stream chunk with
`prompt_filter_results` and no choices, `content_filter_results` on every
choice.

Directives (`[[...]]` in the last user text, or `;k=v` in the deployment name): `chunks=N`, `delay=MS`,
`tools=1`, and

    fault=throttle         429 with `retry-after-ms`
    fault=content_filter   the prompt is refused: 400, code `content_filter`
    fault=filter_finish    the answer stops with finish_reason `content_filter`
    fault=error_event      an error object after half the deltas
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from tests.support.fake_http import Reply, State, run
from tests.support.fake_server import Request, arguments, directives

ARGUMENTS = '{"city": "Paris"}'
FILTERS = {c: {"filtered": False, "severity": "safe"}
           for c in ("hate", "self_harm", "sexual", "violence")}  # fmt: skip


class FakeAzure:
    def __init__(self, api_key: str):
        self.api_key = api_key

    def describe(self, request: Request) -> dict[str, str]:
        """Directives from the deployment (or the v1 body's model) and the last message."""
        try:
            body = request.json()
            messages = body.get("messages", [])
            text = str(messages[-1].get("content", "")) if messages else ""
        except (ValueError, AttributeError):
            body, text = {}, ""
        parts = request.path.split("/")
        model = parts[3] if request.path.startswith("/openai/deployments/") else body.get("model")
        return directives(str(model or ""), [text])

    async def handle(self, request: Request, reply: Reply, state: State) -> None:
        if request.headers.get("api-key") != self.api_key:
            reply.seen.auth = "refused"
            error = {"code": "401", "message": "Access denied due to invalid subscription key."}
            await reply.json(401, {"error": error})
            return
        reply.seen.auth = "ok"
        deployment = request.path.startswith("/openai/deployments/")
        if deployment and "api-version=" not in request.query:
            await reply.json(404, {"error": {"code": "404", "message": "Resource not found"}})
            return
        if not request.path.endswith("/chat/completions"):
            await reply.json(404, {"error": {"code": "404", "message": "Resource not found"}})
            return
        body = request.json()
        model = request.path.split("/")[3] if deployment else str(body.get("model"))
        d = reply.seen.directives
        fault = d.get("fault", "")
        if fault == "throttle":
            error = {"code": "429", "message": "Requests to the ChatCompletions_Create Operation "
                     "have exceeded call rate limit."}  # fmt: skip
            await reply.json(429, {"error": error}, [("retry-after-ms", "1500"),
                                                     ("retry-after", "2")])  # fmt: skip
            return
        if fault == "content_filter":
            error = {"message": "The response was filtered due to the prompt triggering Azure "
                     "OpenAI's content management policy.", "type": None, "param": "prompt",
                     "code": "content_filter", "status": 400, "innererror": {
                         "code": "ResponsibleAIPolicyViolation",
                         "content_filter_result": {**FILTERS, "violence": {
                             "filtered": True, "severity": "high"}}}}  # fmt: skip
            await reply.json(400, {"error": error})
            return
        if body.get("stream"):
            await self.stream(model, body, d, reply)
        else:
            await reply.json(200, self.whole(model, d))

    def whole(self, model: str, d: dict[str, str]) -> dict[str, Any]:
        n = int(d.get("chunks", "4"))
        message: dict[str, Any] = {"role": "assistant",
                                   "content": "".join(f"tok{i} " for i in range(n))}  # fmt: skip
        finish = "content_filter" if d.get("fault") == "filter_finish" else "stop"
        if d.get("tools") == "1":
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": ARGUMENTS}}]}  # fmt: skip
            finish = "tool_calls"
        return {
            "id": "chatcmpl-azure", "object": "chat.completion", "created": int(time.time()),
            "model": model, "prompt_filter_results": [
                {"prompt_index": 0, "content_filter_results": FILTERS}],
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "content_filter_results": FILTERS}],
            "usage": {"prompt_tokens": 11, "completion_tokens": n, "total_tokens": 11 + n},
        }  # fmt: skip

    async def stream(
        self, model: str, body: dict[str, Any], d: dict[str, str], reply: Reply
    ) -> None:
        n = int(d.get("chunks", "4"))
        delay = float(d.get("delay", "0")) / 1000
        fault = d.get("fault", "")

        async def send(payload: dict[str, Any]) -> None:
            base = {"id": "chatcmpl-azure", "object": "chat.completion.chunk",
                    "created": int(time.time()), "model": model}  # fmt: skip
            await reply.chunk(b"data: " + json.dumps({**base, **payload}).encode() + b"\n\n")

        def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                                 "content_filter_results": FILTERS if delta else {}}]}  # fmt: skip

        await reply.start("text/event-stream")
        try:
            await send({"choices": [], "prompt_filter_results": [
                {"prompt_index": 0, "content_filter_results": FILTERS}]})  # fmt: skip
            await send(choice({"role": "assistant", "content": ""}))
            for i in range(n):
                if delay:
                    await asyncio.sleep(delay)
                if fault == "error_event" and i == n // 2:
                    await reply.chunk(b'data: {"error": {"code": "500", "message": "failed"}}\n\n')
                    await reply.end()
                    return
                if d.get("tools") == "1":
                    call = {"index": 0, "function": {"arguments": ARGUMENTS if i == 0 else ""}}
                    if i == 0:
                        call.update(id="call_1", type="function")
                        call["function"]["name"] = "get_weather"  # type: ignore[index]
                    await send(choice({"tool_calls": [call]}))
                else:
                    await send(choice({"content": f"tok{i} "}))
            finish = "tool_calls" if d.get("tools") == "1" else "stop"
            await send(choice({}, "content_filter" if fault == "filter_finish" else finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                usage = {"prompt_tokens": 11, "completion_tokens": n, "total_tokens": 11 + n}
                await send({"choices": [], "usage": usage})
            await reply.chunk(b"data: [DONE]\n\n")
            await reply.end()
        except ConnectionError:
            reply.keep_alive = False


if __name__ == "__main__":
    parser = arguments()
    parser.add_argument("--api-key", required=True)
    args = parser.parse_args()
    fake = FakeAzure(args.api_key)
    run(fake.handle, fake.describe, args.port)
