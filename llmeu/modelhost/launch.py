"""Starting the keeper from the gateway: one per machine, before any worker is forked.

`launch` starts `python -m llmeu.modelhost` on a socket in a fresh private
directory and waits for its one line: ready (the host passed its start
check) or the fault that stopped it. The keeper ends with the process that
launched it; `LaunchedHost.stop` ends it sooner.
"""

from __future__ import annotations

import contextlib
import json
import select
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from llmeu.modelhost.host import HostConfig
from llmeu.modelhost.keeper import START_TIMEOUT


@dataclass(frozen=True, slots=True)
class HostLimits:
    threads: int = 2
    call_timeout: float = 300.0
    memory_limit: int = 0
    test_fault: str | None = None
    """The start check's test hook (`llmeu.modelhost.start_check`); None in production."""


@dataclass
class LaunchedHost:
    socket_path: Path
    process: subprocess.Popen[bytes] | None
    fault: str | None = None
    """Why the host could not start (one line), or None when it is serving."""

    def stop(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.socket_path.parent)


def launch(limits: HostLimits) -> LaunchedHost:
    """A keeper whose host passed its start check, or the fault that stopped it."""
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
    # A session of its own: a Ctrl-C at the terminal reaches the gateway, which drains its
    # calls, and not the host they run on; the keeper still ends with the gateway.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], START_TIMEOUT + 10)
    line = process.stdout.readline() if readable else b""
    process.stdout.close()
    try:
        report = json.loads(line) if line else {}
    except ValueError:
        report = {}
    if report.get("ready") is True:
        return LaunchedHost(config.socket_path, process)
    fault = str(report.get("fault") or "the local model host did not start")
    launched = LaunchedHost(config.socket_path, process, fault)
    launched.stop()
    return launched
