"""SCIM PATCH (RFC 7644 §3.5.2): operations applied to a resource, without I/O.

An operation is `add`, `replace` or `remove` (any case: Entra ID sends
`Replace`), with an optional `path`:

    path = [schema-urn ":"] attr ["[" filter "]"] ["." subAttr]

Without a path, `add` and `replace` take an object whose keys are themselves
paths (Entra ID sends `{"name.givenName": …}` this way). A bracketed filter
picks the values of a multi-valued attribute it applies to (`emails[type eq
"work"].value`, `members[value eq "…"]`); an `add` or `replace` through an
equality filter nothing matches adds the value it names (what Entra ID expects
when it first sets a work e-mail). `remove` without a path is `noTarget`;
`remove` of a multi-valued attribute with a value removes the listed values
(Entra ID removes group members so). Names are matched case-insensitively. The
values themselves are not checked here: the resource's own rules are the
caller's (`llmeu.api.services.scim_service`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llmeu.errors import InvalidRequest
from llmeu.protocol.scim_filter import Compare, Filter, matches, parse_filter

ENTERPRISE_USER = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
_CORE = (
    "urn:ietf:params:scim:schemas:core:2.0:User",
    "urn:ietf:params:scim:schemas:core:2.0:Group",
)
_PATH = re.compile(r"^(?P<attr>[^\[\].]+)(?:\[(?P<filter>.*)\])?(?:\.(?P<sub>[^\[\].]+))?$")
_READ_ONLY = frozenset({"id", "meta", "schemas"})


def scim_error(message: str, scim_type: str, param: str = "Operations") -> InvalidRequest:
    return InvalidRequest(message, param=param, code=scim_type)


@dataclass(frozen=True, slots=True)
class Path:
    container: str | None
    """An extension schema's URN whose object holds the attribute; None: the resource."""
    attr: str
    value_filter: Filter | None
    sub: str | None


def parse_path(text: str) -> Path:
    container: str | None = None
    rest = text
    for core in _CORE:
        if rest.casefold().startswith(core.casefold() + ":"):
            rest = rest[len(core) + 1 :]
    if rest.casefold().startswith("urn:"):
        if rest.casefold().startswith(ENTERPRISE_USER.casefold() + ":"):
            container, rest = ENTERPRISE_USER, rest[len(ENTERPRISE_USER) + 1 :]
        elif rest.casefold() == ENTERPRISE_USER.casefold():
            return Path(None, ENTERPRISE_USER, None, None)
        else:
            container, _, rest = rest.rpartition(":")
    found = _PATH.match(rest)
    if found is None:
        raise scim_error(f"`{text}` is not an attribute path", "invalidPath", "path")
    if found["attr"].casefold() in _READ_ONLY:
        raise scim_error(f"`{found['attr']}` cannot be changed", "mutability", "path")
    value_filter = None
    if found["filter"] is not None:
        try:
            value_filter = parse_filter(found["filter"])
        except InvalidRequest as error:
            raise scim_error(f"`{text}`: {error.message}", "invalidPath", "path") from None
    return Path(container, found["attr"], value_filter, found["sub"])


def apply_patch(resource: Mapping[str, Any], operations: list[Any]) -> dict[str, Any]:
    """A copy of `resource` with every operation applied in order."""
    result = copy.deepcopy(dict(resource))
    if not operations:
        raise scim_error("a PATCH needs at least one operation", "invalidSyntax")
    for operation in operations:
        if not isinstance(operation, dict):
            raise scim_error("each operation is an object", "invalidSyntax")
        ops = {k.casefold(): v for k, v in operation.items()}
        op = ops.get("op")
        if not isinstance(op, str) or op.casefold() not in ("add", "replace", "remove"):
            raise scim_error(f"`op` must be add, replace or remove, not {op!r}", "invalidSyntax")
        path = ops.get("path")
        if path is not None and not isinstance(path, str):
            raise scim_error("`path` is a string", "invalidPath", "path")
        _apply(result, op.casefold(), path or None, ops.get("value"), "value" in ops)
    return result


