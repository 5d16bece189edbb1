"""From rows whose links do not follow to named damage: the reasoning of the chain verifier.

`llmeu.evidence.audit` walks the chain once and keeps a `ChainWalk`; this
module explains the rows that do not follow their predecessor. Every row that
does not follow gets a *true predecessor* if one can be found (the row whose
stored link, hashed with this row's metadata, gives this row's link). That
turns the rows into a forest of predecessor edges, read as follows:

- a row with two successors is a fork: one successor is a forged row chained
  from a genuine link. The branch that goes on longer is the chain; the rows
  of the other branch are *inserted*. A row with neither a predecessor nor a
  successor that is not the last row is a forged row with a made-up link:
  inserted as well.
- following successors from each row without a predecessor gives the chain
  order of the genuine rows. Where it differs from the stored order, the
  fewest rows that explain the difference — those outside the longest run
  that both orders share (a longest increasing subsequence) — are *reordered*.
  Swapping two rows therefore reports one of them, saying which row it follows
  in the chain; moving one row far away reports that row, not all it jumped.
- a genuine row with no predecessor is *deleted* where `chain_seq` jumps
  before it (its predecessor is gone), otherwise *edited*; when its successor
  follows the link its metadata should have had, only its link was changed.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from llmeu.evidence.chain import link_after

START = -1  # the position of the link the first row follows from


class Damage(StrEnum):
    EDITED = "edited"
    DELETED = "deleted"
    INSERTED = "inserted"
    REORDERED = "reordered"
    TRUNCATED = "truncated after checkpoint"
    INVALID_CHECKPOINT = "invalid checkpoint"
    SUSPECT = "suspect"


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken place: its kind, what is wrong, and the trace ids around it."""

    kind: Damage
    detail: str
    trace_ids: tuple[str, ...] = ()
    before: str | None = None
    after: str | None = None

    def line(self) -> str:
        around = f"between {self.before or 'the start'} and {self.after or 'the end'}"
        return f"{self.kind}: {self.detail} ({around})"


@dataclass(slots=True)
class ChainWalk:
    """What the first pass keeps per row: enough to search, not the rows themselves."""

    seqs: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    follows: list[bool] = field(default_factory=list)
    bodies: dict[int, bytes] = field(default_factory=dict)  # rows that do not follow
    start: str | None = None  # the link the first row follows from, when known
    missing: list[tuple[int, int]] = field(default_factory=list)  # deleted seq ranges

    def add(self, seq: int, trace_id: str, link: str, body: bytes, follows: bool) -> None:
        if not follows:
            self.bodies[len(self.ids)] = body
        self.seqs.append(seq)
        self.ids.append(trace_id)
        self.links.append(link)
        self.follows.append(follows)

    def around(self, first: int, last: int) -> tuple[str | None, str | None]:
        """The trace ids just outside positions first..last."""
        return self.between(first)[0], self.between(last + 1)[1]

    def between(self, k: int) -> tuple[str | None, str | None]:
        """The trace ids on either side of the gap just before position k."""
        before = self.ids[k - 1] if 0 < k <= len(self.ids) else None
        after = self.ids[k] if 0 <= k < len(self.ids) else None
        return before, after

    def named(self, positions: list[int]) -> str:
        """Rows for a one-line message: a long run by its ends and its length."""
        if len(positions) <= 4:
            return ", ".join(self.name(p) for p in positions)
        ends = f"{self.name(positions[0])} … {self.name(positions[-1])}"
        return f"{len(positions)} rows, {ends}"

    def name(self, position: int) -> str:
        return (
            "the start"
            if position == START
            else f"{self.ids[position]} (seq {self.seqs[position]})"
        )


def diagnose(walk: ChainWalk, *, window: int, budget: int) -> list[Finding]:
    """The findings for the rows of `walk` that do not follow, in stored order."""
    failing = [i for i, follows in enumerate(walk.follows) if not follows]
    found: dict[int, int | None] = {}
    for i in failing:
        found[i], budget = _predecessor(walk, i, window, budget)
    graph = _Graph(walk, found)
    inserted = graph.forged_rows()
    displaced = any(j is not None for j in found.values())
    moved = graph.moved_rows(inserted) if displaced else set()
    orphans = sorted(i for i in failing if found[i] is None and i not in inserted)
    findings = [(i, _deleted(walk, i)) for i in orphans if _gap(walk, i) > 0]
    edited = set(orphans) - {i for i, _ in findings}
    relinked = {i for i in edited if _only_link_changed(walk, i)}
    edited -= relinked | {i + 1 for i in relinked}
    renumbered = {i for i in range(1, len(walk.ids)) if walk.follows[i] and _gap(walk, i) != 0}
    for kind, positions, what in (
        (Damage.EDITED, edited, "metadata does not match its chain_link"),
        (Damage.EDITED, relinked, "chain_link was changed (the metadata is intact)"),
        (Damage.EDITED, renumbered, "chain_seq was changed (the links are intact)"),
        (Damage.INSERTED, inserted, "not part of the chain"),
    ):
        findings.extend((run[0], _finding(walk, kind, run, what)) for run in _runs(positions))
    for run in _runs(moved):
        predecessor = graph.predecessor(run[0])
        after = "a row not found" if predecessor is None else walk.name(predecessor)
        pronoun = "it comes" if len(run) == 1 else "they come"
        what = f"out of chain order; in the chain {pronoun} right after {after}"
        findings.append((run[0], _finding(walk, Damage.REORDERED, run, what)))
    return [finding for _, finding in sorted(findings, key=lambda item: item[0])]


