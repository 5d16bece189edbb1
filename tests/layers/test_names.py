"""Module names say where a module lives: no two modules of the package share a name."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "llmeu"


def test_no_two_modules_or_packages_share_a_name() -> None:
    places: dict[str, list[str]] = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__init__.py":
            name, place = path.parent.name, path.parent
        else:
            name, place = path.stem, path
        places[name].append(str(place.relative_to(PACKAGE.parent)))
    shared = {name: where for name, where in places.items() if len(set(where)) > 1}
    assert shared == {}
