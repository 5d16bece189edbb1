"""Walk a hash chain and its checkpoints; name every broken place.

Input: the final trace rows in `chain_seq` order (each with `chain_seq`,
`chain_link`, `chain_version`, `metadata_sha256`, `metadata_purged_at`,
`trace_id` and the chained columns) and the checkpoint tokens. Each row is
read by its chain version (`llmeu.evidence.chained_rows`): a purged row must
really be empty and, from version 2, its kept columns must still hash to its
link; a purged version-1 row's link is taken as given where it sits right
after its predecessor's `chain_seq`. A row chained as suspect is named
(`suspect`), and so is a row whose columns say what no link shows (`edited`).
Pure: no database, no files; the caller reads them, and may stream the rows:
only their sequence numbers, ids and links are kept.

First pass, one JCS serialisation and one hash per row: row n *follows* when
its stored link equals SHA-256(stored link of row n-1 || its metadata). In an
untouched chain every row follows and the verifier is done. For each row
that does not, it looks for the row's *true predecessor*: the row whose
stored link, hashed with this row's metadata, gives this row's link — first
among the `window` rows around it, then anywhere while `search_budget` hashes
last. A row's stored link is only ever the input of its successor's link, so
moving a row keeps its link valid; changing a row's content does not. The
five kinds of damage are told apart this way (`llmeu.evidence.diagnosis`):

- **edited**: the row has no true predecessor anywhere and `chain_seq` does
  not jump before it: its metadata no longer matches its link, while its
  successor still follows the stored link. When the successor follows the
  link the row *should* have, only the link itself was changed. A row that
  follows but whose `chain_seq` jumps had its number changed.
- **deleted**: the row has no true predecessor anywhere and `chain_seq` jumps
  before it (`chain_seq` has no gaps by construction, see
  `llmeu.evidence.chain`): the row it was chained to is gone. Rows missing
  before the first row are deleted too, unless a checkpoint vouches for the
  link the first row follows from.
- **inserted**: a forged row either chains from a genuine link — then that
  link has two successors, and the branch that stops first is the forgery —
  or carries a made-up link: it then has no predecessor and no successor, and
  the next row's true predecessor lies before it (the chain goes around it).
  A row without a `chain_seq` or `chain_link` is inserted too.
- **reordered**: every genuine row has its true predecessor, so following
  them gives the chain order. Where the stored order differs, the fewest rows
  that explain it (those outside a longest common run) are named, with the
  row that precedes each in the chain: swapping two rows names one of them
  and where it belongs; moving a row far away names that row, not the rows it
  jumped over.
- **truncated after checkpoint**: a valid checkpoint names a `chain_seq`
  beyond the last row. A checkpoint whose row is present with another link
  means the chain up to it was rewritten with recomputed links (edited); one
  whose row is absent from the middle, deleted.

Limits, by nature of a hash chain: rows appended at the tail after the last
checkpoint with correctly computed links, or a tail deleted after it, cannot
be told from genuine ones; that is what frequent checkpoints bound. A row
moved further than the search reaches shows as deleted where it was and
edited where it is. Neighbouring findings of one kind are reported once.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llmeu.evidence.chain import GENESIS_LINK, ChainLink, Checkpoint, link_after, read_checkpoint
from llmeu.evidence.chained_rows import read_row
from llmeu.evidence.diagnosis import ChainWalk, Damage, Finding, diagnose
from llmeu.evidence.signing_keys import public_keys_from_jwks

__all__ = ["ChainReport", "Damage", "Finding", "verify_chain"]


@dataclass(frozen=True, slots=True)
class ChainReport:
    rows: int
    head: ChainLink | None
    checkpoint: Checkpoint | None
    findings: tuple[Finding, ...]
    admin_events: int = 0
    """How many of the rows are admin events (`llmeu.evidence.admin_events`), each found
    to match its record; the others are calls."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def lines(self) -> list[str]:
        if self.findings:
            return [finding.line() for finding in self.findings]
        up_to = self.head.trace_id if self.head else "the start (no traces)"
        checkpoint = (
            f"checkpoint {self.checkpoint.created_iso}" if self.checkpoint else "no checkpoint"
        )
        events = self.admin_events
        rows = f"{self.rows - events} traces"
        if events:
            rows += f" and {events} admin event{'s' if events != 1 else ''}"
        return [f"OK: {rows}, chain intact up to {up_to} ({checkpoint})"]


