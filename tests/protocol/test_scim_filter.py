"""SCIM filters (RFC 7644 §3.4.2.2): parsed, matched, and refused as `invalidFilter`."""

from __future__ import annotations

from typing import Any

import pytest

from llmeu.errors import InvalidRequest
from llmeu.protocol.scim_filter import Compare, equals, matches, parse_filter

USER: dict[str, Any] = {
    "id": "2819c223",
    "externalId": "Ext-1",
    "userName": "Bjensen@example.com",
    "active": True,
    "name": {"familyName": "Jensen", "givenName": "Barbara"},
    "emails": [{"type": "work", "value": "bjensen@example.com"},
               {"type": "home", "value": "babs@jensen.org"}],
    "loginCount": 7,
}  # fmt: skip

MATCHES = [
    ('userName eq "bjensen@example.com"', True, "user name case-insensitive"),
    ('USERNAME EQ "BJENSEN@EXAMPLE.COM"', True, "names and operators in any case"),
    ('urn:ietf:params:scim:schemas:core:2.0:User:userName eq "bjensen@example.com"', True, "urn"),
    ('externalId eq "ext-1"', False, "externalId is case-exact"),
    ('externalId eq "Ext-1"', True, "externalId equal"),
    ('id eq "2819C223"', False, "id is case-exact"),
    ('userName ne "someone@else"', True, "ne"),
    ('name.familyName sw "jen"', True, "sub-attribute sw"),
    ('userName ew "@EXAMPLE.com"', True, "ew"),
    ('emails.value co "jensen.org"', True, "any value of a multi-valued attribute"),
    ('emails.type eq "other"', False, "no value matches"),
    ("title pr", False, "absent attribute is not present"),
    ("name pr", True, "complex attribute present"),
    ("active eq true", True, "boolean"),
    ("active eq false", False, "boolean false"),
    ("loginCount gt 5 and loginCount le 7", True, "numbers"),
    ('loginCount gt "5"', False, "number against string"),
    ('not (userName eq "bjensen@example.com")', False, "not"),
    ('userName eq "x" or name.givenName eq "barbara"', True, "or"),
    ('userName eq "x" or active eq true and title pr', False, "and binds tighter than or"),
    ('(userName eq "x" or active eq true) and name pr', True, "parentheses"),
    ('userName eq "with \\"quotes\\""', False, "escaped quotes in a string"),
]


@pytest.mark.parametrize(("text", "expected"), [m[:2] for m in MATCHES],
                         ids=[m[2] for m in MATCHES])  # fmt: skip
def test_a_filter_matches_as_scim_says(text: str, expected: bool) -> None:
    assert matches(parse_filter(text), USER) is expected


REFUSED = [
    ("", "empty"),
    ("userName eq", "no value"),
    ('userName like "b"', "unknown operator"),
    ("userName eq bjensen", "unquoted string"),
    ('(userName eq "b"', "unclosed parenthesis"),
    ('userName eq "b")', "a stray parenthesis"),
    ('userName eq "b" extra', "trailing words"),
    ('emails[type eq "work"] pr', "value paths are for PATCH only"),
    ('"userName" eq "b"', "a string where the attribute goes"),
    ('userName eq "unterminated', "an unterminated string"),
    ('userName eq {"a": 1}', "an object is no value"),
]


@pytest.mark.parametrize("text", [r[0] for r in REFUSED], ids=[r[1] for r in REFUSED])
def test_a_malformed_filter_is_invalid_filter(text: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse_filter(text)
    assert refused.value.code == "invalidFilter" and refused.value.param == "filter"


def test_what_entra_and_okta_send_is_named_for_an_index_lookup() -> None:
    parsed = parse_filter('userName eq "Alice@Example.org"')
    assert parsed == Compare("userName", "eq", "Alice@Example.org")
    assert equals(parsed, "username") == "Alice@Example.org"
    assert equals(parsed, "externalId") is None
    assert equals(parse_filter('userName eq "a" and active eq true'), "userName") is None
    assert equals(parse_filter('userName sw "a"'), "userName") is None