def _apply(resource: dict[str, Any], op: str, path: str | None, value: Any, given: bool) -> None:
    if path is None:
        if op == "remove":
            raise scim_error("`remove` needs a `path`", "noTarget", "path")
        if not isinstance(value, dict):
            raise scim_error(f"`{op}` without a `path` takes an object", "invalidValue", "value")
        for name, item in value.items():
            if name.casefold() in _READ_ONLY:
                continue
            _apply(resource, op, name, item, True)
        return
    if op != "remove" and not given:
        raise scim_error(f"`{op}` needs a `value`", "invalidValue", "value")
    target = parse_path(path)
    holder: dict[str, Any] | None = resource
    if target.container is not None:
        holder = _child(resource, target.container, create=op != "remove")
    if holder is None:
        return
    if target.value_filter is not None:
        _apply_filtered(holder, op, target, value)
    elif target.sub is not None:
        parent = _child(holder, target.attr, create=op != "remove")
        if parent is not None:
            _set_or_remove(parent, op, target.sub, value)
    else:
        _set_or_remove(holder, op, target.attr, value)


def _set_or_remove(holder: dict[str, Any], op: str, name: str, value: Any) -> None:
    key = _key(holder, name) or name
    current = holder.get(key)
    if op == "remove":
        if isinstance(current, list) and isinstance(value, list):
            holder[key] = [item for item in current if not any(_same(item, v) for v in value)]
        else:
            holder.pop(key, None)
    elif isinstance(current, list) and op == "add":
        added = value if isinstance(value, list) else [value]
        holder[key] = current + [v for v in added if not any(_same(c, v) for c in current)]
    elif isinstance(current, dict) and isinstance(value, dict):
        for sub, item in value.items():
            _set_or_remove(current, op, sub, item)
    else:
        holder[key] = value


def _apply_filtered(holder: dict[str, Any], op: str, target: Path, value: Any) -> None:
    key = _key(holder, target.attr) or target.attr
    items = holder.get(key)
    items = items if isinstance(items, list) else []
    assert target.value_filter is not None
    picked = [i for i, item in enumerate(items) if isinstance(item, dict)
              and matches(target.value_filter, item)]  # fmt: skip
    if op == "remove":
        if target.sub is None:
            items = [item for i, item in enumerate(items) if i not in picked]
        else:
            for i in picked:
                items[i].pop(_key(items[i], target.sub) or target.sub, None)
    elif picked:
        for i in picked:
            if target.sub is not None:
                items[i][_key(items[i], target.sub) or target.sub] = value
            elif isinstance(value, dict):
                items[i].update(value)
            else:
                raise scim_error("a filtered value is replaced by an object", "invalidValue")
    else:
        items.append(_new_item(target, value))
    holder[key] = items


def _new_item(target: Path, value: Any) -> dict[str, Any]:
    """The value an `add` or `replace` through an unmatched equality filter adds."""
    condition = target.value_filter
    if not isinstance(condition, Compare) or condition.op != "eq" or "." in condition.path:
        raise scim_error("no value matches the path's filter", "noTarget", "path")
    item: dict[str, Any] = {condition.path: condition.value}
    if target.sub is not None:
        item[target.sub] = value
    elif isinstance(value, dict):
        item.update(value)
    else:
        raise scim_error("a filtered value is replaced by an object", "invalidValue")
    return item


def _child(holder: dict[str, Any], name: str, *, create: bool) -> dict[str, Any] | None:
    key = _key(holder, name)
    child = holder.get(key) if key is not None else None
    if isinstance(child, dict):
        return child
    if not create:
        return None
    holder[key or name] = child = {}
    return child


def _key(holder: dict[str, Any], name: str) -> str | None:
    return next((k for k in holder if k.casefold() == name.casefold()), None)


def _same(have: Any, want: Any) -> bool:
    """One value of a multi-valued attribute is another: equal, or of the same `value`."""
    if isinstance(have, dict) and isinstance(want, dict) and "value" in want:
        return bool(have.get("value") == want["value"])
    return bool(have == want)
