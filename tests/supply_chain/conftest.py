"""A throwaway environment installed from a few pins of the lock, with hash checking.

Installing the whole lock takes a minute or more (CI does it: `make sbom` builds the
runtime afresh); these tests take three small pins of requirements/runtime.txt, one
of them compiled (msgspec), so that picking the right wheel among many is exercised.
The environment has no pip of its own: the test run's pip installs into it.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBSET = ("h11", "idna", "msgspec")


@dataclass(frozen=True)
class LockedEnv:
    python: Path
    site_packages: Path
    requirements: Path  # the subset of the lock it was installed from


def lock_blocks(requirements: Path) -> dict[str, str]:
    """Each requirement of an exported lock file with its hash lines, by name."""
    blocks: dict[str, list[str]] = {}
    name = ""
    for line in requirements.read_text(encoding="utf-8").splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            name = line.split("==")[0]
            blocks[name] = [line]
        elif line.lstrip().startswith("--hash") and name:
            blocks[name].append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in blocks.items()}


def subset_of_lock(names: tuple[str, ...], destination: Path) -> Path:
    blocks = lock_blocks(ROOT / "requirements" / "runtime.txt")
    destination.write_text("".join(blocks[name] for name in names), encoding="utf-8")
    return destination


def pip_into(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """This test run's pip, installing into another environment."""
    command = [sys.executable, "-m", "pip", "--python", str(python), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)


def new_env(directory: Path) -> tuple[Path, Path]:
    venv.EnvBuilder(with_pip=False).create(directory)
    python = directory / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return python, Path(purelib)


@pytest.fixture(scope="module")
def locked_env(tmp_path_factory: pytest.TempPathFactory) -> LockedEnv:
    directory = tmp_path_factory.mktemp("locked-env")
    python, site_packages = new_env(directory / "venv")
    requirements = subset_of_lock(SUBSET, directory / "subset.txt")
    done = pip_into(python, "install", "--require-hashes", "--no-deps", "-r", str(requirements))
    assert done.returncode == 0, done.stderr
    return LockedEnv(python, site_packages, requirements)
