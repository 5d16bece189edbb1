"""The walk over a request model: every string with its path, and only what changed rebuilt."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from llmeu.calls.request import ChatRequest
from llmeu.personal.fields import rewritten, texts


class Inner(Struct):
    note: str
    count: int = 0


class Model(Struct, rename={"wire": "on_the_wire"}):
    kind: Literal["a", "b"]
    wire: str
    inner: Inner
    items: list[str | Inner]
    schema: dict[str, Any]
    pair: tuple[str, ...] = ()
    blob: bytes | UnsetType = UNSET
    raw: Raw | UnsetType = UNSET
    unset: str | UnsetType = UNSET


MODEL = Model(
    kind="a",
    wire="w",
    inner=Inner("n", 3),
    items=["i0", Inner("i1")],
    schema={"type": "object", "$defs": {"x": "d"}, "field2": "v2", "a@b.eu": ["k"]},
    pair=("p0", "p1"),
)


def test_every_string_has_its_path_and_fixed_vocabularies_are_left_out() -> None:
    parts, unscanned = texts(MODEL)
    assert parts == [
        ("on_the_wire", "w"),
        ("inner.note", "n"),
        ("items[0]", "i0"),
        ("items[1].note", "i1"),
        ("schema.<key 2>", "field2"),  # keys that are not plain names, first
        ("schema.<key 3>", "a@b.eu"),
        ("schema.type", "object"),
        ("schema.$defs.x", "d"),
        ("schema.<value 2>", "v2"),
        ("schema.<value 3>[0]", "k"),
        ("pair[0]", "p0"),
        ("pair[1]", "p1"),
    ]
    assert unscanned == []


def test_what_cannot_be_read_as_text_is_reported_not_scanned() -> None:
    opaque = msgspec.structs.replace(MODEL, blob=b"NL91", raw=Raw(b'"NL91"'))
    assert texts(opaque)[1] == ["blob", "raw"]
    chat = msgspec.json.decode(
        b'{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "t"},'
        b' {"type": "image_url", "image_url": {"url": "https://x/NL91"}}]}]}',
        type=ChatRequest,
    )
    parts, unscanned = texts(chat, skip=frozenset({"model"}))
    assert parts == [("messages[0].content[0].text", "t")]
    assert unscanned == ["messages[0].content[1]"]


def test_a_rewrite_changes_every_string_and_rebuilds_only_what_changed() -> None:
    upper = rewritten(MODEL, lambda path, text: text.upper())
    assert upper.wire == "W" and upper.inner == Inner("N", 3) and upper.items == ["I0", Inner("I1")]
    assert upper.schema == {"type": "OBJECT", "$defs": {"x": "D"}, "FIELD2": "V2", "A@B.EU": ["K"]}
    assert upper.pair == ("P0", "P1") and upper.kind == "a"
    assert rewritten(MODEL, lambda path, text: text) is MODEL
    only_inner = rewritten(MODEL, lambda path, text: "x" if path == "inner.note" else text)
    assert only_inner.inner.note == "x" and only_inner.schema is MODEL.schema


def test_a_skipped_field_is_neither_read_nor_rewritten() -> None:
    skip = frozenset({"wire", "schema"})
    assert [path for path, _ in texts(MODEL, skip=skip)[0]][:2] == ["inner.note", "items[0]"]
    assert rewritten(MODEL, lambda path, text: "x", skip=skip).wire == "w"
