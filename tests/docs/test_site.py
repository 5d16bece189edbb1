"""The README is a landing page and the documentation site builds, every link resolving."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO
from tests.support.snippets import MARK, runnable_blocks

README = REPO / "README.md"
DOCS = REPO / "docs"
# The two commands of the quick start, exactly as CI and the reader run them.
QUICK_START = (
    "make serve   # installs llmeu with the local models into .venv and starts the embedded"
    " default on 127.0.0.1:8080\n"
    "make test    # installs the test dependencies, then runs lint, type checks, import layers"
    " and the whole test suite\n"
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """The anchor GitHub (and the site's `toc` setting) gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    outside_fences = re.sub(r"^```.*?^```$", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", outside_fences, re.MULTILINE)}


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Catalog and policies (`--config FILE`)", "catalog-and-policies---config-file"),
        ("Evidence: signed receipts and a tamper-evident ledger",
         "evidence-signed-receipts-and-a-tamper-evident-ledger"),
        ("Qualifying an upstream: `llmeu probe`", "qualifying-an-upstream-llmeu-probe"),
    ],
    ids=["option", "colon", "code"],
)  # fmt: skip
def test_slug_is_githubs(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_the_readme_is_a_landing_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert f"```sh\n{QUICK_START}```" in text


def test_every_link_of_the_readme_resolves() -> None:
    broken = []
    for target in LINK.findall(README.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        file = REPO / path if path else README
        if not file.exists() or (
            anchor and anchor not in anchors(file.read_text(encoding="utf-8"))
        ):
            broken.append(target)
    assert broken == []


def test_the_readme_links_every_page() -> None:
    linked = {target.partition("#")[0] for target in LINK.findall(README.read_text())}
    pages = {f"docs/{page.name}" for page in DOCS.glob("*.md")} - {"docs/index.md"}
    assert pages <= linked


def test_runnable_blocks_are_the_marked_ones() -> None:
    page = f"```sh\nnot this\n```\n{MARK}\n```python\nprint(1)\n```\n\n{MARK}\n\n```sh\necho\n```\n"
    assert runnable_blocks(page) == [("python", "print(1)\n"), ("sh", "echo\n")]


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_every_mark_is_on_a_code_block(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert text.count(MARK) == len(runnable_blocks(text))


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """mkdocs.yml turns every warning (a broken link or anchor, a page outside the nav)
    into a failure."""
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    assert (tmp_path / "index.html").is_file()
