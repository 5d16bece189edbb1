"""A small OTLP/HTTP receiver for the tests, run as a real process on 127.0.0.1.

    python -m tests.support.otlp_receiver --port N

`POST /v1/traces` keeps the request (its headers and its protobuf body,
gunzipped) and answers 200 with an empty ExportTraceServiceResponse, as a
collector does; `GET /_received` returns every request kept, as JSON with the
bodies in base64. The tests decode the bodies themselves (opentelemetry-proto).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    def __init__(self, port: int):
        super().__init__(("127.0.0.1", port), _Handler)
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        with self.server.lock:
            self.server.received.append(
                {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": base64.b64encode(body).decode(),
                }
            )
        self._reply(200, b"", "application/x-protobuf")

    def do_GET(self) -> None:
        with self.server.lock:
            body = json.dumps(self.server.received).encode()
        self._reply(200, body, "application/json")

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read what arrived, not an access log."""


@dataclass
class OtlpReceiver:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def received(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.endpoint}/_received", timeout=5) as response:
            requests: list[dict[str, Any]] = json.loads(response.read())
        for request in requests:
            request["body"] = base64.b64decode(request["body"])
        return requests

    def wait_for(self, done: Any, timeout: float = 20) -> list[dict[str, Any]]:
        """Poll until `done(requests)` holds; the exporter sends on its own schedule."""
        deadline = time.monotonic() + timeout
        while True:
            requests = self.received()
            if done(requests) or time.monotonic() > deadline:
                return requests
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


def start_otlp_receiver() -> OtlpReceiver:
    from tests.support.processes import REPO, _wait_http, free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.otlp_receiver", "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    receiver = OtlpReceiver(port, proc)
    try:
        _wait_http(f"{receiver.endpoint}/_received", proc, 15, None)
    except BaseException:
        receiver.stop()
        raise
    return receiver


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    _Server(args.port).serve_forever()


if __name__ == "__main__":
    main()