def _finding(walk: ChainWalk, kind: Damage, run: list[int], what: str) -> Finding:
    trace_ids = tuple(walk.ids[p] for p in run)
    return Finding(kind, f"{walk.named(run)}: {what}", trace_ids, *walk.around(run[0], run[-1]))


class _Graph:
    """Predecessor edges between positions: i-1 for rows that follow, else the one found."""

    def __init__(self, walk: ChainWalk, found: dict[int, int | None]):
        self.walk = walk
        self.found = found
        self.children: dict[int, list[int]] = {}
        for i, j in found.items():
            if j is not None:
                self.children.setdefault(j, []).append(i)
        for j, kids in self.children.items():
            if j + 1 < len(walk.follows) and walk.follows[j + 1]:
                kids.append(j + 1)
            kids.sort()

    def predecessor(self, i: int) -> int | None:
        if self.walk.follows[i]:
            return i - 1 if i > 0 else START
        return self.found.get(i)

    def successors(self, i: int) -> list[int]:
        kids = self.children.get(i)
        if kids is not None:
            return kids
        return [i + 1] if i + 1 < len(self.walk.follows) and self.walk.follows[i + 1] else []

    def successor(self, i: int, inserted: set[int]) -> int | None:
        kids = [k for k in self.successors(i) if k not in inserted]
        return kids[0] if kids else None

    def forged_rows(self) -> set[int]:
        """Rows of the shorter branch at every fork, and isolated rows before the last."""
        last = len(self.walk.ids) - 1
        forged = {
            i
            for i, j in self.found.items()
            if j is None and i != last and not self.successors(i) and self._skipped(i)
        }
        for kids in self.children.values():
            if len(kids) > 1:
                keep = max(kids, key=self._reach)
                for kid in kids:
                    if kid != keep:
                        forged.update(self._branch(kid))
        return forged

    def _skipped(self, i: int) -> bool:
        """The next row's true predecessor lies before row i: the chain goes around it."""
        j = self.found.get(i + 1)
        return j is not None and j < i

    def _reach(self, i: int) -> tuple[int, int]:
        """How far the branch from i goes (bounded), then the lower position first."""
        length = sum(1 for _ in itertools.islice(self._branch(i), 1024))
        return length, -i

    def _branch(self, i: int | None) -> Iterable[int]:
        seen: set[int] = set()
        while i is not None and i not in seen:
            seen.add(i)
            yield i
            kids = self.successors(i)
            i = kids[0] if len(kids) == 1 else None

    def moved_rows(self, inserted: set[int]) -> set[int]:
        """The fewest genuine rows whose stored place disagrees with the chain order."""
        order: list[int] = []
        placed: set[int] = set()
        for head in range(len(self.walk.ids)):
            if head in placed or head in inserted:
                continue
            predecessor = self.predecessor(head)
            if predecessor is not None and predecessor != START and predecessor not in inserted:
                continue
            position: int | None = head
            while position is not None and position not in placed:
                placed.add(position)
                order.append(position)
                position = self.successor(position, inserted)
        kept = _longest_increasing(order)
        return set(order) - kept


def _longest_increasing(values: list[int]) -> set[int]:
    """The values of one longest strictly increasing subsequence (patience sorting)."""
    tails: list[int] = []
    tail_index: list[int] = []
    parent: list[int] = [-1] * len(values)
    for index, value in enumerate(values):
        slot = bisect.bisect_left(tails, value)
        parent[index] = tail_index[slot - 1] if slot else -1
        if slot == len(tails):
            tails.append(value)
            tail_index.append(index)
        else:
            tails[slot] = value
            tail_index[slot] = index
    kept: set[int] = set()
    index = tail_index[-1] if tail_index else -1
    while index >= 0:
        kept.add(values[index])
        index = parent[index]
    return kept


def _predecessor(walk: ChainWalk, i: int, window: int, budget: int) -> tuple[int | None, int]:
    """The position whose stored link row i follows (START: the start link), and the budget left.

    Nearby positions first, then the whole chain while the budget of hashes lasts.
    """
    body, target, count = walk.bodies[i], walk.links[i], len(walk.links)
    lowest = START if walk.start is not None else 0
    nearby = [k for d in range(1, window + 1) for k in (i - 1 - d, i + d) if lowest <= k < count]
    far = (k for k in range(lowest, count) if k < i - 1 - window or k > i + window)
    for k in itertools.chain(nearby, far):
        if budget <= 0:
            return None, 0
        budget -= 1
        previous = walk.start if k == START else walk.links[k]
        if previous is not None and link_after(previous, body) == target:
            return k, budget
    return None, budget


def _only_link_changed(walk: ChainWalk, i: int) -> bool:
    """Row i+1 follows the link row i should have: only row i's stored link differs."""
    previous = walk.links[i - 1] if i > 0 else walk.start
    if previous is None or i + 1 not in walk.bodies:
        return False
    should_be = link_after(previous, walk.bodies[i])
    return link_after(should_be, walk.bodies[i + 1]) == walk.links[i + 1]


def _gap(walk: ChainWalk, i: int) -> int:
    return walk.seqs[i] - walk.seqs[i - 1] - 1 if i > 0 else 0


def _deleted(walk: ChainWalk, i: int) -> Finding:
    first, last = walk.seqs[i - 1] + 1, walk.seqs[i] - 1
    walk.missing.append((first, last))
    span = f"seq {first}" if first == last else f"seq {first}..{last}"
    detail = f"{last - first + 1} row(s) missing ({span})"
    return Finding(Damage.DELETED, detail, (), *walk.between(i))


def _runs(positions: Iterable[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for position in sorted(positions):
        if runs and position == runs[-1][-1] + 1:
            runs[-1].append(position)
        else:
            runs.append([position])
    return runs
