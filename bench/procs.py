"""Child processes of a benchmark: start pinned to a core, read CPU and RSS from /proc, stop by PID.

Every process is started in its own session, so stopping it means signalling
exactly the process group this module created (a gateway's workers included)
and nothing else on the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

PR_SET_PDEATHSIG = 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pinning_available() -> bool:
    return shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2


def pin_self(core: int) -> None:
    """Pin the calling process (the load generator) to one core, when the machine has it."""
    if pinning_available():
        os.sched_setaffinity(0, {core})


def set_niceness(pid: int, nice: int) -> None:
    """Niceness of a process and of its scheduler autogroup.

    With `kernel.sched_autogroup_enabled`, each session is scheduled as one
    group and a process's own nice value only counts inside its group, so the
    group's niceness must be set too for other sessions' jobs to yield.
    """
    os.setpriority(os.PRIO_PROCESS, pid, nice)
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants alive now."""
    children = _children_map()
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, ()))
    return tree


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), from /proc/<pid>/stat."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tree_cpu_seconds(pids: Sequence[int]) -> float:
    return sum(cpu_seconds(pid) for pid in pids)


def core_busy_seconds(core: int) -> float:
    """Time one CPU spent running anything (user, system, irq, steal), from /proc/stat."""
    prefix = f"cpu{core} "
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(prefix):
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, line.split()[1:9])
            return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS
    return 0.0


def rss_bytes(pid: int) -> int:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except OSError:
        return 0
    return pages * PAGE_SIZE


def tree_rss_bytes(pid: int) -> int:
    return sum(rss_bytes(member) for member in process_tree(pid))


@dataclass
class Child:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self, timeout: float = 10.0) -> None:
        if not self.alive():
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)
            try:
                self.popen.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


@dataclass
class Supervisor:
    """Owns every child of one benchmark run and stops them all, newest first."""

    log_dir: Path
    nice: int = 0
    children: list[Child] = field(default_factory=list)

    def start(
        self,
        name: str,
        argv: Sequence[str],
        core: int | None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Child:
        if core is not None and pinning_available():
            argv = ["taskset", "-c", str(core), *argv]
        log_path = self.log_dir / f"{name}.log"
        with log_path.open("ab") as log:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        if self.nice:
            set_niceness(popen.pid, self.nice)
        child = Child(name, popen, log_path)
        self.children.append(child)
        return child

    def stop(self, child: Child) -> None:
        child.stop()
        if child in self.children:
            self.children.remove(child)

    def stop_all(self) -> None:
        while self.children:
            self.children.pop().stop()


@contextlib.contextmanager
def supervised(log_dir: Path, nice: int = 0) -> Iterator[Supervisor]:
    """A supervisor whose children are stopped on exit, errors and cancellation included."""
    log_dir.mkdir(parents=True, exist_ok=True)
    supervisor = Supervisor(log_dir, nice)
    try:
        yield supervisor
    finally:
        supervisor.stop_all()


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if the benchmark itself is killed (-9)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


async def wait_ready(
    child: Child,
    url: str,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    ok_statuses: tuple[int, ...] = (200,),
) -> None:
    """Poll `url` until it answers with one of `ok_statuses`; fail early if the child died."""
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if not child.alive():
                raise RuntimeError(f"{child.name} exited early:\n{child.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                response = await client.get(url, headers=dict(headers or {}))
                if response.status_code in ok_statuses:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{child.name} not ready after {timeout:.0f}s:\n{child.log_tail()}")
