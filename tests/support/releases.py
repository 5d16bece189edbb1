"""The previous release of llmeu, taken from this repository's own history, runnable.

The previous release is the newest commit on the first-parent history of HEAD
(the main line, not the commits of merged branches) whose ledger migrations
stop below the current code's highest: the code a rolling upgrade to this
schema replaces. It is exported (`git archive`) into a directory and given a
virtual environment of its own whose path holds that tree first and then the
current environment's site-packages, so that it runs on the same locked
dependencies, without a network.
"""

from __future__ import annotations

import ast
import site
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import REPO

MIGRATIONS_FILE = "llmeu/ledger/migrations.py"


class NoHistory(Exception):
    """The repository's history cannot give a previous release (no git, a tarball, a
    shallow clone cut before it)."""


@dataclass(frozen=True)
class Release:
    commit: str
    highest_migration: int
    code: Path
    """The exported tree: the working directory of its processes."""
    python: Path

    @property
    def env(self) -> dict[str, str]:
        """The environment its processes need over the test's own: its tree, not ours."""
        return {"PYTHONPATH": str(self.code)}

    def command(self, *args: str) -> list[str]:
        return [str(self.python), "-m", "llmeu.cli.main", *args]


def highest_migration(text: str) -> int:
    """The highest version in the text of a `migrations.py`: the first item of each entry
    of its `MIGRATIONS` tuple, read from the syntax tree (nothing of it is run)."""
    for node in ast.parse(text).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == "MIGRATIONS":
            assert isinstance(value, ast.Tuple), ast.dump(node)
            entries = [e for e in value.elts if isinstance(e, ast.Tuple)]
            return max(int(ast.literal_eval(entry.elts[0])) for entry in entries)
    raise NoHistory(f"{MIGRATIONS_FILE} has no MIGRATIONS")


def _git(*args: str, stdin: str | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), *args],
            input=stdin, capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as error:
        raise NoHistory(f"git {' '.join(args[:2])} failed: {error}") from None
    return done.stdout


def previous_commit(current: int) -> tuple[str, int]:
    """The newest first-parent commit whose migrations stop below `current`, and theirs."""
    commits = _git("rev-list", "--first-parent", "HEAD").split()
    listing = _git("cat-file", "--batch-check", stdin="".join(
        f"{commit}:{MIGRATIONS_FILE}\n" for commit in commits))  # fmt: skip
    highest: dict[str, int] = {}
    for commit, line in zip(commits, listing.splitlines(), strict=True):
        blob, kind, *_ = line.split()
        if kind != "blob":  # before the file existed
            break
        if blob not in highest:
            highest[blob] = highest_migration(_git("cat-file", "-p", blob))
        if highest[blob] < current:
            return commit, highest[blob]
    raise NoHistory(
        f"no commit of {len(commits)} on the first-parent history of HEAD has migrations "
        f"below {current} (a shallow clone?)"
    )


def install_previous(current: int, into: Path) -> Release:
    """Export the previous release into `into` and give it its own virtual environment."""
    commit, highest = previous_commit(current)
    code = into / "code"
    code.mkdir(parents=True)
    archive = into / "release.tar"
    _git("archive", "--format=tar", "-o", str(archive), commit, "llmeu")
    subprocess.run(["tar", "-xf", str(archive), "-C", str(code)], check=True)
    environment = into / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(environment)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = environment / "lib" / version / "site-packages"
    # Its own tree first, then the dependencies the current environment installed (its
    # .pth files are not read from there, so the current llmeu's editable install is not
    # on the path).
    (packages / "llmeu-previous.pth").write_text(
        "\n".join([str(code), *site.getsitepackages()]) + "\n"
    )
    return Release(commit, highest, code, environment / "bin" / "python")
