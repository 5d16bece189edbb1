"""SCIM PATCH (RFC 7644 §3.5.2), including what Entra ID and Okta actually send."""

from __future__ import annotations

from typing import Any

import pytest

from llmeu.errors import InvalidRequest
from llmeu.protocol.scim_patch import ENTERPRISE_USER, apply_patch
from llmeu.protocol.scim_wire import read_user

USER: dict[str, Any] = {
    "userName": "alice@example.org",
    "active": True,
    "name": {"givenName": "Alice", "familyName": "Auditor"},
    "emails": [{"type": "work", "value": "alice@example.org", "primary": True}],
}
GROUP: dict[str, Any] = {"displayName": "auditors", "members": [{"value": "u1"}, {"value": "u2"}]}

CHANGES = [
    (USER, [{"op": "Replace", "path": "active", "value": "False"}],
     {**USER, "active": "False"}, "entra: Replace with a string boolean, read later"),
    (USER, [{"op": "replace", "value": {"active": False}}],
     {**USER, "active": False}, "okta: replace without a path"),
    (USER, [{"op": "Add", "value": {"name.givenName": "Ally", "displayName": "Ally A"}}],
     {**USER, "name": {"givenName": "Ally", "familyName": "Auditor"}, "displayName": "Ally A"},
     "entra: dotted paths as the keys of a path-less value"),
    (USER, [{"op": "replace", "path": "emails[type eq \"work\"].value", "value": "a@new.org"}],
     {**USER, "emails": [{"type": "work", "value": "a@new.org", "primary": True}]},
     "a filtered sub-attribute"),
    (USER, [{"op": "add", "path": "emails[type eq \"home\"].value", "value": "a@home.org"}],
     {**USER, "emails": [*USER["emails"], {"type": "home", "value": "a@home.org"}]},
     "a filter nothing matches adds the value it names"),
    (USER, [{"op": "remove", "path": "emails[type eq \"work\"]"}],
     {**USER, "emails": []}, "remove the values a filter picks"),
    (USER, [{"op": "remove", "path": "name.givenName"}],
     {**USER, "name": {"familyName": "Auditor"}}, "remove a sub-attribute"),
    (USER, [{"op": "add", "path": f"{ENTERPRISE_USER}:department", "value": "Audit"}],
     {**USER, ENTERPRISE_USER: {"department": "Audit"}}, "an extension's attribute"),
    (USER, [{"op": "replace", "path": "urn:ietf:params:scim:schemas:core:2.0:User:userName",
             "value": "alice@new.org"}],
     {**USER, "userName": "alice@new.org"}, "the core schema's urn prefix"),
    (USER, [{"op": "replace", "path": "NAME.FAMILYNAME", "value": "A"}],
     {**USER, "name": {"givenName": "Alice", "familyName": "A"}}, "names in any case"),
    (GROUP, [{"op": "Add", "path": "members", "value": [{"value": "u3"}, {"value": "u1"}]}],
     {**GROUP, "members": [{"value": "u1"}, {"value": "u2"}, {"value": "u3"}]},
     "add members, a present one once"),
    (GROUP, [{"op": "Remove", "path": "members", "value": [{"value": "u1"}]}],
     {**GROUP, "members": [{"value": "u2"}]}, "entra: remove members by value"),
    (GROUP, [{"op": "remove", "path": "members[value eq \"u2\"]"}],
     {**GROUP, "members": [{"value": "u1"}]}, "okta: remove a member by filter"),
    (GROUP, [{"op": "replace", "path": "members", "value": [{"value": "u9"}]}],
     {**GROUP, "members": [{"value": "u9"}]}, "replace every member"),
    (GROUP, [{"op": "replace", "path": "displayName", "value": "auditors-eu"},
             {"op": "remove", "path": "members"}],
     {"displayName": "auditors-eu"}, "several operations in order"),
]  # fmt: skip


@pytest.mark.parametrize(("before", "operations", "after"), [c[:3] for c in CHANGES],
                         ids=[c[3] for c in CHANGES])  # fmt: skip
def test_operations_apply_in_order(
    before: dict[str, Any], operations: list[Any], after: dict[str, Any]
) -> None:
    assert apply_patch(before, operations) == after
    assert before == (USER if "userName" in before else GROUP), "the input is not changed"


REFUSED = [
    ([], "invalidSyntax", "no operations"),
    (["replace"], "invalidSyntax", "an operation that is not an object"),
    ([{"op": "merge", "path": "active", "value": True}], "invalidSyntax", "unknown op"),
    ([{"op": "remove"}], "noTarget", "remove without a path"),
    ([{"op": "replace", "path": "active"}], "invalidValue", "replace without a value"),
    ([{"op": "replace", "value": "x"}], "invalidValue", "a path-less value that is no object"),
    ([{"op": "replace", "path": "id", "value": "x"}], "mutability", "the id is the server's"),
    ([{"op": "replace", "path": "emails[type eq]", "value": "x"}], "invalidPath", "bad filter"),
    ([{"op": "replace", "path": "a..b", "value": "x"}], "invalidPath", "not a path"),
    ([{"op": "add", "path": "emails[value co \"zzz\"].type", "value": "x"}],
     "noTarget", "an unmatched filter that names no value"),
]  # fmt: skip


@pytest.mark.parametrize(("operations", "scim_type"), [r[:2] for r in REFUSED],
                         ids=[r[2] for r in REFUSED])  # fmt: skip
def test_a_bad_operation_is_refused_with_its_scim_type(
    operations: list[Any], scim_type: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        apply_patch(USER, operations)
    assert refused.value.code == scim_type


BOOLEANS = [(True, True), (False, False), ("True", True), ("False", False), ("false", False)]


@pytest.mark.parametrize(("sent", "read"), BOOLEANS, ids=[repr(b[0]) for b in BOOLEANS])
def test_active_is_read_as_a_boolean_even_as_entras_string(sent: Any, read: bool) -> None:
    fields = read_user({**USER, "active": sent})
    assert fields.active is read and fields.attributes["active"] is read


def test_a_user_needs_a_user_name_and_typed_fields() -> None:
    for body in ({"active": True}, {"userName": ""}, {"userName": 7},
                 {"userName": "a", "active": "yes"}, {"userName": "a", "externalId": 3}):  # fmt: skip
        with pytest.raises(InvalidRequest) as refused:
            read_user(body)
        assert refused.value.code == "invalidValue"
    fields = read_user({"USERNAME": "b", "name": {"formatted": "B B"}, "id": "x", "meta": {}})
    assert (fields.user_name, fields.display_name, fields.active) == ("b", "B B", True)
    assert "id" not in fields.attributes and fields.attributes["userName"] == "b"
    assert "password" not in read_user({"userName": "c", "password": "hunter2"}).attributes
