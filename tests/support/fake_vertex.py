"""A fake Vertex AI (Gemini generateContent / streamGenerateContent?alt=sse) and its token
endpoint, run as a real process.

    python -m tests.support.fake_vertex --port N --public-key SA_PUBLIC.pem

`POST /token` is Google's OAuth2 token endpoint for service accounts: it
checks the RS256 signature of the JWT assertion against the service
account's public key and issues an access token valid for an hour. A
generate call without an issued, unrevoked token gets Google's 401.

Directives (`[[...]]` in the last user text, or `;k=v` in the model name):

    chunks=N   text chunks (default 4)   delay=MS   pause before each chunk
    tools=1    a functionCall part        reasoning=1  a thought part first
    fault=status_429      RESOURCE_EXHAUSTED
    fault=echo            HTTP 400 INVALID_ARGUMENT quoting the request body
    fault=expire_token    the token in use is revoked: 401 (once per request body)
    fault=safety          a SAFETY finishReason after half the chunks
    fault=blocked         the prompt is blocked: promptFeedback.blockReason, no candidate
    fault=error_event     an error object after half the chunks
    fault=malformed       invalid JSON after half the chunks
    fault=truncated       the body ends after half the chunks, without a finishReason

Claude on Vertex (`publishers/anthropic/models/{model}:rawPredict` and
`:streamRawPredict`) speaks Anthropic's Messages wire, built by
`tests/support/fake_anthropic.py`: a body with `model`, or without
`"anthropic_version": "vertex-2023-10-16"`, is refused with Anthropic's 400.
Besides `chunks`, `delay`, `tools`, `fault=status_429` and `fault=expire_token`
above, `fault=status_529` answers Anthropic's `overloaded_error` and
`fault=overloaded_event` sends it as an `error` event after half the deltas.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qs

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.support.fake_anthropic import block_delta, error, message, sse, usage
from tests.support.fake_http import Reply, State, run
from tests.support.fake_server import Request, arguments, directives

ARGUMENTS = {"city": "Paris"}
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
UNAUTHENTICATED = {"error": {"code": 401, "status": "UNAUTHENTICATED",
                             "message": "Request had invalid authentication credentials."}}  # fmt: skip


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class FakeVertex:
    def __init__(self, public_key: rsa.RSAPublicKey):
        self.public_key = public_key
        self.tokens: dict[str, bool] = {}  # issued token → revoked
        self.expired_for: set[bytes] = set()  # bodies whose token was revoked once already

    def describe(self, request: Request) -> dict[str, str]:
        model = request.path.rsplit("/", 1)[-1].split(":")[0]
        texts = []
        try:
            body = request.json()
            for content in body.get("contents", []):
                texts.extend(str(p.get("text", "")) for p in content.get("parts", []))
            for turn in body.get("messages", []):  # Claude on Vertex
                content = turn.get("content")
                if isinstance(content, list):
                    content = " ".join(str(b.get("text", "")) for b in content)
                texts.append(str(content or ""))
        except (ValueError, AttributeError):
            pass
        found = directives(model, texts[-1:])
        if "/publishers/anthropic/" in request.path:
            found.setdefault("chunks", "4")
        return found

    async def handle(self, request: Request, reply: Reply, state: State) -> None:
        if request.path == "/token":
            await self.token(request, reply, state)
            return
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        d = reply.seen.directives
        if token not in self.tokens or self.tokens[token]:
            reply.seen.auth = "refused"
            await reply.json(401, UNAUTHENTICATED)
            return
        reply.seen.auth = "ok"
        fault = d.get("fault", "")
        if fault == "expire_token" and request.body not in self.expired_for:
            self.expired_for.add(request.body)
            self.tokens[token] = True
            await reply.json(401, UNAUTHENTICATED)
            return
        if fault == "echo":  # a refusal quoting the request, as validation errors often do
            error = {"code": 400, "status": "INVALID_ARGUMENT",
                     "message": f"Invalid request: {request.body.decode('utf-8', 'replace')}"}  # fmt: skip
            await reply.json(400, {"error": error})
            return
        if fault == "status_429":
            error = {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded."}
            await reply.json(429, {"error": error})
            return
        if "/publishers/anthropic/" in request.path:
            await self.anthropic(request, d, reply)
        elif request.path.endswith(":streamGenerateContent") and request.query == "alt=sse":
            await self.stream(d, reply)
        elif request.path.endswith(":generateContent"):
            await reply.json(200, self.whole(d))
        else:
            await reply.json(404, {"error": {"code": 404, "message": "not found"}})

    async def token(self, request: Request, reply: Reply, state: State) -> None:
        form = parse_qs(request.body.decode())
        assertion = form.get("assertion", [""])[0]
        try:
            head, claims, signature = assertion.split(".")
            self.public_key.verify(_b64(signature), f"{head}.{claims}".encode(),
                                   padding.PKCS1v15(), hashes.SHA256())  # fmt: skip
            body = json.loads(_b64(claims))
            assert body["exp"] > time.time() and "cloud-platform" in body["scope"]
        except (ValueError, InvalidSignature, AssertionError, KeyError):
            await reply.json(400, {"error": "invalid_grant", "error_description": "bad JWT"})
            return
        token = f"ya29.fake-{secrets.token_hex(8)}"
        self.tokens[token] = False
        state.counters["tokens"] = state.counters.get("tokens", 0) + 1
        await reply.json(200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"})

    def whole(self, d: dict[str, str]) -> dict[str, Any]:
        n = int(d.get("chunks", "4"))
        if d.get("fault") == "blocked":
            return {"promptFeedback": {"blockReason": "SAFETY"},
                    "usageMetadata": {"promptTokenCount": 11, "totalTokenCount": 11}}  # fmt: skip
        parts: list[dict[str, Any]] = []
        if d.get("reasoning") == "1":
            parts.append({"text": "thinking", "thought": True})
        parts.append({"text": "".join(f"tok{i} " for i in range(n))})
        if d.get("tools") == "1":
            parts.append({"functionCall": {"name": "get_weather", "args": ARGUMENTS}})
        reason = "SAFETY" if d.get("fault") == "safety" else "STOP"
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": reason}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": n,
                              "totalTokenCount": 11 + n},
            "modelVersion": "gemini-fake-001",
        }  # fmt: skip

    async def stream(self, d: dict[str, str], reply: Reply) -> None:
        n = int(d.get("chunks", "4"))
        delay = float(d.get("delay", "0")) / 1000
        fault = d.get("fault", "")

        async def send(body: Any) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            await reply.chunk(b"data: " + data + b"\r\n\r\n")

        def chunk(parts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
            candidate = {"content": {"role": "model", "parts": parts}, **extra}
            return {"candidates": [candidate], "modelVersion": "gemini-fake-001"}

        await reply.start("text/event-stream")
        try:
            if fault == "blocked":
                await send(self.whole(d))
                await reply.end()
                return
            if d.get("reasoning") == "1":
                await send(chunk([{"text": "thinking", "thought": True}]))
            for i in range(n):
                if delay:
                    await asyncio.sleep(delay)
                if i == n // 2 and fault in ("safety", "error_event", "malformed", "truncated"):
                    if fault == "safety":
                        await send(chunk([], finishReason="SAFETY"))
                    elif fault == "error_event":
                        await send({"error": {"code": 500, "message": "internal error",
                                              "status": "INTERNAL"}})  # fmt: skip
                    elif fault == "malformed":
                        await send(b"{not json")
                    await reply.end()
                    return
                await send(chunk([{"text": f"tok{i} "}]))
            final: list[dict[str, Any]] = []
            if d.get("tools") == "1":
                final.append({"functionCall": {"name": "get_weather", "args": ARGUMENTS}})
            last = chunk(final, finishReason="STOP")
            last["usageMetadata"] = {"promptTokenCount": 11, "candidatesTokenCount": n,
                                     "totalTokenCount": 11 + n}  # fmt: skip
            await send(last)
            await reply.end()
        except ConnectionError:
            reply.keep_alive = False

    async def anthropic(self, request: Request, d: dict[str, str], reply: Reply) -> None:
        body = request.json()
        if "model" in body or body.get("anthropic_version") != VERTEX_ANTHROPIC_VERSION:
            await reply.json(400, error("invalid_request_error",
                                        "model must be in the URL; anthropic_version: "
                                        f"{VERTEX_ANTHROPIC_VERSION} is required"))  # fmt: skip
            return
        if d.get("fault") == "status_529":
            await reply.json(529, error("overloaded_error", "Overloaded"))
        elif request.path.endswith(":streamRawPredict"):
            await self.anthropic_stream(body, d, reply)
        elif request.path.endswith(":rawPredict"):
            await reply.json(200, message(body, d))
        else:
            await reply.json(404, {"error": {"code": 404, "message": "not found"}})

    async def anthropic_stream(self, body: dict[str, Any], d: dict[str, str], reply: Reply) -> None:
        n = int(d["chunks"])
        delay = float(d.get("delay", "0")) / 1000
        tools = d.get("tools") == "1"
        await reply.start("text/event-stream")
        try:
            start = message(body, d, empty=True)
            await reply.chunk(sse("message_start", {"type": "message_start", "message": start}))
            await reply.chunk(sse("ping", {"type": "ping"}))
            block = ({"type": "tool_use", "id": "toolu_fake1", "name": "get_weather",
                      "input": {}} if tools else {"type": "text", "text": ""})  # fmt: skip
            await reply.chunk(sse("content_block_start", {"type": "content_block_start",
                                                          "index": 0, "content_block": block}))  # fmt: skip
            arguments = json.dumps(ARGUMENTS)
            for i in range(n):
                if delay:
                    await asyncio.sleep(delay)
                if d.get("fault") == "overloaded_event" and i == n // 2:
                    await reply.chunk(sse("error", error("overloaded_error", "Overloaded")))
                    await reply.end()
                    return
                if tools:
                    piece = arguments[i * len(arguments) // n : (i + 1) * len(arguments) // n]
                    delta = {"type": "input_json_delta", "partial_json": piece}
                else:
                    delta = {"type": "text_delta", "text": f"tok{i} "}
                await reply.chunk(block_delta(0, delta))
            await reply.chunk(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
            reason = "tool_use" if tools else "end_turn"
            await reply.chunk(sse("message_delta", {"type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": usage(d, n)}))  # fmt: skip
            await reply.chunk(sse("message_stop", {"type": "message_stop"}))
            await reply.end()
        except ConnectionError:
            reply.keep_alive = False


if __name__ == "__main__":
    parser = arguments()
    parser.add_argument("--public-key", required=True)
    args = parser.parse_args()
    with open(args.public_key, "rb") as file:
        key = serialization.load_pem_public_key(file.read())
    assert isinstance(key, rsa.RSAPublicKey)
    fake = FakeVertex(key)
    run(fake.handle, fake.describe, args.port)
