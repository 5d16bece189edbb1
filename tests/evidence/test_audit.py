"""The chain verifier on synthetic ledgers: untouched, and each kind of damage."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from llmeu.evidence import (
    GENESIS,
    ChainLink,
    Damage,
    KeyRing,
    SigningKey,
    sign_checkpoint,
    verify_chain,
)
from llmeu.evidence.chain import CHAIN_VERSION, link_row
from tests.evidence.factories import ledger_row

Row = dict[str, Any]
RING = KeyRing(SigningKey.generate())
JWKS = RING.jwks()
CHECKPOINT_AT = 1_762_000_000.0


def chained(rows: list[Row], head: ChainLink = GENESIS) -> ChainLink:
    """Link rows in place, as the ledger's write transaction does; returns the new head."""
    for row in rows:
        head, digest = link_row(head, row)
        row.update(chain_seq=head.seq, chain_link=head.link, chain_version=CHAIN_VERSION,
                   metadata_sha256=digest)  # fmt: skip
    return head


def ledger(count: int = 12) -> list[Row]:
    rows = [ledger_row(n) for n in range(1, count + 1)]
    chained(rows)
    return rows


def checkpoint_of(row: Row, created_at: float = CHECKPOINT_AT) -> str:
    head = ChainLink(row["chain_seq"], row["chain_link"], row["trace_id"])
    return sign_checkpoint(head, RING.active, created_at=created_at)


def stored_order(rows: list[Row]) -> list[Row]:
    """What `ORDER BY chain_seq` returns."""
    return sorted(rows, key=lambda row: row["chain_seq"])


