"""Starting the keeper from the gateway, and starting another when it ends.

`launch` starts `python -m llmeu.modelhost` on a socket in a fresh private
directory and waits for its one line: ready (the host passed its start
check) or the fault that stopped it. The keeper ends with the process that
launched it; `LaunchedHost.stop` ends it sooner.

The keeper restarts the host; this process restarts the keeper. A keeper
that ends while its host serves (a SIGKILL, the OOM killer) takes its host
with it; a thread of the launching process waits for that end and launches
another keeper on the same socket, after the keeper's own pause (0.5 s,
doubling with each quick end up to 30 s). Gateway processes keep their path
to the socket, so each finds the new host at its next ping; meanwhile their
local calls fail as they do while the keeper restarts a host
(`llmeu.providers.host_link`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from llmeu.modelhost.host import HostConfig
from llmeu.modelhost.keeper import START_TIMEOUT, STEADY, restart_pause

log = logging.getLogger("llmeu")


@dataclass(frozen=True, slots=True)
class HostLimits:
    threads: int = 2
    call_timeout: float = 300.0
    memory_limit: int = 0
    test_fault: str | None = None
    """The start check's test hook (`llmeu.modelhost.start_check`); None in production."""


class LaunchedHost:
    """A keeper and the socket its host serves on; relaunched when it ends, until `stop`."""

    def __init__(
        self,
        socket_path: Path,
        process: subprocess.Popen[bytes] | None,
        fault: str | None = None,
        command: tuple[str, ...] = (),
    ):
        self.socket_path = socket_path
        self.process = process
        self.fault = fault
        """Why the host could not start (one line), or None when it is serving."""
        self._command = command
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._keeping: threading.Thread | None = None

    def keep(self) -> None:
        """Launch another keeper whenever the current one ends, from a thread of this
        process: the keeper asks to end with the thread that started it."""
        self._keeping = threading.Thread(
            target=self._keep, name="llmeu-model-host-keeper", daemon=True
        )
        self._keeping.start()

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
            process = self.process
        if process is not None:
            _end(process)
        if self._keeping is not None:
            self._keeping.join(10)
        with contextlib.suppress(OSError):
            shutil.rmtree(self.socket_path.parent)

    def _keep(self) -> None:
        quick_ends = 0
        while (process := self.process) is not None:
            started = time.monotonic()
            how = _wait_for_end(process)
            if self._stopping.is_set():
                return
            quick_ends = 1 if time.monotonic() - started > STEADY else quick_ends + 1
            pause = restart_pause(quick_ends)
            log.error("the local model host's keeper (pid %d) %s; launching another in %.1f s",
                      process.pid, how, pause)  # fmt: skip
            if self._stopping.wait(pause):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                self.process = _spawn(self._command)
            report = _first_line(self.process)
            if report.get("ready") is True:
                log.warning("the local model host is running again (keeper pid %d, host pid %s)",
                            self.process.pid, report.get("pid"))  # fmt: skip
            elif not self._stopping.is_set():
                log.error("the relaunched local model host did not start: %s", _fault(report))


def launch(limits: HostLimits) -> LaunchedHost:
    """A keeper whose host passed its start check, kept (`LaunchedHost.keep`), or the fault
    that stopped it."""
    directory = Path(tempfile.mkdtemp(prefix="llmeu-host-"))  # short: a socket path is limited
    config = HostConfig(
        directory / "host.sock",
        limits.threads,
        call_timeout=limits.call_timeout,
        memory_limit=limits.memory_limit,
        test_fault=limits.test_fault,
    )
    command = [sys.executable, "-m", "llmeu.modelhost", "--socket", str(config.socket_path),
               "--threads", str(config.threads), "--call-timeout", str(config.call_timeout),
               "--memory-limit", str(config.memory_limit)]  # fmt: skip
    if config.test_fault:
        command += ["--test-fault", config.test_fault]
    return _launch(config.socket_path, tuple(command))


def _launch(socket_path: Path, command: tuple[str, ...]) -> LaunchedHost:
    process = _spawn(command)
    report = _first_line(process)
    if report.get("ready") is True:
        launched = LaunchedHost(socket_path, process, command=command)
        launched.keep()
        return launched
    launched = LaunchedHost(socket_path, process, _fault(report))
    launched.stop()
    return launched


def _spawn(command: tuple[str, ...]) -> subprocess.Popen[bytes]:
    # A session of its own: a Ctrl-C at the terminal reaches the gateway, which drains its
    # calls, and not the host they run on; the keeper still ends with the gateway.
    return subprocess.Popen(command, stdout=subprocess.PIPE, start_new_session=True)


def _first_line(process: subprocess.Popen[bytes]) -> dict[str, object]:
    """The keeper's one line: whether its host is ready, or why not; {} when it said none."""
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], START_TIMEOUT + 10)
    line = process.stdout.readline() if readable else b""
    process.stdout.close()
    try:
        report = json.loads(line) if line else {}
    except ValueError:
        return {}
    return report if isinstance(report, dict) else {}


def _fault(report: dict[str, object]) -> str:
    return str(report.get("fault") or "the local model host did not start")


def _wait_for_end(process: subprocess.Popen[bytes]) -> str:
    """Wait until the keeper ends; how it ended. Its status may be taken by another wait in
    this process (`llmeu serve --workers`' supervisor waits for any child): then it says so."""
    try:
        _, status = os.waitpid(process.pid, 0)
    except ChildProcessError:
        process.returncode = 0
        return "ended (its status went to another wait)"
    code = process.returncode = os.waitstatus_to_exitcode(status)
    if code < 0:
        return f"was killed by signal {signal.Signals(-code).name}"
    return f"exited with status {code}"


def _end(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
