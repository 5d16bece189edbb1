"""The one build step pyproject.toml cannot declare: record the commit llmeu is built from.

`llmeu --version` and the SBOM report it (llmeu/buildinfo.py reads it). The commit
comes from LLMEU_BUILD_COMMIT when set (an image built without the .git folder),
else from git; a wheel built from an sdist keeps the one the sdist recorded.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the build backend does not put the project on the path

from llmeu.buildinfo import COMMIT_FILE, MODIFIED, git_commit  # noqa: E402


def commit_file_text() -> str | None:
    if commit := os.environ.get("LLMEU_BUILD_COMMIT", "").strip():
        return commit + "\n"
    commit, modified = git_commit(ROOT)
    if commit is None:
        recorded = ROOT / "llmeu" / COMMIT_FILE
        return recorded.read_text(encoding="utf-8") if recorded.is_file() else None
    return f"{commit} {MODIFIED}\n" if modified else f"{commit}\n"


class BuildPyWithCommit(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode and (text := commit_file_text()) is not None:
            Path(self.build_lib, "llmeu", COMMIT_FILE).write_text(text, encoding="utf-8")


class SdistWithCommit(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        if (text := commit_file_text()) is not None:
            Path(base_dir, "llmeu", COMMIT_FILE).write_text(text, encoding="utf-8")


setup(cmdclass={"build_py": BuildPyWithCommit, "sdist": SdistWithCommit})
