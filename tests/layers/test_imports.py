"""The layering of docs/architecture.md, checked on the source: pure layers import no I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "llmeu"
IO_MODULES = {
    "os", "sqlite3", "socket", "asyncio", "subprocess", "uvicorn", "httptools", "httpx",
    "asyncpg", "redis", "llama_cpp", "onnxruntime",
}  # fmt: skip
PURE = ["protocol", "routing"]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("layer", PURE)
def test_pure_layers_import_no_io(layer: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(imported_modules(path) & IO_MODULES)
        for path in (PACKAGE / layer).rglob("*.py")
        if imported_modules(path) & IO_MODULES
    }
    assert offenders == {}


def test_the_check_sees_an_offending_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\nfrom asyncio import sleep\n")
    assert imported_modules(module) == {"os", "asyncio"}


def test_only_settings_and_the_cli_read_the_environment() -> None:
    readers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "os.environ" in path.read_text() or "getenv(" in path.read_text()
    )
    assert "config.py" in readers
    assert [r for r in readers if r != "config.py" and not r.startswith("cli/")] == []
