"""The admin event's digest and the verifier's checks of events, without a database."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest

from llmeu.api.services.admin_log import role_of
from llmeu.evidence.admin_events import (
    ADMIN_ROUTE,
    AdminEvent,
    check_events,
    name_events,
    object_digest,
)
from llmeu.evidence.diagnosis import Damage, Finding
from llmeu.evidence.jcs import canonical_json
from llmeu.ledger.api_keys import ApiKey

EVENT = AdminEvent("adm_1", 1_700_000_000.25, "admin", "admin", "key.create", "k1", None,
                   object_digest({"id": "k1"}), "192.0.2.7")  # fmt: skip


def test_the_digest_covers_every_field_and_the_version() -> None:
    document = EVENT.document()
    assert document["event_version"] == 1
    assert EVENT.digest() == hashlib.sha256(canonical_json(document)).hexdigest()
    for field in ("at", "actor", "role", "action", "target", "before_sha256", "source"):
        changed = dataclasses.replace(EVENT, **{field: "other" if field != "at" else 1.0})
        assert changed.digest() != EVENT.digest(), field


def test_an_object_digest_is_of_its_canonical_json() -> None:
    assert object_digest(None) is None
    assert object_digest({"b": 1, "a": [1.0]}) == hashlib.sha256(b'{"a":[1],"b":1}').hexdigest()


def chained(event: AdminEvent, seq: int = 2, **row: Any) -> dict[str, Any]:
    return {"trace_id": event.trace_id, "route": ADMIN_ROUTE, "chain_seq": seq,
            "request_model": event.action, "request_sha256": event.digest(), **row}  # fmt: skip


def stored(event: AdminEvent, **changes: Any) -> dict[str, Any]:
    return {**dataclasses.asdict(event), **changes}


CALL = {"trace_id": "trc_1", "route": "/v1/chat/completions", "chain_seq": 1}


@pytest.mark.parametrize(
    ("rows", "events", "expected"),
    [
        ([CALL, chained(EVENT)], [stored(EVENT)], []),
        ([CALL, chained(EVENT)], [stored(EVENT, actor="k9")],
         [(Damage.EDITED, "admin event adm_1 (seq 2, key.create): its record")]),
        ([CALL, chained(EVENT)], [],
         [(Damage.DELETED, "admin event adm_1 (seq 2, key.create): chained, but its record")]),
        ([CALL], [stored(EVENT)],
         [(Damage.DELETED, "admin event adm_1 (key.create by admin): in admin_events")]),
    ],
    ids=["intact", "record-edited", "record-deleted", "row-deleted"],
)  # fmt: skip
def test_check_events(
    rows: list[dict[str, Any]], events: list[dict[str, Any]], expected: list[tuple[Damage, str]]
) -> None:
    findings = check_events(rows, events)
    assert [(f.kind, f.detail[: len(d)]) for f, (_, d) in zip(findings, expected, strict=True)] == (
        expected
    )


def test_chain_findings_name_the_event_and_its_action() -> None:
    findings = [
        Finding(Damage.REORDERED, "adm_1 (seq 7): out of chain order", ("adm_1",)),
        Finding(Damage.EDITED, "trc_1 (seq 1): metadata does not match", ("trc_1",)),
    ]
    named = name_events(findings, {"adm_1": "key.create"})
    assert named[0].detail.endswith("[admin event adm_1: key.create]")
    assert named[1] == findings[1]


def test_the_role_of_a_key() -> None:
    key = ApiKey(key_id="k1", name="", secret_hash="", policy_id="p", is_admin=False,
                 created_at=0.0)  # fmt: skip
    assert role_of(key) == "member"
    assert role_of(dataclasses.replace(key, is_admin=True)) == "admin"
    assert role_of(dataclasses.replace(key, role="auditor")) == "auditor"
