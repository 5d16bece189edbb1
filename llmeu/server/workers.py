"""`llmeu serve --workers N`: N gateway processes on one listening socket, kept alive.

The supervisor binds the socket once and forks the workers, which all accept
on it (a worker that dies loses no queued connection: the socket stays open
in the others). It holds no gateway state of its own. It restarts a worker
that dies, after recording the calls that worker left in progress as
`interrupted` at once (it chose the worker's instance id, so it knows whose
they are) rather than at the next start; SIGTERM or SIGINT drains every
worker (each lets its calls finish within the shutdown grace) and exits 0;
SIGHUP makes every worker read the configuration file again.

Several processes share what no one process may hold alone: per-key limits
and budgets (which would otherwise be N times the limit), endpoint health, and
the change notices that make a revoked key or a replaced policy hold in every
worker at once. They share them through Redis, so more than one worker needs
`--redis-url`; without it the supervisor refuses to start and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from types import FrameType

from llmeu.api.gateway import load_gateway_config, new_instance_id
from llmeu.api.services.signing import load_signing_keys
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseError
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store

log = logging.getLogger("llmeu.workers")

_BACKLOG = 2048
_FLAPPING_SECONDS = 5.0  # a worker that dies sooner after its start is restarted after a pause


@dataclass
class _Worker:
    slot: int
    instance_id: str
    started_at: float = field(default_factory=time.monotonic)


def supervise(settings: Settings) -> int:
    """Run `settings.workers` workers until a signal ends them; 2 when they cannot start."""
    if settings.redis_url is None:
        log.error(
            "--workers %d needs --redis-url: per-key limits and budgets, endpoint health and "
            "key revocations must be shared by the workers (one process needs no Redis)",
            settings.workers,
        )
        return 2
    try:
        load_gateway_config(settings)  # refuse an invalid file before any worker starts
        load_signing_keys(settings)  # and an unusable key, which every worker would meet
    except ConfigError as error:
        log.error("configuration error: %s", error)
        return 2
    try:
        sock = socket.create_server((settings.host, settings.port), backlog=_BACKLOG)
    except OSError as error:
        log.error("cannot listen on %s:%d: %s", settings.host, settings.port, error)
        return 1
    sock.set_inheritable(True)
    return Supervisor(settings, sock).run()


_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


class Supervisor:
    def __init__(self, settings: Settings, sock: socket.socket):
        self._settings = settings
        self._sock = sock
        self._workers: dict[int, _Worker] = {}
        self._stopping = False

    def run(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._stop)
        signal.signal(signal.SIGHUP, self._forward)
        log.warning("serving on %s:%d with %d workers", self._settings.host,
                    self._settings.port, self._settings.workers)  # fmt: skip
        for slot in range(self._settings.workers):
            self._start(slot)
        status = 0
        while self._workers:
            try:
                pid, wait_status = os.wait()
            except ChildProcessError:
                break
            worker = self._workers.pop(pid, None)
            if worker is None:
                continue
            code = os.waitstatus_to_exitcode(wait_status)
            self._record_interrupted(worker)
            if self._stopping:
                continue
            if code == 2:  # the configuration: another start would fail the same way
                log.error("worker %d could not start; stopping", worker.slot)
                self._stop(signal.SIGTERM, None)
                status = 2
                continue
            log.error("worker %d (%s) ended with status %d; starting another",
                      worker.slot, worker.instance_id, code)  # fmt: skip
            if time.monotonic() - worker.started_at < _FLAPPING_SECONDS:
                time.sleep(1.0)
            self._start(worker.slot)
        self._sock.close()
        return status

    def _start(self, slot: int) -> None:
        instance_id = new_instance_id()
        # Blocked across the fork: until the worker has its own handlers (`runner.serve`
        # unblocks them), a signal waits instead of running the supervisor's handler in
        # the worker's copy of it, which would swallow a SIGTERM the worker must obey.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        supervisor = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            _end_with(supervisor)
            os._exit(self._serve(instance_id))
        self._workers[pid] = _Worker(slot, instance_id)  # before a SIGTERM can look for it
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        log.info("worker %d started: %s, pid %d", slot, instance_id, pid)

    def _serve(self, instance_id: str) -> int:
        from llmeu.server.runner import serve

        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until the worker can reload
        try:
            return serve(self._settings, sock=self._sock, instance_id=instance_id)
        except BaseException:  # the worker's outermost frame: report, then exit non-zero
            log.exception("worker failed")
            return 1

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        """Drain: every worker ends its calls within the shutdown grace, then exits."""
        self._stopping = True
        for pid in list(self._workers):
            _signal(pid, signal.SIGTERM)

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        for pid in list(self._workers):
            _signal(pid, signum)

    def _record_interrupted(self, worker: _Worker) -> None:
        """The calls the worker left in progress, recorded `interrupted` now."""
        try:
            count = asyncio.run(_mark_interrupted(self._settings, worker.instance_id))
        except DatabaseError as error:  # the next start's sweep records them instead
            log.error("could not record the calls of worker %d: %s", worker.slot, error)
            return
        if count:
            log.warning("worker %d left %d calls in progress: recorded interrupted",
                        worker.slot, count)  # fmt: skip


async def _mark_interrupted(settings: Settings, instance_id: str) -> int:
    store = Store(open_database(settings.effective_database_url))
    await store.db.open()
    try:
        return await store.mark_instance_interrupted(instance_id, time.time())
    finally:
        await store.db.close()


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(pid, signum)


_PR_SET_PDEATHSIG = 1


def _end_with(supervisor: int) -> None:
    """A worker drains and exits when its supervisor goes, however it goes (SIGKILL
    included): otherwise it would go on accepting on the port, which a new start could
    then not bind. Linux tells a process of its parent's end (`PR_SET_PDEATHSIG`); the
    worker asks for a SIGTERM, which it handles as the supervisor's own."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != supervisor:  # gone between the fork and the request
        os.kill(os.getpid(), signal.SIGTERM)
