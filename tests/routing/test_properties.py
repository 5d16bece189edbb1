"""Properties over random catalogs, policies, narrowings and upstream failure sequences.

- the endpoint that serves is always admitted by the effective policy (and so
  by the key's policy), and no endpoint outside it is ever attempted;
- a request is refused exactly when no admitted endpoint exists, or every
  admitted one failed, or a non-retryable failure / `fallback: false` stopped it;
- narrowing never widens: the narrowed policy admits a subset of what the
  base admits, on any catalog, and a true narrowing is never refused;
- a personal-data `restrict` only ever narrows, whatever the policy under it.

Admission is checked against an oracle written here from docs/design.md §4, not
against `Policy.exclusion` itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TypeVar

from hypothesis import event, given, settings
from hypothesis import strategies as st

from llmeu.errors import (
    ApiError,
    InvalidRequest,
    NoCompliantRoute,
    NotFound,
    PermissionDenied,
    UpstreamError,
    UpstreamRejected,
    UpstreamUnavailable,
)
from llmeu.personal.rules import RestrictTo
from llmeu.routing.catalog import Capability, Catalog, Endpoint
from llmeu.routing.fallback import run_with_fallback
from llmeu.routing.policy import Narrowing, Policy, narrow, restricted
from llmeu.routing.router import Health, RoutePlan, plan_route, try_order
from tests.routing.strategies import (
    CLASSES,
    COUNTRIES,
    PROVIDERS,
    catalogs,
    health_maps,
    narrowings,
    outcome_sequences,
    policies,
    policy_books,
    unavailable_maps,
)

T = TypeVar("T")
CHAT = frozenset({Capability.CHAT})
PROPERTY = settings(max_examples=100, deadline=None)
THOROUGH = settings(max_examples=250, deadline=None)


def admits(policy: Policy, endpoint: Endpoint) -> bool:
    """docs/design.md §4, restated: class, country, provider and retention all allowed; and the
    compliance requirements met (jurisdiction listed, every certification held, SEAL at
    least the minimum; unknown meets none)."""
    return (
        endpoint.sovereignty_class in policy.allow_classes
        and (not policy.allow_countries or endpoint.country in policy.allow_countries)
        and (not policy.allow_providers or endpoint.provider in policy.allow_providers)
        and endpoint.retention.seconds <= policy.max_retention.seconds
        and compliant(policy, endpoint)
    )


def compliant(policy: Policy, endpoint: Endpoint) -> bool:
    return (
        (not policy.require_jurisdictions or endpoint.jurisdiction in policy.require_jurisdictions)
        and all(c in endpoint.certifications for c in policy.require_certifications)
        and (
            policy.min_seal is None
            or (endpoint.seal is not None and endpoint.seal >= policy.min_seal)
        )
    )


@PROPERTY
@given(catalogs(), policies())
def test_admission_matches_the_design_and_names_the_first_failing_rule(
    catalog: Catalog, policy: Policy
) -> None:
    for endpoint in catalog.endpoints:
        checks = [
            ("allow_classes", endpoint.sovereignty_class in policy.allow_classes),
            ("allow_countries", not policy.allow_countries or endpoint.country in policy.allow_countries),
            ("allow_providers", not policy.allow_providers or endpoint.provider in policy.allow_providers),
            ("max_retention", endpoint.retention.seconds <= policy.max_retention.seconds),
            ("require_jurisdictions", not policy.require_jurisdictions or endpoint.jurisdiction in policy.require_jurisdictions),
            ("require_certifications", policy.require_certifications <= endpoint.certifications),
            ("min_seal", policy.min_seal is None or (-1 if endpoint.seal is None else endpoint.seal) >= policy.min_seal),
        ]  # fmt: skip
        failing = [rule for rule, ok in checks if not ok]
        exclusion = policy.exclusion(endpoint)
        assert (exclusion is None) == admits(policy, endpoint) == (not failing)
        if exclusion is not None:
            assert exclusion[0] == failing[0]


@THOROUGH
@given(catalogs(), policy_books(), st.data())
def test_narrowing_never_widens(
    catalog: Catalog, book: dict[str, Policy], data: st.DataObject
) -> None:
    header = data.draw(narrowings(book["base"], source="x-llmeu-policy"))
    body = data.draw(narrowings(book["base"]))
    base = book["base"]
    try:
        narrowed = narrow(narrow(base, header, book), body, book)
    except (PermissionDenied, InvalidRequest):
        event("refused")
        return
    event("narrowed")
    for endpoint in catalog.endpoints:
        if admits(narrowed, endpoint):
            assert admits(base, endpoint), endpoint
    assert narrowed.max_retention <= base.max_retention
    assert narrowed.store_content <= base.store_content
    assert base.fallback or not narrowed.fallback
    assert narrowed.require_certifications >= base.require_certifications
    assert base.min_seal is None or (narrowed.min_seal or 0) >= base.min_seal


@PROPERTY
@given(policy_books(), st.data())
def test_a_true_narrowing_is_never_refused(book: dict[str, Policy], data: st.DataObject) -> None:
    base = book["base"]

    def subset(values: frozenset[str], universe: list[str]) -> tuple[str, ...]:
        pool = sorted(values) or universe
        return tuple(data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3)))

    classes = [c.value for c in base.allow_classes]
    countries = subset(base.allow_countries, ["FR", "DE"])
    providers = subset(base.allow_providers, ["scaleway", "ionos"])
    narrowing = Narrowing(
        allow_classes=subset(frozenset(classes), ["on_premise"]) if classes else (),
        allow_countries=countries,
        allow_providers=providers,
    )
    narrowed = narrow(base, narrowing, book)
    assert narrowed.allow_countries == {c.upper() for c in countries}
    assert narrowed.allow_providers == set(providers)


@PROPERTY
@given(policy_books())
def test_naming_a_policy_is_refused_exactly_when_it_is_looser_in_some_field(
    book: dict[str, Policy],
) -> None:
    base, named = book["base"], book["q1"]
    looser = (
        not named.allow_classes <= base.allow_classes
        or (bool(base.allow_countries) and not (named.allow_countries and named.allow_countries <= base.allow_countries))
        or (bool(base.allow_providers) and not (named.allow_providers and named.allow_providers <= base.allow_providers))
        or named.max_retention > base.max_retention
        or named.store_content > base.store_content
        or (named.fallback and not base.fallback)
        or (bool(base.require_jurisdictions) and not (named.require_jurisdictions and named.require_jurisdictions <= base.require_jurisdictions))
        or not base.require_certifications <= named.require_certifications
        or (base.min_seal is not None and (named.min_seal is None or named.min_seal < base.min_seal))
    )  # fmt: skip
    result = outcome_of(lambda: narrow(base, Narrowing(policy_id="q1"), book))
    event("refused" if looser else "narrowed")
    if looser:
        assert isinstance(result, PermissionDenied)
        assert (result.param, result.code) == ("llmeu.policy_id", "policy_widening")
    else:
        assert result is named


def outcome_of(call: Callable[[], T]) -> T | ApiError:
    try:
        return call()
    except ApiError as error:
        return error


def run_plan(plan: RoutePlan, outcomes: list[str]) -> tuple[list[str], Endpoint | UpstreamError]:
    """Run the plan, each attempt doing what the next outcome of the sequence says."""
    tried: list[str] = []

    async def attempt(endpoint: Endpoint) -> str:
        outcome = outcomes[len(tried)]
        tried.append(endpoint.endpoint_id)
        if outcome == "retryable":
            raise UpstreamUnavailable(f"{endpoint.endpoint_id} answered 503", upstream_status=503)
        if outcome == "rejected":
            raise UpstreamRejected(f"{endpoint.endpoint_id} answered 400", upstream_status=400)
        return endpoint.endpoint_id

    try:
        served, result = asyncio.run(run_with_fallback(plan, attempt))
    except UpstreamError as error:
        return tried, error
    assert result == served.endpoint_id
    return tried, served


def expected_attempts(
    order: list[str], outcomes: list[str], fallback: bool
) -> tuple[list[str], str | None]:
    """The endpoints tried and the one that serves (None: refused), from docs/design.md §4."""
    tried: list[str] = []
    for endpoint_id, outcome in zip(order, outcomes, strict=False):
        tried.append(endpoint_id)
        if outcome == "ok":
            return tried, endpoint_id
        if outcome == "rejected" or not fallback:
            break
    return tried, None


@THOROUGH
@given(st.data())
def test_the_serving_endpoint_is_admitted_and_refusal_happens_exactly_when_it_must(
    data: st.DataObject,
) -> None:
    book = data.draw(policy_books())
    key_policy = book["base"]
    effective = outcome_of(lambda: narrow(key_policy, data.draw(narrowings(key_policy)), book))
    if isinstance(effective, ApiError):
        effective = key_policy
    catalog = data.draw(catalogs(lean=effective))
    unavailable = data.draw(unavailable_maps(catalog))
    health: Mapping[str, Health] = data.draw(health_maps(catalog))
    outcomes = data.draw(outcome_sequences)

    serving = [e for e in catalog.endpoints if e.serves("m")]
    chat = [e for e in serving if Capability.CHAT in e.capabilities]
    admitted = [e for e in chat if admits(effective, e) and e.endpoint_id not in unavailable]
    usable = [e for e in admitted if health.get(e.endpoint_id, Health.HEALTHY) is not Health.OPEN]
    plan = outcome_of(
        lambda: plan_route(catalog, "m", CHAT, effective, unavailable=unavailable, health=health)
    )
    if not serving:
        assert isinstance(plan, NotFound)
    elif not chat:
        assert isinstance(plan, InvalidRequest)
    elif not admitted:
        event("refused: no admitted endpoint")
        assert isinstance(plan, NoCompliantRoute)
        assert plan.status == 403
        assert [d["endpoint_id"] for d in plan.details or ()] == [e.endpoint_id for e in chat]
    elif not usable:
        event("refused: every admitted endpoint has an open circuit")
        assert isinstance(plan, UpstreamUnavailable)
    else:
        assert isinstance(plan, RoutePlan)
        assert sorted(e.endpoint_id for e in plan.candidates) == sorted(
            e.endpoint_id for e in usable
        )
        keys = [try_order(e, health) for e in plan.candidates]
        assert keys == sorted(keys), "priority, then health, then price"
        order = [e.endpoint_id for e in plan.candidates]
        tried, result = run_plan(plan, outcomes)
        expected_tried, expected_server = expected_attempts(order, outcomes, effective.fallback)
        event(f"{min(len(order), 3)} candidates, {'served' if expected_server else 'refused'}")
        assert tried == expected_tried
        if expected_server is None:
            assert isinstance(result, UpstreamError), "served although it had to be refused"
            assert result.retryable == (outcomes[len(tried) - 1] == "retryable")
        else:
            assert isinstance(result, Endpoint), "refused although an admitted endpoint could serve"
            assert result.endpoint_id == expected_server
            assert admits(effective, result) and admits(key_policy, result)
            assert result.endpoint_id not in unavailable


restrictions = st.builds(
    RestrictTo,
    allow_classes=st.frozensets(st.sampled_from([c.value for c in CLASSES])),
    allow_countries=st.frozensets(st.sampled_from(COUNTRIES)),
    allow_providers=st.frozensets(st.sampled_from(PROVIDERS)),
)


@PROPERTY
@given(catalogs(), policy_books(), restrictions, st.data())
def test_a_personal_data_restriction_only_ever_narrows(
    catalog: Catalog, book: dict[str, Policy], restrict: RestrictTo, data: st.DataObject
) -> None:
    """`restrict` on top of any (narrowed) policy admits a subset of it, and exactly what the
    restriction's own lists admit of it: never an endpoint outside either."""
    base = book["base"]
    try:
        policy = narrow(base, data.draw(narrowings(base)), book)
    except (PermissionDenied, InvalidRequest):
        return
    restricted_policy = restricted(policy, restrict)
    for endpoint in catalog.endpoints:
        expected = (
            admits(policy, endpoint)
            and (not restrict.allow_classes or endpoint.sovereignty_class in restrict.allow_classes)
            and (not restrict.allow_countries or endpoint.country in restrict.allow_countries)
            and (not restrict.allow_providers or endpoint.provider in restrict.allow_providers)
        )
        event("admitted" if expected else "excluded")
        assert admits(restricted_policy, endpoint) == expected, endpoint
        again = restricted(restricted_policy, restrict)
        assert admits(again, endpoint) == expected, endpoint
