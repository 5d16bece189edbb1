"""The one JSON encoder of the wire, and the bound on how deeply free-form JSON may nest."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

encoder = msgspec.json.Encoder()

# msgspec refuses JSON nested deeper than the interpreter's recursion limit
# allows (RecursionError); free-form values (tool parameters, JSON schemas,
# platform bodies) are held to far less, so that no later encode of them can
# reach that limit either.
MAX_NESTING = 64


def nesting_depth(value: object) -> int:
    """How deeply lists and objects nest in decoded JSON (walked without recursion)."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in children)
    return deepest
