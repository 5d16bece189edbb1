"""A fake AWS Bedrock runtime (Converse and ConverseStream), run as a real process.

    python -m tests.support.fake_bedrock --port N --access-key AKID --secret SECRET

Every request must carry a SigV4 signature made with the same secret; the
fake recomputes it from the AWS specification (`sigv4_signature`, written
here, independent of botocore) and answers 403 `InvalidSignatureException`
when it differs. Streams are `application/vnd.amazon.eventstream` frames
from `tests/support/eventstream.py`.

Directives (`[[...]]` in the last user text, or `;k=v` in the model id):

    chunks=N      text deltas (default 4)      delay=MS   pause before each frame
    tools=1       answer with a toolUse block  reasoning=1  reasoning deltas and a signature first
    fault=throttle        HTTP 429 ThrottlingException
    fault=unavailable     HTTP 503 ServiceUnavailableException
    fault=stall           no answer at all (for the first-token timeout)
    fault=echo            HTTP 400 ValidationException quoting the request body
    fault=throttle_event  a throttlingException frame before any content
    fault=error_event     a modelStreamErrorException frame after half the deltas
    fault=crc             a frame whose CRC does not match, after half the deltas
    fault=truncated       the body ends after half the deltas (no messageStop)
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
from typing import Any
from urllib.parse import quote, unquote

from tests.support import eventstream
from tests.support.fake_http import Reply, State, run
from tests.support.fake_server import Request, arguments, directives

ARGUMENTS = {"city": "Paris"}
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<scope>[^,]+), "
    r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})$"
)


def sigv4_signature(
    secret: str, request: Request, amz_date: str, scope: str, signed_headers: list[str]
) -> str:
    """Signature Version 4 as the AWS General Reference specifies it (non-S3 services: the
    path as sent is URI-encoded once more)."""
    canonical_uri = quote(request.path or "/", safe="/~")
    pairs = sorted(
        (quote(unquote(k), safe="-_.~"), quote(unquote(v), safe="-_.~"))
        for k, _, v in (p.partition("=") for p in request.query.split("&") if p)
    )
    canonical_query = "&".join(f"{k}={v}" for k, v in pairs)
    canonical_headers = "".join(
        f"{name}:{' '.join(request.headers.get(name, '').split())}\n" for name in signed_headers
    )
    canonical = "\n".join([
        request.method, canonical_uri, canonical_query, canonical_headers,
        ";".join(signed_headers), hashlib.sha256(request.body).hexdigest(),
    ])  # fmt: skip
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = ("AWS4" + secret).encode()
    for part in scope.split("/"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


class FakeBedrock:
    def __init__(self, access_key: str, secret: str):
        self.access_key = access_key
        self.secret = secret

    def describe(self, request: Request) -> dict[str, str]:
        model = request.path.split("/")[2] if request.path.startswith("/model/") else ""
        texts = []
        try:
            for message in request.json().get("messages", []):
                texts.extend(str(block.get("text", "")) for block in message.get("content", []))
        except (ValueError, AttributeError):
            pass
        return directives(model, texts[-1:])

    def verify(self, request: Request) -> str | None:
        """Why the signature is refused, or None."""
        found = _AUTH.match(request.headers.get("authorization", ""))
        if not found:
            return "missing or malformed Authorization"
        if found["key"] != self.access_key:
            return "The security token included in the request is invalid."
        signed = found["signed"].split(";")
        if "host" not in signed or "x-amz-date" not in signed:
            return "host and x-amz-date must be signed"
        date = request.headers.get("x-amz-date", "")
        expected = sigv4_signature(self.secret, request, date, found["scope"], signed)
        if not hmac.compare_digest(expected, found["signature"]):
            return "The request signature we calculated does not match the signature you provided."
        return None

    async def handle(self, request: Request, reply: Reply, state: State) -> None:
        problem = self.verify(request)
        reply.seen.auth = "refused" if problem else "ok"
        if problem:
            await reply.json(403, {"message": problem},
                             [("x-amzn-ErrorType", "InvalidSignatureException:http://internal")])  # fmt: skip
            return
        d = reply.seen.directives
        fault = d.get("fault", "")
        if fault == "stall":
            await asyncio.sleep(3600)
        if fault == "echo":  # a refusal quoting the request, as validation errors often do
            quoted = request.body.decode("utf-8", "replace")
            await reply.json(400, {"message": f"Malformed input request: {quoted}"},
                             [("x-amzn-ErrorType", "ValidationException:http://internal")])  # fmt: skip
            return
        if fault in ("throttle", "unavailable"):
            status, kind = (429, "ThrottlingException") if fault == "throttle" else (
                503, "ServiceUnavailableException")  # fmt: skip
            await reply.json(status, {"message": "Too many requests, please wait."},
                             [("x-amzn-ErrorType", f"{kind}:http://internal")])  # fmt: skip
            return
        if request.path.endswith("/converse-stream"):
            await self.stream(d, reply)
        else:
            await reply.json(200, self.converse(d))

    def converse(self, d: dict[str, str]) -> dict[str, Any]:
        n = int(d.get("chunks", "4"))
        content: list[dict[str, Any]] = []
        if d.get("reasoning") == "1":
            content.append({"reasoningContent": {"reasoningText": {"text": "thinking",
                                                                   "signature": "sig"}}})  # fmt: skip
        content.append({"text": "".join(f"tok{i} " for i in range(n))})
        stop = "end_turn"
        if d.get("tools") == "1":
            content.append({"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather",
                                        "input": ARGUMENTS}})  # fmt: skip
            stop = "tool_use"
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {"inputTokens": 11, "outputTokens": n, "totalTokens": 11 + n},
            "metrics": {"latencyMs": 5},
        }

    async def stream(self, d: dict[str, str], reply: Reply) -> None:
        n = int(d.get("chunks", "4"))
        delay = float(d.get("delay", "0")) / 1000
        fault = d.get("fault", "")
        await reply.start(eventstream.CONTENT_TYPE)
        try:
            await reply.chunk(eventstream.event("messageStart", {"role": "assistant"}))
            if fault == "throttle_event":
                await reply.chunk(eventstream.exception("throttlingException", "Too many tokens"))
                await reply.end()
                return
            block = 0
            if d.get("reasoning") == "1":
                for delta in ({"reasoningContent": {"text": "thinking"}},
                              {"reasoningContent": {"signature": "sig"}}):  # fmt: skip
                    await reply.chunk(eventstream.event(
                        "contentBlockDelta", {"delta": delta, "contentBlockIndex": block}))  # fmt: skip
                await reply.chunk(eventstream.event("contentBlockStop", {"contentBlockIndex": 0}))
                block += 1
            for i in range(n):
                if delay:
                    await asyncio.sleep(delay)
                if i == n // 2 and await self.fault_mid_stream(fault, reply):
                    return
                text = {"delta": {"text": f"tok{i} "}, "contentBlockIndex": block}
                await reply.chunk(eventstream.event("contentBlockDelta", text))
            await reply.chunk(eventstream.event("contentBlockStop", {"contentBlockIndex": block}))
            stop = "end_turn"
            if d.get("tools") == "1":
                block += 1
                await self.tool_use(block, reply)
                stop = "tool_use"
            await reply.chunk(eventstream.event("messageStop", {"stopReason": stop}))
            usage = {"inputTokens": 11, "outputTokens": n, "totalTokens": 11 + n}
            await reply.chunk(eventstream.event("metadata", {"usage": usage,
                                                             "metrics": {"latencyMs": 5}}))  # fmt: skip
            await reply.end()
        except ConnectionError:
            reply.keep_alive = False

    async def fault_mid_stream(self, fault: str, reply: Reply) -> bool:
        if fault == "error_event":
            await reply.chunk(eventstream.exception("modelStreamErrorException", "model failed"))
            await reply.end()
        elif fault == "crc":
            await reply.chunk(eventstream.corrupt(eventstream.event(
                "contentBlockDelta", {"delta": {"text": "x"}, "contentBlockIndex": 0})))  # fmt: skip
            await reply.end()
        elif fault == "truncated":
            await reply.end()
        else:
            return False
        return True

    async def tool_use(self, block: int, reply: Reply) -> None:
        start = {"start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}},
                 "contentBlockIndex": block}  # fmt: skip
        await reply.chunk(eventstream.event("contentBlockStart", start))
        arguments = json.dumps(ARGUMENTS)
        for piece in (arguments[:5], arguments[5:]):
            delta = {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": block}
            await reply.chunk(eventstream.event("contentBlockDelta", delta))
        await reply.chunk(eventstream.event("contentBlockStop", {"contentBlockIndex": block}))


if __name__ == "__main__":
    parser = arguments()
    parser.add_argument("--access-key", required=True)
    parser.add_argument("--secret", required=True)
    args = parser.parse_args()
    fake = FakeBedrock(args.access_key, args.secret)
    run(fake.handle, fake.describe, args.port)
