"""One call as a client sees it, kept read by read with the time each read arrived.

Framing checks need what the network delivered, not what a decoder made of it:
how events were split across reads, which line endings and comments came,
whether deltas arrived one by one or in a burst.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from llmeu.protocol.sse import DONE_DATA, ServerSentEvent, SSEDecoder


@dataclass(frozen=True, slots=True)
class Read:
    at: float  # seconds after the request was sent
    data: bytes
    events: tuple[ServerSentEvent, ...]
    pending: bool  # an event was left incomplete at the end of this read


@dataclass
class Exchange:
    """What came back for one request (or why nothing did)."""

    name: str
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    reads: list[Read] = field(default_factory=list)
    body: bytes = b""
    error: str | None = None
    hung_up: bool = False
    hung_up_at: float | None = None  # wall-clock time of the hang-up
    elapsed: float = 0.0

    @property
    def raw(self) -> bytes:
        return b"".join(r.data for r in self.reads) or self.body

    @property
    def events(self) -> list[ServerSentEvent]:
        return [e for r in self.reads for e in r.events]

    def payloads(self) -> list[Any]:
        """The JSON of every event but `[DONE]`; an event that is not JSON is its text."""
        decoded: list[Any] = []
        for event in self.events:
            if event.data == DONE_DATA:
                continue
            try:
                decoded.append(json.loads(event.data))
            except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
                decoded.append(event.data)
        return decoded

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            return None


def call(
    client: httpx.Client,
    name: str,
    body: Mapping[str, Any],
    *,
    path: str,
    carries_delta: Callable[[str], bool],
    hang_up_after_first_delta: bool = False,
) -> Exchange:
    """POST `body` to `path`, reading the answer as it arrives; `carries_delta` tells the data
    of an event that carries a delta to hang up after."""
    exchange = Exchange(name)
    started = time.monotonic()
    try:
        with client.stream("POST", path, json=dict(body)) as response:
            exchange.status = response.status_code
            exchange.headers = dict(response.headers)
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                exchange.body = response.read()
                return exchange
            decoder = SSEDecoder()
            for data in response.iter_raw():
                events = tuple(decoder.feed(data))
                pending = decoder.pending
                exchange.reads.append(Read(time.monotonic() - started, data, events, pending))
                if hang_up_after_first_delta and any(carries_delta(e.data) for e in events):
                    exchange.hung_up = True
                    exchange.hung_up_at = time.time()
                    break
            else:
                tail = tuple(decoder.close())
                if tail:
                    exchange.reads.append(Read(time.monotonic() - started, b"", tail, False))
    except httpx.HTTPError as error:
        exchange.error = f"{type(error).__name__}: {error}"
    finally:
        exchange.elapsed = time.monotonic() - started
    return exchange
