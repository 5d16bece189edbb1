"""The gateway's own overhead: the time of a call not spent waiting on an upstream.

`elapsed` runs from the moment the call is opened (its key just checked) to
the moment the response's headers go out; `upstream` is the time spent inside
upstream attempts until then (every attempt of a fallback counts). For a
non-streaming response that is the whole call: reading and validating the
body, routing, waiting for the trace to be durable, encoding the answer. For
a stream the headers go out once the first delta has arrived, so the split
covers everything up to the response start and nothing of the stream after.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResponseTiming:
    elapsed: float
    upstream: float

    @property
    def overhead(self) -> float:
        return max(self.elapsed - self.upstream, 0.0)

    def headers(self) -> list[tuple[bytes, bytes]]:
        """`x-llmeu-overhead-ms` and `server-timing` (W3C Server Timing; durations in ms)."""
        gateway = f"{self.overhead * 1000:.3f}"
        upstream = f"{self.upstream * 1000:.3f}"
        return [
            (b"x-llmeu-overhead-ms", gateway.encode()),
            (b"server-timing", f"gateway;dur={gateway}, upstream;dur={upstream}".encode()),
        ]
