"""Request-level narrowing: a request may make its key's policy stricter, never looser.

Every widening is refused (403 `policy_widening`) naming the field that
widened; the same narrowing comes from the `llmeu` body field or from the
`x-llmeu-policy` header, as a policy id or a JSON object.
"""

from __future__ import annotations

from typing import Any

import pytest

from llmeu.api.services.policies import PolicyBook
from llmeu.calls.request import RoutingRequest
from llmeu.errors import ApiError, InvalidRequest, PermissionDenied
from llmeu.routing.builtin import EU, EU_STRICT, OPEN
from llmeu.routing.policy import Narrowing, Policy, narrow
from tests.routing.factories import policy

FR_ONLY = policy("fr-only", countries=["FR"])
SCALEWAY_ONLY = policy("scaleway-only", providers=["scaleway"])
NO_FALLBACK = policy("no-fallback", fallback=False)
STORES = policy("stores", store_content="P1D")
POLICIES = {
    p.policy_id: p for p in (EU_STRICT, EU, OPEN, FR_ONLY, SCALEWAY_ONLY, NO_FALLBACK, STORES)
}

# (base, stricter, the field in which `stricter` widens `base`, or None)
WIDENING = [
    pytest.param(EU, EU_STRICT, None, id="eu-strict-narrows-eu"),
    pytest.param(OPEN, EU, None, id="eu-narrows-open"),
    pytest.param(EU_STRICT, EU_STRICT, None, id="same-policy"),
    pytest.param(EU_STRICT, EU, "allow_classes", id="eu-widens-classes"),
    pytest.param(EU_STRICT, OPEN, "allow_classes", id="open-widens-classes"),
    pytest.param(EU_STRICT, FR_ONLY, None, id="country-list-narrows-any"),
    pytest.param(FR_ONLY, EU_STRICT, "allow_countries", id="any-country-widens-a-list"),
    pytest.param(FR_ONLY, policy(countries=["FR", "DE"]), "allow_countries", id="more-countries"),
    pytest.param(SCALEWAY_ONLY, EU_STRICT, "allow_providers", id="any-provider-widens-a-list"),
    pytest.param(SCALEWAY_ONLY, policy(providers=["ionos"]), "allow_providers", id="other-provider"),
    pytest.param(policy(max_retention="P1D"), policy(max_retention="P2D"), "max_retention",
                 id="longer-retention"),
    pytest.param(EU_STRICT, STORES, "store_content", id="gateway-stores-longer"),
    pytest.param(NO_FALLBACK, EU_STRICT, "fallback", id="fallback-where-base-has-none"),
    pytest.param(EU_STRICT, NO_FALLBACK, None, id="no-fallback-narrows"),
]  # fmt: skip


@pytest.mark.parametrize(("base", "stricter", "field"), WIDENING)
def test_widening_field_names_the_first_looser_field(
    base: Policy, stricter: Policy, field: str | None
) -> None:
    assert base.widening_field(stricter) == field


# (base, narrowing, expected: a check on the result, or (error class, param))
NARROWED = [
    pytest.param(EU, Narrowing(policy_id="eu-strict"), lambda p: p is EU_STRICT, id="named-stricter"),
    pytest.param(EU_STRICT, Narrowing(policy_id="eu-strict"), lambda p: p is EU_STRICT,
                 id="named-same"),
    pytest.param(EU, Narrowing(allow_classes=("on_premise",)),
                 lambda p: p.allow_classes == {"on_premise"} and p.policy_id == "eu", id="classes"),
    pytest.param(EU_STRICT, Narrowing(allow_countries=("fr", "de")),
                 lambda p: p.allow_countries == {"FR", "DE"}, id="countries-upper-cased"),
    pytest.param(FR_ONLY, Narrowing(allow_countries=("FR",)), lambda p: p.allow_countries == {"FR"},
                 id="countries-same"),
    pytest.param(EU_STRICT, Narrowing(allow_providers=("ionos",)),
                 lambda p: p.allow_providers == {"ionos"}, id="providers"),
    pytest.param(OPEN, Narrowing(policy_id="eu", allow_classes=("eu_resident",), allow_countries=("DE",)),
                 lambda p: (p.policy_id, p.allow_classes, p.allow_countries)
                 == ("eu", {"eu_resident"}, {"DE"}), id="named-then-lists"),
    pytest.param(EU, Narrowing(), lambda p: p is EU, id="nothing"),
    pytest.param(EU, Narrowing(allow_classes=(), allow_countries=()), lambda p: p is EU,
                 id="empty-lists-narrow-nothing"),
    # widenings, each refused naming the field
    pytest.param(EU_STRICT, Narrowing(policy_id="open"), (PermissionDenied, "llmeu.policy_id"),
                 id="named-looser"),
    pytest.param(EU_STRICT, Narrowing(policy_id="open"), "in `allow_classes`", id="named-looser-says-where"),
    pytest.param(EU_STRICT, Narrowing(policy_id="stores"), (PermissionDenied, "llmeu.policy_id"),
                 id="named-stores-content"),
    pytest.param(EU_STRICT, Narrowing(policy_id="stores"), "in `store_content`",
                 id="named-stores-content-says-where"),
    pytest.param(EU_STRICT, Narrowing(allow_classes=("eu_sovereign", "global")),
                 (PermissionDenied, "llmeu.allow_classes"), id="class-outside"),
    pytest.param(FR_ONLY, Narrowing(allow_countries=("FR", "US")),
                 (PermissionDenied, "llmeu.allow_countries"), id="country-outside"),
    pytest.param(SCALEWAY_ONLY, Narrowing(allow_providers=("openai",)),
                 (PermissionDenied, "llmeu.allow_providers"), id="provider-outside"),
    pytest.param(EU, Narrowing(policy_id="eu-strict", allow_classes=("eu_resident",)),
                 (PermissionDenied, "llmeu.allow_classes"), id="lists-checked-against-named"),
    pytest.param(EU_STRICT, Narrowing(policy_id="eu", source="x-llmeu-policy"),
                 (PermissionDenied, "x-llmeu-policy.policy_id"), id="header-named-looser"),
    # not narrowings at all
    pytest.param(EU, Narrowing(policy_id="nope"), (InvalidRequest, "llmeu.policy_id"),
                 id="unknown-policy"),
    pytest.param(EU, Narrowing(allow_classes=("sovereign",)), (InvalidRequest, "llmeu.allow_classes"),
                 id="unknown-class"),
]  # fmt: skip


