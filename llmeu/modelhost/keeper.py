"""The keeper: a small process with no native code that keeps one model host running.

It starts the host (`python -m llmeu.modelhost --serve`), waits for its
start check, and tells whoever launched it in one line on its standard
output: `{"ready": true, "pid": …}`, or `{"ready": false, "fault": "…"}`
and exit status 3. Then it restarts the host whenever it exits (a native
fault, a kill) or stops answering pings, after a pause that doubles with each
quick failure (0.5 s up to 30 s). SIGTERM ends the host, then the keeper.
The keeper and its host end with the process that launched them.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from types import FrameType
from typing import IO

from llmeu.modelhost.host import HostConfig
from llmeu.modelhost.start_check import describe_fault
from llmeu.modelhost.wire import decode, encode

START_TIMEOUT = 300.0
PING_EVERY = 2.0
PING_TIMEOUT = 5.0
MISSED_PINGS = 3
FIRST_PAUSE = 0.5
LONGEST_PAUSE = 30.0
STEADY = 60.0
"""Seconds: a process that ran this long before it ended is restarted after the first pause."""


def restart_pause(quick_failures: int) -> float:
    """The pause before a restart, after `quick_failures` (1 or more) quick ends in a row."""
    return min(LONGEST_PAUSE, FIRST_PAUSE * 2.0 ** (max(1, quick_failures) - 1))


class Keeper:
    def __init__(self, config: HostConfig):
        self._config = config
        # A plain flag: the SIGTERM handler must take no lock (an Event's would deadlock
        # when the signal lands while the main thread holds it).
        self._stopped = False
        self._restarts = 0
        self._last_line = ""

    def run(self) -> int:
        end_with_parent()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._stopping)
        host, fault = self._start()
        if host is None:
            _tell({"ready": False, "fault": fault})
            return 3
        _tell({"ready": True, "pid": host.pid})
        quick_failures = 0
        while not self._stopped:
            started = time.monotonic()
            if host is not None:
                code = self._watch(host)
                if self._stopped:
                    break
                _log(f"the model host (pid {host.pid}) ended: {_status(code)}; restarting")
            quick_failures = 1 if time.monotonic() - started > STEADY else quick_failures + 1
            if self._pause(restart_pause(quick_failures)):
                break
            self._restarts += 1
            host, fault = self._start()
            if host is None:
                _log(fault)
        if host is not None:
            _end(host)
        return 0

    def _stopping(self, signum: int, frame: FrameType | None) -> None:
        self._stopped = True

    def _pause(self, seconds: float) -> bool:
        """Wait `seconds`, or less when asked to stop; whether it was."""
        until = time.monotonic() + seconds
        while not self._stopped and time.monotonic() < until:
            time.sleep(max(0.0, min(0.1, until - time.monotonic())))
        return self._stopped

    def _start(self) -> tuple[subprocess.Popen[bytes] | None, str]:
        """A host that passed its start check, or None and why it did not."""
        config = self._config
        command = [sys.executable, "-m", "llmeu.modelhost", "--serve",
                   "--socket", str(config.socket_path), "--threads", str(config.threads),
                   "--context-tokens", str(config.context_tokens),
                   "--call-timeout", str(config.call_timeout),
                   "--memory-limit", str(config.memory_limit),
                   "--restarts", str(self._restarts)]  # fmt: skip
        if config.test_fault:
            command += ["--test-fault", config.test_fault]
        host = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=end_with_parent
        )
        assert host.stdout is not None and host.stderr is not None
        relay = threading.Thread(target=self._relay, args=(host.stderr,), daemon=True)
        relay.start()
        readable, _, _ = select.select([host.stdout], [], [], START_TIMEOUT)
        line = host.stdout.readline() if readable else b""
        if line.strip() == b"ready":
            return host, ""
        _end(host)
        relay.join(1.0)  # its last line says why
        return None, describe_fault(host.returncode, self._last_line)

    def _relay(self, stream: IO[bytes]) -> None:
        """The host's log lines go to the keeper's standard error; the last is kept."""
        for raw in iter(stream.readline, b""):
            self._last_line = raw.decode("utf-8", "replace").rstrip()
            sys.stderr.write(f"model host: {self._last_line}\n")

    def _watch(self, host: subprocess.Popen[bytes]) -> int:
        """Wait for the host to end; one that misses pings in a row is killed."""
        missed = 0
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return host.wait(PING_EVERY)
            if self._stopped:
                return 0
            missed = 0 if ping(self._config) else missed + 1
            if missed >= MISSED_PINGS:
                _log(f"the model host (pid {host.pid}) stopped answering; killing it")
                host.kill()


def ping(config: HostConfig, timeout: float = PING_TIMEOUT) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(config.socket_path))
            sock.sendall(encode({"op": "ping"}))
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        return decode(data[4:]).get("ev") == "pong"
    except (OSError, ValueError):
        return False


def _end(host: subprocess.Popen[bytes]) -> None:
    if host.poll() is None:
        host.terminate()
        try:
            host.wait(5)
        except subprocess.TimeoutExpired:
            host.kill()
            host.wait()


def _status(code: int) -> str:
    return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


def _tell(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _log(line: str) -> None:
    sys.stderr.write(f"llmeu model host: {line}\n")
    sys.stderr.flush()


_PR_SET_PDEATHSIG = 1


def end_with_parent() -> None:
    """SIGTERM this process when the process that started it ends, however it ends."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() == 1:
        os.kill(os.getpid(), signal.SIGTERM)
