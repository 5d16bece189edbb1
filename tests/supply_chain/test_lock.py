"""The lock: in step with pyproject.toml, hashed throughout, and enforced by pip."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.supply_chain.conftest import (
    ROOT,
    SUBSET,
    LockedEnv,
    lock_blocks,
    new_env,
    pip_into,
    subset_of_lock,
)
from tools import lock

HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def test_lock_and_exports_match_pyproject() -> None:
    assert lock.stale() == []


@pytest.mark.parametrize("name", sorted(lock.EXPORTS), ids=sorted(lock.EXPORTS))
def test_every_pin_is_exact_and_hashed(name: str) -> None:
    blocks = lock_blocks(ROOT / "requirements" / f"{name}.txt")
    assert blocks
    for requirement, block in blocks.items():
        assert "==" in block.splitlines()[0], requirement
        assert HASH.search(block), f"{requirement} has no SHA-256 in requirements/{name}.txt"


def test_llama_cpp_python_is_locked_by_its_sdist() -> None:
    """Compiled here from source: the one hash is the sdist's, which pip's wheel cache keys on."""
    block = lock_blocks(ROOT / "requirements" / "local.txt")["llama-cpp-python"]
    assert len(HASH.findall(block)) == 1


def test_a_subset_of_the_lock_installs_with_hash_checking(locked_env: LockedEnv) -> None:
    installed = {p.name.split("-")[0].lower() for p in locked_env.site_packages.glob("*.dist-info")}
    assert installed == set(SUBSET)


def test_a_tampered_hash_fails_the_install(tmp_path: Path) -> None:
    python, site_packages = new_env(tmp_path / "venv")
    requirements = subset_of_lock(("h11",), tmp_path / "subset.txt")
    text = requirements.read_text(encoding="utf-8")
    tampered = HASH.sub(lambda m: "--hash=sha256:" + m.group(1)[::-1], text)
    requirements.write_text(tampered, encoding="utf-8")

    done = pip_into(python, "install", "--require-hashes", "--no-deps", "-r", str(requirements))

    assert done.returncode != 0
    assert "DO NOT MATCH THE HASHES" in done.stderr
    assert list(site_packages.glob("h11*")) == []


def test_a_requirement_without_a_hash_is_refused(tmp_path: Path) -> None:
    python, site_packages = new_env(tmp_path / "venv")
    blocks = lock_blocks(ROOT / "requirements" / "runtime.txt")
    unhashed_pin = blocks["idna"].splitlines()[0].rstrip(" \\")
    requirements = tmp_path / "subset.txt"
    requirements.write_text(blocks["h11"] + unhashed_pin + "\n", encoding="utf-8")

    done = pip_into(python, "install", "--require-hashes", "--no-deps", "-r", str(requirements))

    assert done.returncode != 0
    assert "Hashes are required" in done.stderr
    assert list(site_packages.glob("*.dist-info")) == []
