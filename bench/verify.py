"""Check a target before measuring it: right answers, streamed and not, and auth enforced.

A proxy that answers fast but wrong (an error body, a buffered stream, no auth)
would make every number after it meaningless, so a failed check stops that
target's measurements.
"""

from __future__ import annotations

import httpx
import msgspec

import fake_openai
from loadgen import Target, chat_body

CHUNKS = 8


class VerificationError(Exception):
    pass


def expected_text(chunks: int) -> str:
    return "".join(fake_openai.token(i) for i in range(chunks))


def _stream_text(lines: list[str]) -> tuple[str, bool]:
    text, done = [], False
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            continue
        for choice in msgspec.json.decode(data).get("choices", []):
            text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text), done


async def verify(target: Target) -> None:
    url = f"{target.base_url}/chat/completions"
    headers = {"authorization": f"Bearer {target.api_key}"}
    expected = expected_text(CHUNKS)
    plain = chat_body(target.model, False, f"chunks={CHUNKS}")
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(url, content=plain, headers=headers)
        if response.status_code != 200:
            raise VerificationError(f"{target.name}: {response.status_code} {response.text[:300]}")
        content = response.json()["choices"][0]["message"]["content"]
        if content != expected:
            raise VerificationError(f"{target.name}: content {content!r} != {expected!r}")

        body = chat_body(target.model, True, f"chunks={CHUNKS}")
        async with client.stream("POST", url, content=body, headers=headers) as stream:
            if stream.status_code != 200:
                await stream.aread()
                status, text = stream.status_code, stream.text[:300]
                raise VerificationError(f"{target.name}: stream {status} {text}")
            lines = [line async for line in stream.aiter_lines()]
        text, done = _stream_text(lines)
        if text != expected or not done:
            raise VerificationError(f"{target.name}: stream text {text!r}, [DONE] seen: {done}")

        wrong = {"authorization": "Bearer sk-wrong"}
        response = await client.post(url, content=plain, headers=wrong)
        if target.pid is not None and not 400 <= response.status_code < 500:
            status = response.status_code
            raise VerificationError(f"{target.name}: a wrong key got {status}, not rejected")
