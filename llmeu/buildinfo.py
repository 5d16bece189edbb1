"""Which source this copy of llmeu was built from, for `llmeu --version` and the SBOM.

An operator who finds a gateway running must be able to tie it to one commit of the
repository, the way the lock ties every dependency to one file. A wheel built from a
git checkout carries the commit in `llmeu/BUILD_COMMIT`, written by `setup.py` at
build time; an editable install of a checkout asks git when the question is asked.
Nothing here runs at import.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from llmeu import __version__

COMMIT_FILE = "BUILD_COMMIT"
MODIFIED = "modified"
_PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class BuildInfo:
    version: str
    commit: str | None  # the full hash; None when the build recorded none
    modified: bool  # built from a work tree with uncommitted changes to tracked files

    def describe(self) -> str:
        if self.commit is None:
            return f"llmeu {self.version} (commit unknown)"
        suffix = ", with uncommitted changes" if self.modified else ""
        return f"llmeu {self.version} (commit {self.commit}{suffix})"


def parse_commit_file(text: str) -> tuple[str | None, bool]:
    """The commit and the modified flag from BUILD_COMMIT: a hash, then `modified` or nothing."""
    words = text.split()
    if not words:
        return None, False
    return words[0], MODIFIED in words[1:]


def git_commit(source_dir: Path) -> tuple[str | None, bool]:
    """The checkout's HEAD and whether tracked files differ from it; (None, False) without git."""
    try:
        head = _git(source_dir, "rev-parse", "HEAD")
        status = _git(source_dir, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None, False
    return head.strip() or None, bool(status.strip())


def build_info(package_dir: Path = _PACKAGE_DIR) -> BuildInfo:
    """The recorded commit if the build wrote one, else the checkout's when run from source."""
    recorded = package_dir / COMMIT_FILE
    if recorded.is_file():
        return BuildInfo(__version__, *parse_commit_file(recorded.read_text(encoding="utf-8")))
    if _is_checkout_root(package_dir.parent):
        return BuildInfo(__version__, *git_commit(package_dir.parent))
    return BuildInfo(__version__, None, False)


def _is_checkout_root(directory: Path) -> bool:
    # Only the checkout the package lives in says anything: an installed copy under a
    # .venv inside some other checkout must not report that checkout's HEAD.
    return (directory / ".git").exists() and (directory / "pyproject.toml").is_file()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=10
    ).stdout
