"""Run the gateway on uvicorn (uvloop, httptools), with a graceful shutdown.

Why uvicorn with uvloop and httptools rather than granian: measured with
bench/loadgen.py against the same app, gateway pinned to one core, c=16
(2026-11-30): uvicorn 5,620 calls/s at 0.18 ms CPU per call and 1,740
64-chunk streams/s at 0.57 ms; granian 2.8 (ASGI, uvloop, one worker) 4,500
calls/s at 0.22 ms and 1,600 streams/s at 0.62 ms. Its `http.disconnect` is
also what stops the upstream the moment a client hangs up.

On SIGTERM (or SIGINT) uvicorn stops listening at once, closes idle
keep-alive connections, lets the requests in flight run for up to the
shutdown grace, then cancels the ones still running. A cancelled call is the
gateway ending it, not the client: the call lifecycle answers it — a stream
with the error frame of docs/design.md §2 (code `gateway_shutdown`, no `[DONE]`), a
call not yet answered with a 503 — and records it `interrupted` with what it
produced; the lifespan's shutdown waits for those records, flushes the
ledger, and the process exits 0.
"""

from __future__ import annotations

import gc
import logging
import signal
import socket
from types import FrameType

import uvicorn

from llmeu.api.app import create_app
from llmeu.config import Settings
from llmeu.errors import ConfigError
from llmeu.observability.connection_metrics import ConnectionsCollector
from llmeu.observability.logs import configure_logging
from llmeu.protocol.forwarded import TrustedProxies
from llmeu.server.connection_guard import ConnectionGuard, ConnectionLimits
from llmeu.server.http_protocol import MAX_HEAD_BYTES, protocol_factory
from llmeu.server.model_host import OnlyEndpointFailed, launch_model_host


class _Stopped(Exception):
    """SIGTERM or SIGINT after the server shut down (or before it started): exit 0."""


_stop_requested: list[str] = []


def _stop(signum: int, frame: FrameType | None) -> None:
    # Also remembered: raised where Python swallows exceptions (a weakref callback, a
    # __del__), the exception alone would be lost and the process would start serving.
    name = signal.Signals(signum).name
    _stop_requested.append(name)
    raise _Stopped(name)


def run(settings: Settings) -> int:
    """Serve until SIGTERM or SIGINT; 0 after a clean stop, 1 when startup failed,
    2 for an invalid configuration. With `settings.workers` above 1, a supervisor serves
    through that many worker processes (`llmeu.server.workers`). The model host, when a
    local endpoint is served, is launched first and shared by them (`server.model_host`)."""
    configure_logging(settings.log_level, settings.log_format)
    try:
        trusted_proxies(settings)  # before any worker or model host starts
        settings, host = launch_model_host(settings)
    except ConfigError as error:
        logging.getLogger("llmeu").error("configuration error: %s", error)
        return 2
    except OnlyEndpointFailed:
        return 1
    try:
        if settings.workers > 1:
            from llmeu.server.workers import supervise

            return supervise(settings)
        return serve(settings)
    finally:
        if host is not None:
            host.stop()


def serve(
    settings: Settings, *, sock: socket.socket | None = None, instance_id: str | None = None
) -> int:
    """One gateway process, on its own listening socket or on `sock` (a worker's)."""
    # uvicorn handles these signals while it serves and hands them back when it has shut
    # down; then (or before it started) they end the process with status 0.
    for handled in (signal.SIGTERM, signal.SIGINT):
        signal.signal(handled, _stop)
    # A worker starts with these blocked (`workers.Supervisor._start`): one that arrived
    # meanwhile is delivered now, to the handler above.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
    try:
        return _serve(settings, sock, instance_id)
    except _Stopped:
        return 0


def _serve(settings: Settings, sock: socket.socket | None, instance_id: str | None) -> int:
    try:
        app = create_app(settings, instance_id)
    except ConfigError as error:
        logging.getLogger("llmeu").error("configuration error: %s", error)
        return 2
    # SIGHUP reads the configuration file again; calls in flight keep theirs.
    signal.signal(signal.SIGHUP, lambda signum, frame: app.gateway.reload_soon())
    guard = ConnectionGuard(
        ConnectionLimits(
            head_timeout=settings.head_timeout_seconds,
            max_connections=settings.max_connections,
            max_per_client=settings.max_connections_per_client,
        )
    )
    app.gateway.telemetry.registry.register(ConnectionsCollector(guard))
    try:
        proxies = trusted_proxies(settings)
    except ConfigError as error:
        logging.getLogger("llmeu").error("configuration error: %s", error)
        return 2
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http=protocol_factory(guard, proxies, settings.proxy_protocol),  # type: ignore[arg-type]
        lifespan="on",
        log_level=settings.log_level,
        # JSON lines: uvicorn's own loggers go through the root handler too.
        log_config=None if settings.log_format == "json" else uvicorn.config.LOGGING_CONFIG,
        access_log=False,
        server_header=False,
        # uvicorn's own reading trusts every hop a trusted peer sends and costs every call;
        # the protocol reads the forwarding header itself, and only from --trusted-proxy.
        proxy_headers=False,
        # Seconds, fractions too: uvicorn waits with asyncio.wait_for.
        timeout_graceful_shutdown=settings.shutdown_grace_seconds,  # type: ignore[arg-type]
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )
    # Objects made at start-up live as long as the process: keep them out of the
    # collector's scans (bench/: more calls per second, a shorter p99 under load),
    # those made before the server runs and those the gateway's own start made (the
    # first full collections under traffic took 15-25 ms of them otherwise).
    _tune_collector()
    _freeze_objects()
    app.on_started = _freeze_objects
    if _stop_requested:  # asked to stop while starting, and the exception went astray
        raise _Stopped(_stop_requested[0])
    server = uvicorn.Server(config)
    server.run(sockets=[sock] if sock is not None else None)
    return 0 if server.started else 1


def trusted_proxies(settings: Settings) -> TrustedProxies | None:
    """The trusted proxies of `settings`; None without any (then no header is read)."""
    if settings.proxy_protocol and not settings.trusted_proxies:
        raise ConfigError(
            "--proxy-protocol needs --trusted-proxy: a PROXY header is accepted only from "
            "a trusted proxy's address"
        )
    if not settings.trusted_proxies:
        return None
    try:
        return TrustedProxies(settings.trusted_proxies, settings.forwarded_header)
    except ValueError as error:
        raise ConfigError(f"trusted proxies: {error}") from None


FIRST_GENERATION = 10_000
"""Objects allocated (less those freed) between two collections of the youngest generation.

A call that completes leaves no reference cycle (tests/api/test_no_cyclic_garbage.py), so
under load the collector finds no garbage: it only walks the objects of the calls in
flight. With CPython's 700, 64 concurrent calls set it off every few calls, and it took
about 20 µs per call (gen0 and gen1, c=64: 730-888 collections in a 4 s cell, 224-257 ms in
all); with 10,000 it ran once in a cell. A call that fails, times out or is hung up on
leaves none either (the same test); cycles that remain elsewhere are still collected, a
little later: RSS under 1,000 concurrent streams was the same (105.2 MB after six rounds
either way, bench/streams.py)."""


def _tune_collector() -> None:
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(FIRST_GENERATION, older, oldest)


def _freeze_objects() -> None:
    gc.collect()
    gc.freeze()