def verify_chain(
    rows: Iterable[Mapping[str, Any]],
    checkpoints: Sequence[str] = (),
    jwks: Mapping[str, Any] | None = None,
    *,
    window: int = 32,
    search_budget: int = 1_000_000,
    now: float | None = None,
) -> ChainReport:
    """Verify rows (in `chain_seq` order) and checkpoint tokens (checked against `jwks`);
    `now`: the verifier's time (a purge cannot have happened after it)."""
    findings: list[Finding] = []
    valid = _read_checkpoints(checkpoints, jwks, findings)
    walk = _first_pass(rows, valid, findings, now)
    findings.extend(diagnose(walk, window=window, budget=search_budget))
    newest = _checkpoint_findings(walk, valid, findings)
    head = ChainLink(walk.seqs[-1], walk.links[-1], walk.ids[-1]) if walk.ids else None
    return ChainReport(len(walk.ids), head, newest, tuple(findings))


def _read_checkpoints(
    tokens: Sequence[str], jwks: Mapping[str, Any] | None, findings: list[Finding]
) -> list[Checkpoint]:
    if not tokens:
        return []
    try:
        keys = public_keys_from_jwks(jwks or {})
    except ValueError as error:
        findings.append(Finding(Damage.INVALID_CHECKPOINT, f"cannot check checkpoints: {error}"))
        return []
    valid = []
    for number, token in enumerate(tokens, 1):
        try:
            valid.append(read_checkpoint(token, keys))
        except ValueError as error:
            findings.append(Finding(Damage.INVALID_CHECKPOINT, f"checkpoint #{number}: {error}"))
    return sorted(valid, key=lambda c: c.head.seq)


def _first_pass(
    rows: Iterable[Mapping[str, Any]],
    checkpoints: list[Checkpoint],
    findings: list[Finding],
    now: float | None,
) -> ChainWalk:
    walk = ChainWalk()
    previous: str | None = None
    outside: list[tuple[int, str]] = []
    marked: list[tuple[int, Damage, str]] = []  # what a row's columns say, by position
    for row in rows:
        seq, link, trace_id = row.get("chain_seq"), row.get("chain_link"), row.get("trace_id")
        if not isinstance(seq, int) or not _is_link(link):
            outside.append((len(walk.ids), str(trace_id)))
            continue
        assert isinstance(link, str)
        if not walk.ids:
            walk.start = previous = _start_link(
                seq, str(trace_id), checkpoints, findings, walk.missing
            )
        reading = read_row(row, now)
        follows = previous is None or link_after(previous, reading.body) == link
        if not follows and reading.given:
            # A purged version-1 row's link cannot be recomputed: it is taken as given in
            # its place, and the next row must still follow it.
            follows = seq == (walk.seqs[-1] if walk.seqs else 0) + 1
        named = f"{trace_id} (seq {seq})"
        problem = reading.problem or (reading.if_linked if follows else None)
        if problem is not None:
            marked.append((len(walk.ids), Damage.EDITED, f"{named}: {problem}"))
        if reading.suspect:
            marked.append((len(walk.ids), Damage.SUSPECT, f"{named}: {_SUSPECT}"))
        walk.add(seq, str(trace_id), link, reading.body, follows)
        previous = link
    for position, kind, detail in marked:
        row_id = (walk.ids[position],)
        findings.append(Finding(kind, detail, row_id, *walk.around(position, position)))
    for position, trace_id in outside:
        detail = f"{trace_id} has no valid chain_seq/chain_link: it is not part of the chain"
        findings.append(Finding(Damage.INSERTED, detail, (trace_id,), *walk.between(position)))
    return walk


