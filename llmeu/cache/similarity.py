"""How near two prompts are: the cosine of their embeddings, computed here.

Vectors are normalized once, when they are made, so that comparing two is a
dot product. The texts compared are only ever embedded by the bundled model,
in this process or in the local model's own process on this machine: no text
leaves the gateway to be compared.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Iterable, Sequence
from typing import TypeAlias

Vector: TypeAlias = "array[float]"
"""A normalized embedding: 4 bytes a dimension (`array("f")`), as kept."""

WINDOW_TOKENS = 256
"""The bundled embedding model (all-MiniLM-L6-v2) reads at most this many tokens of a text:
two texts that differ only after them embed alike, so such a text is never compared."""


def normalized(values: Sequence[float]) -> Vector:
    norm = math.sqrt(math.fsum(v * v for v in values))
    scale = 1.0 / norm if norm > 0 else 0.0
    return array("f", (v * scale for v in values))


def similarity(a: Vector, b: Vector) -> float:
    """The cosine of two normalized vectors (0 when their dimensions differ)."""
    if len(a) != len(b):
        return 0.0
    return math.fsum(map(operator.mul, a, b))


def nearest(
    query: Vector, candidates: Iterable[tuple[str, Vector]], threshold: float
) -> tuple[str, float] | None:
    """The candidate most similar to `query`, if it is at least `threshold` similar."""
    best: tuple[str, float] | None = None
    for key, vector in candidates:
        score = similarity(query, vector)
        if score >= threshold and (best is None or score > best[1]):
            best = (key, score)
    return best
