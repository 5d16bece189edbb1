"""A streamed answer's deltas on their way to the client, once the call has its first one.

Every delta goes out as it arrives, with those that arrived with it in the same write
and nothing held back, but the part of a masked value's placeholder a `StreamRestorer`
waits on until it is whole. A kept answer replayed from the cache has all its deltas at
once: their frames go in one write.
"""

from __future__ import annotations

from llmeu.api.call.caching import ReplayedStream
from llmeu.api.call.context import StreamEncoder
from llmeu.api.http.asgi import Request
from llmeu.calls.output import Delta, StreamOutput
from llmeu.personal.streams import StreamRestorer
from llmeu.providers.base import ChatStream


async def deliver(
    request: Request,
    upstream: ChatStream,
    delta: Delta | None,
    pending: bytes,
    encoder: StreamEncoder,
    output: StreamOutput,
    restorer: StreamRestorer | None,
    replay: ReplayedStream | None,
) -> None:
    """Send `delta` and every delta after it, the frames in `pending` first, until the
    upstream's stream ends; the frame of what the restorer still holds goes last. Each
    delta is added to `output`: the trace keeps placeholders, never the values."""
    if replay is not None and delta is not None and restorer is None:
        deltas = [delta, *replay.rest()]
        output.add_all(deltas)
        await request.write(pending + encoder.deltas(deltas))
        pending, delta = b"", None
    while delta is not None:
        delta = await _forward(request, upstream, delta, pending, encoder, output, restorer)
        pending = b""
    if restorer is not None and (held := restorer.flush()) is not None:
        pending += encoder.delta(held)
    if pending:
        await request.write(pending)


async def _forward(
    request: Request,
    upstream: ChatStream,
    delta: Delta,
    pending: bytes,
    encoder: StreamEncoder,
    output: StreamOutput,
    restorer: StreamRestorer | None,
) -> Delta | None:
    """Send `delta`'s frame, with the frames already waiting and the further deltas that
    arrived with it: one write, one frame per delta, nothing held back. Returns the next."""
    body = pending
    current: Delta | None = delta
    try:
        while current is not None:
            output.add(current)
            body += encoder.delta(current if restorer is None else restorer.push(current))
            current = upstream.buffered_delta()
    finally:
        await request.write(body)
    return await upstream.next_delta()
