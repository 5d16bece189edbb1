"""`make serve` and `make install` install only when something they install from changed.

Run for real on a copy of the Makefile, with a stand-in `.venv` whose `python`
and `llmeu` only write down how they were called.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import REPO

RECORDER = '#!/bin/sh\necho "$(basename "$0") $*" >> "$(dirname "$0")/../calls.log"\n'

SIDE_INSTALLS = (
    (
        "tests/evidence/jose/package-lock.json",
        "tests/evidence/jose/node_modules/.package-lock.json",
    ),
    ("tests/node/package-lock.json", "tests/node/node_modules/.package-lock.json"),
    ("tests/clients/node/package-lock.json", "tests/clients/node/node_modules/.installed"),
    ("tests/clients/llamaindex-requirements.txt", "build/llamaindex-venv/.installed"),
)

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy(REPO / name, tmp_path / name)
    (tmp_path / "requirements").mkdir()
    for lock in ("build", "local", "test"):
        (tmp_path / "requirements" / f"{lock}.txt").write_text(f"# {lock}\n")
    # What `install` builds beside the venv (the Node packages, LlamaIndex's environment)
    # is up to date here: this test is about the venv's stamps.
    for lock, stamp in SIDE_INSTALLS:
        (tmp_path / lock).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / lock).write_text("{}\n")
        (tmp_path / stamp).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / stamp).write_text("")
        later = (tmp_path / lock).stat().st_mtime + 60
        os.utime(tmp_path / stamp, (later, later))
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "llmeu"):
        (bin_dir / tool).write_text(RECORDER)
        (bin_dir / tool).chmod(0o755)
    return tmp_path


def make(project: Path, target: str) -> list[str]:
    """The calls one `make TARGET` made."""
    log = project / ".venv" / "calls.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(["make", "-s", target], cwd=project, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines() if log.exists() else []


def installs(calls: list[str]) -> list[str]:
    return [c for c in calls if "pip install" in c]


def test_serve_installs_once_then_only_when_the_lock_changes(project: Path) -> None:
    first = make(project, "serve")
    assert any("requirements/local.txt" in c for c in installs(first))
    assert first[-1] == "llmeu serve"

    again = make(project, "serve")
    assert installs(again) == []
    assert again == ["llmeu serve"]

    lock = project / "requirements" / "local.txt"
    later = lock.stat().st_mtime + 10
    os.utime(lock, (later, later))
    assert any("requirements/local.txt" in c for c in installs(make(project, "serve")))


def test_install_has_its_own_stamp(project: Path) -> None:
    make(project, "serve")
    assert any("requirements/test.txt" in c for c in installs(make(project, "install")))
    assert make(project, "install") == []
    pyproject = project / "pyproject.toml"
    later = pyproject.stat().st_mtime + 10
    os.utime(pyproject, (later, later))
    assert installs(make(project, "install"))
