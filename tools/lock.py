"""Keep uv.lock and the pip requirement files exported from it in step with pyproject.toml.

uv.lock is the single resolution of every dependency, extra and group, for every
platform and Python version llmeu supports, with the SHA-256 of each file. pip cannot
read it, so each install set is exported to requirements/NAME.txt, the files that
`make serve`, `make test`, CI and a container build install with `--require-hashes`.

    python -m tools.lock            # re-resolve after pyproject.toml changed; keep other pins
    python -m tools.lock --upgrade  # move every pin to the newest release allowed
    python -m tools.lock --check    # fail when the lock or an export is out of date (offline)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements"

# What each requirements file holds. `build` is installed first by every install step.
EXPORTS: dict[str, tuple[str, ...]] = {
    "build": ("--only-group", "build"),
    "runtime": (),
    "local": ("--extra", "local"),
    "test": ("--extra", "local", "--extra", "test", "--group", "supply-chain"),
}


def uv_binary() -> str:
    """The uv installed beside this interpreter (the `supply-chain` group), else the PATH's."""
    beside = Path(sysconfig.get_path("scripts")) / "uv"
    return str(beside) if beside.is_file() else "uv"


def export(name: str) -> str:
    """requirements/NAME.txt as uv.lock says it should read, without resolving anything."""
    command = [uv_binary(), "export", "--frozen", "--no-emit-project", *EXPORTS[name]]
    return _run(command, capture=True)


def write_exports() -> None:
    REQUIREMENTS.mkdir(exist_ok=True)
    for name in EXPORTS:
        (REQUIREMENTS / f"{name}.txt").write_text(export(name), encoding="utf-8")


def stale() -> list[str]:
    """Why the committed lock is out of date; empty when it is not."""
    problems = []
    check = subprocess.run(
        [uv_binary(), "lock", "--check", "--offline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        problems.append(f"uv.lock does not match pyproject.toml: {check.stderr.strip()}")
        return problems
    for name in EXPORTS:
        path = REQUIREMENTS / f"{name}.txt"
        if not path.is_file() or path.read_text(encoding="utf-8") != export(name):
            problems.append(f"{path.relative_to(ROOT)} differs from uv.lock")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.lock", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--upgrade", action="store_true", help="move every pin to the newest")
    mode.add_argument("--check", action="store_true", help="only check, change nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        for problem in problems:
            print(f"lock: {problem}; run `make lock`", file=sys.stderr)
        return 1 if problems else 0
    _run([uv_binary(), "lock", *(["--upgrade"] if args.upgrade else [])], capture=False)
    write_exports()
    print(f"lock: wrote uv.lock and requirements/{{{','.join(EXPORTS)}}}.txt")
    return 0


def _run(command: list[str], *, capture: bool) -> str:
    done = subprocess.run(command, cwd=ROOT, capture_output=capture, text=True, check=True)
    return done.stdout if capture else ""


if __name__ == "__main__":
    sys.exit(main())