_SUSPECT = (
    "chained as suspect: the gateway found it in the ledger without a place in the chain, "
    "and no gateway process had recorded the call (written into the database directly?)"
)


def _is_link(value: object) -> bool:
    if not isinstance(value, str) or len(value) != 64:
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True


def _start_link(
    seq: int,
    trace_id: str,
    checkpoints: list[Checkpoint],
    findings: list[Finding],
    missing: list[tuple[int, int]],
) -> str | None:
    """The link the first row follows from: genesis, or a checkpoint just before it."""
    if seq == 1:
        return GENESIS_LINK
    for checkpoint in checkpoints:
        if checkpoint.head.seq == seq - 1:
            return checkpoint.head.link
    detail = f"{seq - 1} row(s) missing before the first row (seq 1..{seq - 1})"
    findings.append(Finding(Damage.DELETED, detail, (), None, trace_id))
    missing.append((1, seq - 1))
    return None  # the first row's link is then taken as given


def _checkpoint_findings(
    walk: ChainWalk, checkpoints: list[Checkpoint], findings: list[Finding]
) -> Checkpoint | None:
    """Compare each checkpoint with the row it names; the newest that matches is returned."""
    newest = None
    last_seq = walk.seqs[-1] if walk.seqs else 0
    beyond = [c for c in checkpoints if c.head.seq > last_seq]
    for checkpoint in checkpoints:
        if checkpoint.head.seq > last_seq:
            continue
        if checkpoint.head.seq < walk.seqs[0]:
            if checkpoint.head.link == walk.start:
                newest = checkpoint  # the one the first row follows from
            continue  # before the rows given: said by the first row's finding, if any
        k = bisect.bisect_left(walk.seqs, checkpoint.head.seq)
        held = k < len(walk.seqs) and walk.seqs[k] == checkpoint.head.seq
        if held and walk.links[k] == checkpoint.head.link:
            newest = checkpoint
        elif held and walk.ids[k] == checkpoint.head.trace_id:
            detail = (
                f"{walk.named([k])}: chain_link differs from the checkpoint of "
                f"{checkpoint.created_iso}: the chain up to it was rewritten"
            )
            findings.append(Finding(Damage.EDITED, detail, (walk.ids[k],), *walk.around(k, k)))
        elif not any(a <= checkpoint.head.seq <= b for a, b in walk.missing):
            findings.append(_named_row_gone(walk, checkpoint, k, held))
    if beyond:
        findings.append(_truncated(walk, beyond[-1], last_seq))
    return newest


def _truncated(walk: ChainWalk, latest: Checkpoint, last_seq: int) -> Finding:
    """The tail the newest checkpoint vouches for and the rows no longer hold — what a
    restored older backup, or a deleted tail, lost — named as the exact range of places."""
    first, last = last_seq + 1, latest.head.seq
    span = f"position {first} is" if first == last else f"positions {first}..{last} are"
    ends = f"ends at chain position {last_seq}" if last_seq else "holds no chained row"
    detail = (
        f"the ledger {ends}; the checkpoint signed {latest.created_iso} vouches for "
        f"position {last} ({latest.head.trace_id}): {span} missing ({last - last_seq} row(s))"
    )
    before = walk.ids[-1] if walk.ids else None
    return Finding(Damage.TRUNCATED, detail, (), before, None)


def _named_row_gone(walk: ChainWalk, checkpoint: Checkpoint, k: int, held: bool) -> Finding:
    """The checkpoint's row is not at its `chain_seq`: moved (reordered) or gone (deleted)."""
    head = checkpoint.head
    named = f"{head.trace_id} (seq {head.seq}), named by the checkpoint of {checkpoint.created_iso}"
    instead = f"; seq {head.seq} now holds {walk.ids[k]}" if held else ""
    if head.trace_id in walk.ids:
        where = walk.ids.index(head.trace_id)
        detail = f"{named}, is stored at seq {walk.seqs[where]}{instead}"
        return Finding(Damage.REORDERED, detail, (walk.ids[where],), *walk.around(where, where))
    return Finding(Damage.DELETED, f"{named}, is missing{instead}", (), *walk.between(k))