@pytest.mark.parametrize(("base", "narrowing", "expected"), NARROWED)
def test_narrow(base: Policy, narrowing: Narrowing, expected: Any) -> None:
    if callable(expected):
        assert expected(narrow(base, narrowing, POLICIES))
        return
    if isinstance(expected, str):
        with pytest.raises(PermissionDenied, match=expected):
            narrow(base, narrowing, POLICIES)
        return
    error_class, param = expected
    with pytest.raises(ApiError) as caught:
        narrow(base, narrowing, POLICIES)
    error = caught.value
    assert type(error) is error_class
    assert error.param == param
    if error_class is PermissionDenied:
        assert error.status == 403
        assert error.code == "policy_widening"
        assert f"`{param}`" in error.message


# PolicyBook.effective: the header applies first, the body narrows further.
def book() -> PolicyBook:
    return PolicyBook(POLICIES, "eu-strict", store=None)  # type: ignore[arg-type]


# (key policy, header, body field, expected: (policy_id, classes, countries) or (error, param))
EFFECTIVE = [
    pytest.param("eu", "eu-strict", None, ("eu-strict", {"on_premise", "eu_sovereign"}, set()),
                 id="header-policy-id"),
    pytest.param("eu", "  eu-strict  ", None, ("eu-strict", {"on_premise", "eu_sovereign"}, set()),
                 id="header-policy-id-with-spaces"),
    pytest.param("eu", '{"allow_countries": ["de"]}', None,
                 ("eu", {"on_premise", "eu_sovereign", "eu_resident"}, {"DE"}), id="header-json"),
    pytest.param("eu", '{"policy_id": "eu-strict", "allow_countries": ["FR"]}', None,
                 ("eu-strict", {"on_premise", "eu_sovereign"}, {"FR"}), id="header-json-named"),
    pytest.param("eu", "eu-strict", RoutingRequest(allow_countries=["FR"]),
                 ("eu-strict", {"on_premise", "eu_sovereign"}, {"FR"}), id="header-then-body"),
    pytest.param("eu", '{"allow_countries": ["FR"]}', RoutingRequest(allow_countries=["DE"]),
                 (PermissionDenied, "llmeu.allow_countries"), id="body-cannot-widen-the-header"),
    pytest.param("eu", "eu-strict", RoutingRequest(policy_id="eu"),
                 (PermissionDenied, "llmeu.policy_id"), id="body-cannot-undo-the-header"),
    pytest.param("eu-strict", "open", None, (PermissionDenied, "x-llmeu-policy.policy_id"),
                 id="header-widening-policy"),
    pytest.param("eu-strict", '{"allow_classes": ["global"]}', None,
                 (PermissionDenied, "x-llmeu-policy.allow_classes"), id="header-widening-class"),
    pytest.param("eu-strict", "nope", None, (InvalidRequest, "x-llmeu-policy.policy_id"),
                 id="header-unknown-policy"),
    pytest.param("eu-strict", "{not json", None, (InvalidRequest, "x-llmeu-policy"),
                 id="header-invalid-json"),
    pytest.param("eu-strict", '{"allow_regions": ["fr-par"]}', None,
                 (InvalidRequest, "x-llmeu-policy"), id="header-unknown-field"),
    pytest.param("eu-strict", None, RoutingRequest(allow_classes=["eu_resident"]),
                 (PermissionDenied, "llmeu.allow_classes"), id="body-widening-class"),
    pytest.param("gone", None, None, (InvalidRequest, None), id="key-policy-undefined"),
]  # fmt: skip


@pytest.mark.parametrize(("key_policy", "header", "body", "expected"), EFFECTIVE)
def test_effective_policy_of_a_request(
    key_policy: str, header: str | None, body: RoutingRequest | None, expected: Any
) -> None:
    if isinstance(expected[0], str):
        effective = book().effective(key_policy, body, header)
        policy_id, classes, countries = expected
        assert effective.policy_id == policy_id
        assert effective.allow_classes == classes
        assert effective.allow_countries == countries
        return
    error_class, param = expected
    with pytest.raises(ApiError) as caught:
        book().effective(key_policy, body, header)
    assert type(caught.value) is error_class
    assert caught.value.param == param


@pytest.mark.parametrize("key_fails", ["open", "closed"])
def test_a_named_policy_keeps_the_keys_limits_fail(key_fails: str) -> None:
    base = policy("base", classes=("on_premise", "eu_sovereign", "eu_resident"),
                  limits_fail=key_fails)  # fmt: skip
    named = policy("named", limits_fail="closed" if key_fails == "open" else "open")
    effective = narrow(base, Narrowing(policy_id="named"), {"base": base, "named": named})
    assert (effective.policy_id, effective.allow_classes) == ("named", named.allow_classes)
    assert effective.limits_fail == key_fails