def found(rows: list[Row], checkpoints: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    report = verify_chain(stored_order(rows), checkpoints, JWKS)
    return [(f.kind, f.trace_ids, f.before, f.after) for f in report.findings]


def ids(rows: list[Row], *positions: int) -> tuple[str, ...]:
    return tuple(rows[p]["trace_id"] for p in positions)


def test_an_untouched_chain_verifies() -> None:
    rows = ledger()
    report = verify_chain(rows, [checkpoint_of(rows[5]), checkpoint_of(rows[-1])], JWKS)
    assert report.ok
    assert report.lines() == [
        f"OK: 12 traces, chain intact up to {rows[-1]['trace_id']} (checkpoint 2025-11-01T12:26:40Z)"
    ]


def test_an_empty_ledger_verifies() -> None:
    assert verify_chain([], (), JWKS).lines() == [
        "OK: 0 traces, chain intact up to the start (no traces) (no checkpoint)"
    ]


def test_purging_or_erasing_content_keeps_the_chain_intact() -> None:
    rows = ledger()
    for row in rows[::2]:
        row.update(prompt=None, completion=None, content_expires_at=None)
    rows[3]["completion"] = "[erased]"
    assert found(rows) == []


def test_a_chain_continued_across_batches_and_processes_verifies() -> None:
    rows = ledger(5)
    more = [ledger_row(n, instance_id="inst_c") for n in range(6, 9)]
    chained(more, ChainLink(rows[-1]["chain_seq"], rows[-1]["chain_link"]))
    assert found(rows + more) == []


@pytest.mark.parametrize(
    ("position", "column", "value"),
    [
        (5, "status", "failed"),
        (5, "cost_eur", 0.0),
        (5, "sovereignty_class", "global"),
        (5, "attempts", "[]"),
        (0, "output_tokens", 1),
        (11, "endpoint_id", "openai-us"),
        (5, "chain_link", "f" * 64),
        (5, "mcp_server", "crm-us"),
    ],
    ids=["status", "cost", "class", "attempts", "first-row", "last-row", "link", "tool-server"],
)
def test_one_changed_column_is_named_edited(position: int, column: str, value: Any) -> None:
    rows = ledger()
    before = ids(rows, position - 1)[0] if position > 0 else None
    after = ids(rows, position + 1)[0] if position < 11 else None
    rows[position][column] = value
    assert found(rows) == [(Damage.EDITED, ids(rows, position), before, after)]


def test_two_edited_neighbours_are_one_finding() -> None:
    rows = ledger()
    rows[4]["input_tokens"] = 1
    rows[5]["input_tokens"] = 1
    assert found(rows) == [(Damage.EDITED, ids(rows, 4, 5), *ids(rows, 3, 6))]


def test_an_edited_sequence_number_with_intact_links_is_edited() -> None:
    rows = ledger()
    for row in rows[6:]:
        row["chain_seq"] += 10
    assert found(rows) == [(Damage.EDITED, ids(rows, 6), *ids(rows, 5, 7))]


@pytest.mark.parametrize("gone", [[5], [5, 6, 7]], ids=["one", "three"])
def test_deleted_rows_are_named_with_their_neighbours(gone: list[int]) -> None:
    rows = ledger()
    kept = [row for p, row in enumerate(rows) if p not in gone]
    assert found(kept) == [(Damage.DELETED, (), *ids(rows, gone[0] - 1, gone[-1] + 1))]
    report = verify_chain(kept, (), JWKS)
    assert f"{len(gone)} row(s) missing" in report.lines()[0]


def test_deleting_the_first_rows_is_deleted() -> None:
    rows = ledger()
    assert found(rows[2:]) == [(Damage.DELETED, (), None, rows[2]["trace_id"])]


def test_a_chain_may_start_at_a_checkpoint() -> None:
    rows = ledger()
    assert found(rows[4:], (checkpoint_of(rows[3]),)) == []


def forged_row(number: int = 99) -> Row:
    return ledger_row(number, trace_id="trc_forged", endpoint_id="forged-endpoint")


def test_a_forged_row_with_a_made_up_link_is_inserted() -> None:
    rows = ledger()
    forged = forged_row() | {"chain_seq": rows[5]["chain_seq"], "chain_link": "ab" * 32}
    tampered = [*rows[:6], forged, *rows[6:]]  # shares row 6's number
    assert found(tampered) == [(Damage.INSERTED, ("trc_forged",), *ids(rows, 5, 6))]


def test_a_forged_row_with_a_computed_link_and_renumbering_is_inserted() -> None:
    rows = ledger()
    forged = forged_row()
    chained([forged], ChainLink(rows[5]["chain_seq"], rows[5]["chain_link"]))
    for row in rows[6:]:
        row["chain_seq"] += 1
    tampered = [*rows[:6], forged, *rows[6:]]
    assert found(tampered) == [(Damage.INSERTED, ("trc_forged",), *ids(rows, 5, 6))]


def test_a_forged_row_sorting_after_its_twin_is_inserted() -> None:
    rows = ledger()
    forged = forged_row()
    chained([forged], ChainLink(rows[4]["chain_seq"], rows[4]["chain_link"]))
    tampered = [*rows[:6], forged, *rows[6:]]  # same chain_seq as row 6, stored after it
    assert found(tampered) == [(Damage.INSERTED, ("trc_forged",), *ids(rows, 5, 6))]


def test_a_row_outside_the_chain_is_inserted() -> None:
    rows = ledger()
    tampered = [*rows[:6], forged_row(), *rows[6:]]
    report = verify_chain(tampered, (), JWKS)
    assert [(f.kind, f.trace_ids, f.before) for f in report.findings] == [
        (Damage.INSERTED, ("trc_forged",), rows[5]["trace_id"])
    ]


@pytest.mark.parametrize(
    ("a", "b"), [(5, 6), (3, 8), (0, 1), (10, 11)], ids=["adjacent", "apart", "first", "last"]
)
def test_swapped_rows_are_reordered(a: int, b: int) -> None:
    rows = ledger()
    rows[a]["chain_seq"], rows[b]["chain_seq"] = rows[b]["chain_seq"], rows[a]["chain_seq"]
    report = verify_chain(stored_order(rows), (), JWKS)
    assert {f.kind for f in report.findings} == {Damage.REORDERED}
    assert all(trace_id in "\n".join(report.lines()) for trace_id in ids(rows, a, b))


def test_a_swap_is_explained_by_the_row_out_of_place() -> None:
    rows = ledger()
    rows[5]["chain_seq"], rows[6]["chain_seq"] = rows[6]["chain_seq"], rows[5]["chain_seq"]
    assert verify_chain(stored_order(rows), (), JWKS).lines() == [
        f"reordered: {rows[5]['trace_id']} (seq 7): out of chain order; in the chain it comes "
        f"right after {rows[4]['trace_id']} (seq 5) (between {rows[6]['trace_id']} and "
        f"{rows[7]['trace_id']})"
    ]


def test_a_row_moved_far_away_is_the_one_reordered() -> None:
    rows = ledger(200)
    rows[10]["chain_seq"] = 201  # moved past the end
    assert found(rows) == [(Damage.REORDERED, ids(rows, 10), rows[-1]["trace_id"], None)]


def test_a_block_moved_and_renumbered_is_one_finding() -> None:
    rows = ledger(40)
    order = [*rows[:10], *rows[30:33], *rows[10:30], *rows[33:]]
    for seq, row in enumerate(order, 1):
        row["chain_seq"] = seq
    assert found(order) == [(Damage.REORDERED, ids(rows, 30, 31, 32), *ids(rows, 9, 10))]


def test_truncating_after_a_checkpoint_is_named() -> None:
    rows = ledger()
    checkpoints = (checkpoint_of(rows[4]), checkpoint_of(rows[-1]))
    report = verify_chain(rows[:9], checkpoints, JWKS)
    assert [(f.kind, f.before, f.after) for f in report.findings] == [
        (Damage.TRUNCATED, rows[8]["trace_id"], None)
    ]
    assert report.lines() == [
        f"truncated after checkpoint: the ledger ends at chain position 9; the checkpoint "
        f"signed 2025-11-01T12:26:40Z vouches for position 12 ({rows[-1]['trace_id']}): "
        f"positions 10..12 are missing (3 row(s)) (between {rows[8]['trace_id']} and the end)"
    ]


def test_a_rewritten_chain_is_caught_by_its_checkpoint() -> None:
    rows = ledger()
    checkpoint = checkpoint_of(rows[8])
    rows[3]["sovereignty_class"] = "global"
    chained(rows)  # every link recomputed after the edit
    assert found(rows) == []  # a chain alone cannot tell
    assert found(rows, (checkpoint,)) == [(Damage.EDITED, ids(rows, 8), *ids(rows, 7, 9))]


def test_a_row_deleted_under_a_checkpoint_is_named_once() -> None:
    rows = ledger()
    checkpoint = checkpoint_of(rows[-1])
    later = [ledger_row(13)]
    chained(later, ChainLink(12, rows[-1]["chain_link"]))  # the gateway went on writing
    tampered = [*rows[:-1], *later]
    assert found(tampered, (checkpoint,)) == [
        (Damage.DELETED, (), rows[-2]["trace_id"], later[0]["trace_id"])
    ]


def test_a_checkpoint_names_a_row_deleted_with_renumbering() -> None:
    rows = ledger()
    checkpoint = checkpoint_of(rows[6])
    tampered = [*rows[:6], *rows[7:]]
    for row in tampered[6:]:
        row["chain_seq"] -= 1
    assert [kind for kind, *_ in found(tampered, (checkpoint,))] == [Damage.EDITED, Damage.DELETED]


def test_a_forged_checkpoint_is_invalid() -> None:
    rows = ledger()
    forger = SigningKey.generate()
    head = ChainLink(rows[-1]["chain_seq"], rows[-1]["chain_link"], rows[-1]["trace_id"])
    forged = sign_checkpoint(head, forger, created_at=CHECKPOINT_AT)
    report = verify_chain(rows, (forged,), JWKS)
    assert [(f.kind, f.detail) for f in report.findings] == [
        (Damage.INVALID_CHECKPOINT, f"checkpoint #1: no key with kid {forger.kid} in the JWKS")
    ]


def test_each_finding_is_one_line_with_the_trace_ids_around_it() -> None:
    rows = ledger()
    tampered = copy.deepcopy(rows)
    tampered[2]["status"] = "completed" if rows[2]["status"] != "completed" else "failed"
    del tampered[7]
    lines = verify_chain(tampered, (), JWKS).lines()
    assert lines == [
        f"edited: {rows[2]['trace_id']} (seq 3): metadata does not match its chain_link "
        f"(between {rows[1]['trace_id']} and {rows[3]['trace_id']})",
        f"deleted: 1 row(s) missing (seq 8) (between {rows[6]['trace_id']} and {rows[8]['trace_id']})",
    ]


def test_damage_everywhere_stays_one_line_and_bounded() -> None:
    rows = ledger(300)
    for row in rows:
        row["retention"] = "P30D"
    report = verify_chain(rows, (), JWKS, search_budget=20_000)
    assert [(f.kind, len(f.trace_ids)) for f in report.findings] == [(Damage.EDITED, 300)]
    assert report.lines()[0].startswith(f"edited: 300 rows, {rows[0]['trace_id']} (seq 1) … ")
