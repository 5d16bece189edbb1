"""The launching process starts another keeper when its keeper ends, after the keeper's own
doubling pause, on the same socket; `stop` ends the keeper and stops relaunching. A stand-in
keeper (a few lines of Python that print the keeper's line) keeps these tests fast."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

import pytest

from llmeu.modelhost.keeper import restart_pause
from llmeu.modelhost.launch import LaunchedHost, _launch
from llmeu.providers.host_link import HostLink
from tests.support.waiting import wait_for

SERVES = "import json, os, time; print(json.dumps({'ready': True, 'pid': os.getpid()}), flush=True); time.sleep(600)"
FAILS = "import json; print(json.dumps({'ready': False, 'fault': 'no model here'}), flush=True); raise SystemExit(3)"


def kept(tmp_path: Path, code: str) -> LaunchedHost:
    host = _launch(tmp_path / "host.sock", (sys.executable, "-c", code))
    assert host.fault is None
    return host


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split(") ")[1][0] not in "ZX"


@pytest.mark.parametrize(
    ("quick_ends", "pause"),
    [(1, 0.5), (2, 1.0), (3, 2.0), (7, 30.0), (20, 30.0)],
    ids=["first", "second", "third", "capped", "long-capped"],
)
def test_the_pause_doubles_with_each_quick_end(quick_ends: int, pause: float) -> None:
    assert restart_pause(quick_ends) == pause


def test_a_killed_keeper_is_launched_again_and_stop_ends_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "llmeu")
    host = kept(tmp_path, SERVES)
    first = host.process
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    second = wait_for(lambda: host.process if host.process is not first else None,
                      timeout=10, what="another keeper")  # fmt: skip
    assert first.returncode == -signal.SIGKILL
    wait_for(lambda: "running again" in caplog.text, timeout=10, what="the keeper's line")
    assert f"keeper (pid {first.pid}) was killed by signal SIGKILL" in caplog.text
    assert "launching another in 0.5 s" in caplog.text
    host.stop()
    assert second.poll() is not None, "stop ends the current keeper"
    assert not _alive(second.pid)
    assert host.process is second, "and launches none after it"


def test_keepers_that_keep_failing_are_relaunched_after_doubling_pauses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "llmeu")
    host = kept(tmp_path, SERVES)
    first = host.process
    assert first is not None
    host._command = (sys.executable, "-c", FAILS)  # every later keeper's host fails to start
    first.terminate()
    wait_for(lambda: "another in 2.0 s" in caplog.text, timeout=15, what="a third pause")
    host.stop()
    pauses = [line for line in caplog.messages if "launching another" in line]
    assert [line.rsplit(" in ", 1)[1] for line in pauses] == ["0.5 s", "1.0 s", "2.0 s"]
    assert "killed by signal SIGTERM" in pauses[0] and "exited with status 3" in pauses[1]
    failed = [line for line in caplog.messages if "did not start" in line]
    assert failed and all(line.endswith("no model here") for line in failed)


def test_a_keeper_whose_host_cannot_start_is_not_kept(tmp_path: Path) -> None:
    host = _launch(tmp_path / "host.sock", (sys.executable, "-c", FAILS))
    assert host.fault == "no model here"
    assert host.process is not None and host.process.poll() is not None, "ended, not kept"


@pytest.mark.parametrize(
    ("pongs", "restarts"),
    [
        ([(10, 0), (10, 2)], 2),
        ([(10, 0), (11, 0)], 1),
        ([(10, 0), (10, 3), (11, 0), (11, 1)], 5),
        ([(10, 1), (11, 0), (12, 0)], 3),
    ],
    ids=["one-keeper", "keeper-relaunched", "both-restarted", "twice-relaunched"],
)
def test_the_restart_count_goes_on_across_keepers(
    pongs: list[tuple[int, int]], restarts: int
) -> None:
    link = HostLink(None)
    for keeper, count in pongs:
        link._count_restarts({"ev": "pong", "pid": 1, "keeper": keeper, "restarts": count})
    assert link.restarts == restarts
