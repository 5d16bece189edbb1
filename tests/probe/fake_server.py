"""What the probe's fake servers share: a threaded HTTP server on 127.0.0.1, the stream loop.

A fake answers in its own handler's `do_POST`; `stream` writes its frames
one to a write (or, with `;chop=1` in the model name, cut and joined across
writes), a little apart, and stops quietly when the probe hangs up. The
server records what each fake notes of a request in `seen`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def fault_of(model: str) -> str:
    """The `fault=NAME` directive of a model name such as `fake;fault=done`."""
    return dict(p.split("=", 1) for p in model.split(";")[1:] if "=" in p).get("fault", "")


def writes(frames: Iterable[bytes], *, chopped: bool) -> Iterator[bytes]:
    """One event per write, or (`chop=1`, not a fault) three events to two writes, the first
    holding two whole events and half the third, so events arrive several to a read and split
    across reads."""
    frames = iter(frames)
    if not chopped:
        yield from frames
        return
    for group in itertools.zip_longest(frames, frames, frames, fillvalue=b""):
        data = b"".join(group)
        cut = len(data) - len(group[2]) // 2
        yield from (data[:cut], data[cut:])


class FakeHandler(BaseHTTPRequestHandler):
    server: FakeServer

    def log_message(self, *args: Any) -> None:
        pass

    def body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))

    def send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status: int, document: Any) -> None:
        self.send(status, "application/json", json.dumps(document).encode())

    def stream(self, frames: Iterable[bytes], model: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        try:
            for frame in writes(frames, chopped=";chop=1" in model):
                self.wfile.write(frame)
                self.wfile.flush()
                time.sleep(0.01)
        except OSError:
            pass  # the client hung up


class FakeServer(ThreadingHTTPServer):
    def __init__(self, handler: type[FakeHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.seen: list[Any] = []  # what the handler notes of each request, in order
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}/v1"


@contextmanager
def running(handler: type[FakeHandler]) -> Iterator[FakeServer]:
    """The running server (`base_url` is `http://127.0.0.1:PORT/v1`) while the block runs."""
    server = FakeServer(handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
