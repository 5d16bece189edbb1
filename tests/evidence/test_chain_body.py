"""`chain_body`, the fast path of every chain link, is `canonical_json(chain_metadata(row))`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmeu.evidence.chain import CHAINED_COLUMNS, chain_body, chain_metadata
from llmeu.evidence.jcs import FlatObject, canonical_json

ROWS: dict[str, dict[str, Any]] = {
    "completed call": {
        "trace_id": "trc_1", "key_id": "k", "route": "chat.completions", "stream": 1,
        "status": "completed", "received_at": 1761998400.123456, "first_token_at": 1e21,
        "finished_at": 1761998401.5, "ttft_ms": 222.222, "input_tokens": 12,
        "output_tokens": 0, "cost_eur": 0.0000158, "tokens_estimated": 0,
        "attempts": json.dumps([{"endpoint_id": "é", "error": "\u2028\x00\"\\"}]),
        "excluded": "[]", "prompt": "never chained", "completion": "never chained",
    },
    "nulls and odd text": {
        "trace_id": "trc_2", "key_id": "ключ", "route": "embeddings", "stream": 0,
        "status": "rejected", "received_at": 5e-7, "error_message": "😀\t\n\x1f",
        "cost_eur": None, "model_used": None, "http_status": 403, "tokens_estimated": True,
    },
    "empty": {},
}  # fmt: skip


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_chain_body_is_the_jcs_of_the_chained_metadata(row: dict[str, Any]) -> None:
    assert chain_body(row) == canonical_json(chain_metadata(row))


def test_flat_object_member_order_is_jcs_order() -> None:
    names = list(reversed(CHAINED_COLUMNS))
    values = {name: n for n, name in enumerate(names)}
    assert FlatObject(names).encode(values) == canonical_json(values)
    with pytest.raises(ValueError, match="ASCII"):
        FlatObject(["é"])
    with pytest.raises(ValueError, match="surrogate"):
        FlatObject(["a"]).encode({"a": "\ud800"})


_SCALAR_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(1e-9, 1e22) | st.floats(-1e22, -1e-9),  # both sides of the positional range
    st.text(),
    st.text(st.characters(categories=["Cc", "Cs", "Zl", "So"])),  # controls, lone surrogates
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.sampled_from(CHAINED_COLUMNS), _SCALAR_VALUES))
def test_flat_object_is_canonical_json_of_its_non_null_members(row: dict[str, Any]) -> None:
    present = {name: value for name, value in row.items() if value is not None}
    assert _outcome(FlatObject(CHAINED_COLUMNS).encode, row) == _outcome(canonical_json, present)


def _outcome(encode: Any, value: dict[str, Any]) -> bytes | str:
    try:
        return bytes(encode(value))
    except ValueError:
        return "refused"


@pytest.mark.parametrize("value", [2**53, -(2**53), float("nan"), float("inf"), "\udcff"])
def test_flat_object_refuses_what_jcs_cannot_write(value: Any) -> None:
    with pytest.raises(ValueError, match=r"JSON number|JCS"):
        FlatObject(["a"]).encode({"a": value})
