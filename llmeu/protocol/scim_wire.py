"""SCIM 2.0's wire (RFC 7643, 7644): schema URNs, a user's core attributes, list answers.

What the gateway reads of a User: `userName` (required, unique, compared
case-insensitively), `active` (a boolean; Entra ID may send the strings "True"
and "False", read as booleans), `externalId` and `displayName` (or
`name.formatted`). Every other attribute is kept as sent and given back, but a
`password`, which is never stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from llmeu.errors import InvalidRequest, NotFound
from llmeu.protocol.scim_patch import ENTERPRISE_USER

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
MEDIA_TYPE = "application/scim+json"
MAX_COUNT = 200
SCIM_TYPES = frozenset({
    "invalidFilter", "tooMany", "uniqueness", "mutability", "invalidSyntax", "invalidPath",
    "noTarget", "invalidValue", "invalidVers", "sensitive",
})  # fmt: skip
_SERVER_SET = frozenset({"id", "meta", "schemas"})
_NEVER_KEPT = frozenset({"password"})
"""Sent by a provider that syncs passwords (Okta may): never stored, never given back."""


def invalid_value(message: str, param: str | None = None) -> InvalidRequest:
    return InvalidRequest(message, param=param, code="invalidValue")


def no_such(kind: str, resource_id: str) -> NotFound:
    """A `kind` (`user`, `group`) of that id is not in the directory."""
    return NotFound(f"no {kind} `{resource_id}`", param="id")


def meta(resource_type: str, created_at: float, updated_at: float, location: str) -> dict[str, Any]:
    """A resource's `meta` (RFC 7643 §3.1), its times in UTC to the second."""
    return {
        "resourceType": resource_type,
        "created": _iso(created_at),
        "lastModified": _iso(updated_at),
        "location": location,
    }


@dataclass(frozen=True, slots=True)
class UserFields:
    """What the gateway reads of a User resource, and the resource to keep."""

    user_name: str
    active: bool
    external_id: str | None
    display_name: str | None
    attributes: dict[str, Any]


def read_user(resource: dict[str, Any]) -> UserFields:
    """The User's fields, from a POST or PUT body or a patched resource; 400 invalidValue
    when `userName` is missing or a field has the wrong type."""
    dropped = _SERVER_SET | _NEVER_KEPT
    attributes = {k: v for k, v in resource.items() if k.casefold() not in dropped}
    user_name = _take(attributes, "userName")
    if not isinstance(user_name, str) or not user_name.strip() or len(user_name) > 256:
        raise invalid_value("`userName` is required: a string of at most 256 characters",
                            "userName")  # fmt: skip
    active = as_boolean(_take(attributes, "active", True), "active")
    external_id = _optional_string(_take(attributes, "externalId"), "externalId")
    display_name = _optional_string(_take(attributes, "displayName"), "displayName")
    name = attributes.get("name")
    if display_name is None and isinstance(name, dict):
        display_name = _optional_string(name.get("formatted"), "name.formatted")
    attributes.update(userName=user_name, active=active)
    if external_id is not None:
        attributes["externalId"] = external_id
    if display_name is not None:
        attributes["displayName"] = display_name
    return UserFields(user_name, active, external_id, display_name, attributes)


def as_boolean(value: Any, param: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.casefold() in ("true", "false"):
        return value.casefold() == "true"
    raise invalid_value(f"`{param}` is a boolean", param)


def user_schemas(attributes: dict[str, Any]) -> list[str]:
    return [USER, *(s for s in (ENTERPRISE_USER,) if s in attributes)]


def list_response(resources: list[dict[str, Any]], total: int, start: int) -> dict[str, Any]:
    return {
        "schemas": [LIST],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }


def paging(query: dict[str, str]) -> tuple[int, int]:
    """`startIndex` (1-based; less than 1 is 1) and `count` (0 to `MAX_COUNT`; default that)."""
    start = _integer(query.get("startIndex"), "startIndex", 1)
    count = _integer(query.get("count"), "count", MAX_COUNT)
    return max(start, 1), min(max(count, 0), MAX_COUNT)


def select(resource: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
    """The resource with only `attributes`, or without `excludedAttributes` (top-level names,
    comma-separated); `id` and `schemas` always stay."""
    wanted = _names(query.get("attributes"))
    if wanted:
        keep = wanted | {"id", "schemas", "meta"}
        return {k: v for k, v in resource.items() if k.casefold() in keep}
    dropped = _names(query.get("excludedAttributes")) - {"id", "schemas"}
    return {k: v for k, v in resource.items() if k.casefold() not in dropped}


def _names(value: str | None) -> set[str]:
    return {n.strip().casefold() for n in (value or "").split(",") if n.strip()}


def _take(attributes: dict[str, Any], name: str, default: Any = None) -> Any:
    """The attribute of that name in any case, removed (the caller puts it back canonically)."""
    key = next((k for k in attributes if k.casefold() == name.casefold()), None)
    return default if key is None else attributes.pop(key)


def _optional_string(value: Any, param: str) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    raise invalid_value(f"`{param}` is a string", param)


def _integer(value: str | None, param: str, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise invalid_value(f"`{param}` is an integer", param) from None


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
