"""Release integrity: `llmeu --version` names the version and the commit it was built from."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from llmeu import __version__
from llmeu.buildinfo import COMMIT_FILE, BuildInfo, build_info, parse_commit_file
from llmeu.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize(
    ("info", "line"),
    [
        (BuildInfo("1.2.0", "ab" * 20, False), f"llmeu 1.2.0 (commit {'ab' * 20})"),
        (
            BuildInfo("1.2.0", "ab" * 20, True),
            f"llmeu 1.2.0 (commit {'ab' * 20}, with uncommitted changes)",
        ),
        (BuildInfo("1.2.0", None, False), "llmeu 1.2.0 (commit unknown)"),
    ],
    ids=["clean", "modified", "unknown"],
)
def test_describe(info: BuildInfo, line: str) -> None:
    assert info.describe() == line


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("abc\n", ("abc", False)), ("abc modified\n", ("abc", True)), ("", (None, False))],
    ids=["clean", "modified", "empty"],
)
def test_parse_commit_file(text: str, parsed: tuple[str | None, bool]) -> None:
    assert parse_commit_file(text) == parsed


def test_a_recorded_commit_wins(tmp_path: Path) -> None:
    (tmp_path / COMMIT_FILE).write_text("0123abcd\n")
    assert build_info(tmp_path) == BuildInfo(__version__, "0123abcd", False)


def test_an_installed_copy_without_a_record_does_not_guess(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "llmeu"
    package.mkdir(parents=True)
    assert build_info(package) == BuildInfo(__version__, None, False)


def test_the_command_prints_this_checkouts_commit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])

    assert exit_.value.code == 0
    head = git("rev-parse", "HEAD").strip()
    assert capsys.readouterr().out.startswith(f"llmeu {__version__} (commit {head}")


def test_a_wheel_built_from_a_clone_records_its_commit(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git("clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone))
    head = git("rev-parse", "HEAD", cwd=clone).strip()

    without_override = {k: v for k, v in os.environ.items() if k != "LLMEU_BUILD_COMMIT"}
    wheel = build_wheel(clone, tmp_path / "dist", without_override)

    assert read_from_wheel(wheel, f"llmeu/{COMMIT_FILE}") == f"{head}\n"


def test_a_build_without_git_takes_the_commit_from_the_environment(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)

    wheel = build_wheel(source, tmp_path / "dist", {**os.environ, "LLMEU_BUILD_COMMIT": "f" * 40})

    assert read_from_wheel(wheel, f"llmeu/{COMMIT_FILE}") == "f" * 40 + "\n"


def build_wheel(source: Path, dist: Path, env: Mapping[str, str]) -> Path:
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*command, "--wheel-dir", str(dist), str(source)],
        capture_output=True,
        check=True,
        env=dict(env),
        timeout=300,
    )
    (wheel,) = dist.glob("llmeu-*.whl")
    return wheel


def read_from_wheel(wheel: Path, member: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(member).decode()
