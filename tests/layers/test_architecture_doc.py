"""docs/architecture.md states the import contracts that `lint-imports` checks: each
contract of pyproject.toml has a section of the same name naming every module it names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "architecture.md").read_text()
CONTRACTS: list[dict[str, Any]] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"][
    "importlinter"
]["contracts"]


def section(name: str) -> str:
    """The text under the `### name` heading, up to the next heading."""
    match = re.search(rf"^### {re.escape(name)}\n(.*?)(?=^#|\Z)", DOC, re.MULTILINE | re.DOTALL)
    assert match, f"docs/architecture.md has no section `### {name}`"
    return match.group(1)


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: str(c["name"]))
def test_each_contract_is_stated_in_the_architecture_page(contract: dict[str, Any]) -> None:
    text = section(contract["name"])
    if contract["type"] == "layers":
        stated = [line.strip() for line in text.splitlines() if line.startswith("    llmeu")]
        assert stated == contract["layers"]
    else:
        named = [*contract["source_modules"], *contract["forbidden_modules"]]
        missing = [m for m in named if f"`{m}`" not in text]
        assert missing == []


def test_every_section_is_a_contract() -> None:
    headings = re.findall(r"^### (.+)$", DOC.split("## Import contracts", 1)[1], re.MULTILINE)
    assert headings == [c["name"] for c in CONTRACTS]
