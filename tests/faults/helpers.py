"""What a client sees and what the ledger says, for the fault, limit and shutdown tests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.processes import Gateway


@dataclass
class Outcome:
    """One call as the client saw it."""

    status: int
    headers: httpx.Headers
    body: bytes
    frames: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def trace_id(self) -> str:
        return self.headers["x-llmeu-trace-id"]

    @property
    def content(self) -> str:
        return "".join(
            f["choices"][0]["delta"].get("content") or ""
            for f in self.frames
            if f.get("choices") and "delta" in f["choices"][0]
        )

    @property
    def error_frame(self) -> dict[str, Any] | None:
        last = self.frames[-1] if self.frames else None
        return last if last is not None and "error" in last else None


def parse_sse(body: bytes) -> tuple[list[dict[str, Any]], bool]:
    """The JSON frames of a stream and whether it ended with exactly one `[DONE]`."""
    frames: list[dict[str, Any]] = []
    done = 0
    for block in body.decode().split("\n\n"):
        if not block:
            continue
        assert block.startswith("data: "), block[:200]
        data = block[len("data: ") :]
        if data == "[DONE]":
            done += 1
        else:
            assert done == 0, "a frame came after [DONE]"
            frames.append(json.loads(data))
    assert done <= 1
    return frames, done == 1


def chat(
    gateway: Gateway,
    content: str,
    *,
    stream: bool = False,
    model: str = "fake-model",
    key: str | None = None,
    timeout: float = 60,
    **extra: Any,
) -> Outcome:
    body = {"model": model, "messages": [{"role": "user", "content": content}], **extra}
    if stream:
        body["stream"] = True
    return post(gateway, "/v1/chat/completions", body, key=key, timeout=timeout)


def post(
    gateway: Gateway,
    path: str,
    body: Any,
    *,
    key: str | None = None,
    timeout: float = 60,
    headers: dict[str, str] | None = None,
) -> Outcome:
    auth = {"authorization": f"Bearer {key or gateway.admin_key}", **(headers or {})}
    with (
        httpx.Client(timeout=timeout) as client,
        client.stream("POST", gateway.url + path, json=body, headers=auth) as response,
    ):
        raw = b""
        try:
            for chunk in response.iter_raw():
                raw += chunk
        except httpx.RemoteProtocolError:
            pass  # a cut stream: what arrived is what the client saw
    outcome = Outcome(response.status_code, response.headers, raw)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        outcome.frames, outcome.done = parse_sse(raw)
    return outcome


def api_get(gateway: Gateway, path: str, key: str | None = None) -> httpx.Response:
    return httpx.get(
        gateway.url + path,
        headers={"authorization": f"Bearer {key or gateway.admin_key}"},
        timeout=30,
    )


def trace(gateway: Gateway, trace_id: str) -> dict[str, Any]:
    response = api_get(gateway, f"/v1/platform/traces/{trace_id}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def create_key(gateway: Gateway, **spec: Any) -> dict[str, Any]:
    response = httpx.post(
        gateway.url + "/v1/platform/keys",
        json={"name": "tenant", **spec},
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created
