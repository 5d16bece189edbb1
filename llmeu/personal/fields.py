"""Every text a request carries, found by walking its model: what is forwarded is read.

A request is a tree of msgspec structs, lists, JSON objects and strings. The
walk visits every string in it — a message's text and its `name`, a tool's
description and every string of its parameters' schema, `stop`, `user`,
`metadata` — with its path (`tools[0].function.parameters.properties.iban
.description`), so a field added to a request model is read without anyone
listing it. One walk serves both ends: `edit(path, text)` sees each string and
returns the string to keep (itself for a scan, masked for a masking), and the
walk rebuilds only what changed.

A JSON object's key is part of its path when it is a plain name (letters,
`_`, `$`, `-`: nothing a detector finds), else the key is scanned like any
text, at `….<key N>`, and its value sits at `….<value N>`, so a path never
shows what a key says. An object's keys are read before its values. Image,
audio and file parts, and any value the walk cannot read as text (bytes, raw
JSON), are reported as not scanned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, TypeVar

from msgspec import Struct, UnsetType, inspect
from msgspec.structs import replace

from llmeu.calls.request import AudioPart, FilePart, ImagePart

Edit = Callable[[str, str], str]
T = TypeVar("T")

_MEDIA = (ImagePart, AudioPart, FilePart)
_NAME = re.compile(r"[A-Za-z_$][A-Za-z_$-]{0,63}\Z")


def texts(
    value: object, path: str = "", skip: frozenset[str] = frozenset()
) -> tuple[list[tuple[str, str]], list[str]]:
    """The `(path, text)` of every string in `value` (its fields in `skip` left out, when it
    is a struct), and the paths of the parts that cannot be read as text."""
    parts: list[tuple[str, str]] = []

    def collect(where: str, text: str) -> str:
        parts.append((where, text))
        return text

    unscanned: list[str] = []
    _Walk(collect, unscanned).value(value, path, skip)
    return parts, unscanned


def rewritten(value: T, edit: Edit, path: str = "", skip: frozenset[str] = frozenset()) -> T:
    """`value` with every string replaced by `edit(path, string)`; the same object where
    nothing changed."""
    changed: T = _Walk(edit, []).value(value, path, skip)
    return changed


class _Walk:
    __slots__ = ("edit", "unscanned")

    def __init__(self, edit: Edit, unscanned: list[str]) -> None:
        self.edit = edit
        self.unscanned = unscanned

    def value(self, value: Any, path: str, skip: frozenset[str] = frozenset()) -> Any:
        if isinstance(value, str):
            return self.edit(path, value)
        if isinstance(value, Struct):
            return self.struct(value, path, skip)
        if isinstance(value, list | tuple):
            items = [self.value(item, f"{path}[{i}]") for i, item in enumerate(value)]
            if _same(items, value):
                return value
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, dict):
            return self.mapping(value, path)
        if value is None or isinstance(value, bool | int | float | UnsetType):
            return value
        self.unscanned.append(path)
        return value

    def struct(self, value: Struct, path: str, skip: frozenset[str]) -> Any:
        if isinstance(value, _MEDIA):
            self.unscanned.append(path)
            return value
        changes = {}
        for name, wire in _text_fields(type(value)):
            if name in skip:
                continue
            old = getattr(value, name)
            new = self.value(old, f"{path}.{wire}" if path else wire)
            if new is not old:
                changes[name] = new
        return replace(value, **changes) if changes else value

    def mapping(self, value: dict[Any, Any], path: str) -> dict[Any, Any]:
        """Keys first, then values: values next to each other stay next to each other for
        the scan (a value split across two of them is found whatever their keys)."""
        plain = {key: isinstance(key, str) and _NAME.match(key) is not None for key in value}
        keys = [
            key if plain[key] else self.value(key, f"{path}.<key {i}>")
            for i, key in enumerate(value)
        ]
        items = [
            self.value(item, f"{path}.{key}" if plain[key] else f"{path}.<value {i}>")
            for i, (key, item) in enumerate(value.items())
        ]
        if _same(keys, value) and _same(items, value.values()):
            return value
        return dict(zip(keys, items, strict=True))


def _same(new: Iterable[Any], old: Iterable[Any]) -> bool:
    return all(a is b for a, b in zip(new, old, strict=True))


@cache
def _text_fields(kind: type[Struct]) -> tuple[tuple[str, str], ...]:
    """The fields of `kind` whose type may hold text, as (attribute, name on the wire):
    not numbers, booleans, dates or a fixed vocabulary (`Literal`, an enum)."""
    info = inspect.type_info(kind)
    assert isinstance(info, inspect.StructType)
    return tuple((f.name, f.encode_name) for f in info.fields if _may_hold_text(f.type))


def _may_hold_text(kind: inspect.Type) -> bool:
    if isinstance(kind, inspect.UnionType):
        return any(_may_hold_text(member) for member in kind.types)
    return not isinstance(kind, _NOT_TEXT)


_NOT_TEXT = (
    inspect.IntType,
    inspect.FloatType,
    inspect.BoolType,
    inspect.NoneType,
    inspect.LiteralType,
    inspect.EnumType,
    inspect.DateTimeType,
    inspect.DateType,
    inspect.TimeType,
    inspect.TimeDeltaType,
    inspect.UUIDType,
    inspect.DecimalType,
)
