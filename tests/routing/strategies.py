"""Hypothesis strategies: random catalogs, policies, narrowings and attempt outcomes.

Fully random catalogs and policies rarely meet (most endpoints would be
excluded, most narrowings refused), so the strategies lean towards the
policy in play: a catalog drawn for a policy has most of its endpoints
admitted, and a narrowing drawn for a policy mostly narrows it. Each value
is still drawn from the whole space some of the time.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

from hypothesis import strategies as st

from llmeu.routing.catalog import Catalog, Certification, Endpoint, SovereigntyClass
from llmeu.routing.durations import Duration
from llmeu.routing.policy import Narrowing, Policy
from llmeu.routing.router import Health
from tests.routing.factories import endpoint

T = TypeVar("T")
COUNTRIES = ["FR", "DE", "NL", "US"]
PROVIDERS = ["scaleway", "ovhcloud", "ionos", "aws", "openai"]
RETENTIONS = [Duration.parse(r) for r in ("P0D", "PT12H", "P1D", "P30D", "P1Y")]
CLASSES = list(SovereigntyClass)
MODELS = ["m", "n"]
JURISDICTIONS = ["FR", "DE", "US"]
CERTIFICATIONS = [Certification.ISO27001, Certification.BSI_C5, Certification.SECNUMCLOUD]
SEALS = [None, 0, 1, 2, 3, 4]


def _leaning(allowed: Collection[T], universe: list[T]) -> st.SearchStrategy[T]:
    """Mostly a value from `allowed` (when it has any), sometimes any value."""
    anything = st.sampled_from(universe)
    if not allowed:
        return anything
    return (
        st.sampled_from(sorted(allowed, key=str))
        | st.sampled_from(sorted(allowed, key=str))
        | anything
    )


@st.composite
def endpoints(draw: st.DrawFn, index: int, lean: Policy | None = None) -> Endpoint:
    classes = lean.allow_classes if lean else ()
    countries = lean.allow_countries if lean else ()
    providers = lean.allow_providers if lean else ()
    retentions = [r for r in RETENTIONS if lean and r <= lean.max_retention]
    return endpoint(
        f"e{index}",
        sovereignty_class=draw(_leaning(classes, CLASSES)).value,
        country=draw(_leaning(countries, [*COUNTRIES, ""])),
        provider=draw(_leaning(providers, PROVIDERS)),
        retention=draw(_leaning(retentions, RETENTIONS)).text,
        priority=draw(st.integers(0, 3)),
        prices=(draw(st.integers(0, 3)), draw(st.integers(0, 3))),
        aliases=draw(st.sampled_from([("m",), ("m", "n"), ("m",), ("n",)])),
        capabilities=draw(
            st.sampled_from([("chat",), ("chat", "tools"), ("chat",), ("embeddings",)])
        ),
        jurisdiction=draw(
            _leaning(lean.require_jurisdictions if lean else (), [*JURISDICTIONS, ""])
        ),
        certifications=draw(st.frozensets(st.sampled_from([c.value for c in CERTIFICATIONS]))),
        seal=draw(st.sampled_from(SEALS)),
    )


@st.composite
def catalogs(draw: st.DrawFn, lean: Policy | None = None, max_size: int = 8) -> Catalog:
    size = draw(st.integers(1, max_size))
    return Catalog([draw(endpoints(i, lean)) for i in range(size)])


def _some_or_any(values: list[T]) -> st.SearchStrategy[frozenset[T]]:
    """Empty ("any") or a non-empty allow-list."""
    return st.just(frozenset[T]()) | st.frozensets(st.sampled_from(values), min_size=1)


@st.composite
def policies(draw: st.DrawFn, policy_id: str = "p") -> Policy:
    return Policy(
        policy_id=policy_id,
        allow_classes=draw(st.just(frozenset(CLASSES)) | st.frozensets(st.sampled_from(CLASSES))),
        allow_countries=draw(_some_or_any(COUNTRIES)),
        allow_providers=draw(_some_or_any(PROVIDERS)),
        max_retention=draw(st.sampled_from(RETENTIONS)),
        store_content=draw(st.sampled_from(RETENTIONS)),
        fallback=draw(st.booleans()),
        require_jurisdictions=draw(_some_or_any(JURISDICTIONS)),
        require_certifications=draw(
            st.just(frozenset[Certification]()) | st.frozensets(st.sampled_from(CERTIFICATIONS))
        ),
        min_seal=draw(st.sampled_from([None, None, *SEALS])),
    )


def _narrower(values: frozenset[T]) -> st.SearchStrategy[frozenset[T]]:
    if not values:
        return st.nothing()
    return st.frozensets(st.sampled_from(sorted(values, key=str)), min_size=1)


@st.composite
def variants(draw: st.DrawFn, base: Policy, policy_id: str) -> Policy:
    """A policy like `base`: each field kept, narrowed, or drawn afresh (possibly wider)."""
    other = draw(policies(policy_id))
    fields: dict[str, object] = {"policy_id": policy_id}
    for name in ("allow_classes", "allow_countries", "allow_providers"):
        mine = getattr(base, name)
        fields[name] = draw(st.just(mine) | _narrower(mine) | st.just(getattr(other, name)))
    for name in (
        "max_retention",
        "store_content",
        "fallback",
        "require_jurisdictions",
        "require_certifications",
        "min_seal",
    ):
        fields[name] = draw(st.sampled_from([getattr(base, name), getattr(other, name)]))
    return Policy(**fields)  # type: ignore[arg-type]


@st.composite
def policy_books(draw: st.DrawFn) -> dict[str, Policy]:
    """The key's policy `base` and a few policies a request may name, most of them close to it."""
    base = draw(policies("base"))
    return {"base": base, **{pid: draw(variants(base, pid)) for pid in ("q1", "q2", "q3")}}


@st.composite
def narrowings(draw: st.DrawFn, base: Policy, source: str = "llmeu") -> Narrowing:
    """Mostly within `base`; sometimes naming an unknown policy or class, or a wider list."""

    def lists(allowed: Collection[str], universe: list[str]) -> st.SearchStrategy[tuple[str, ...]]:
        return st.just(()) | st.lists(_leaning(allowed, universe), min_size=1, max_size=3).map(
            tuple
        )

    classes = [c.value for c in base.allow_classes]
    countries = [*base.allow_countries, *(c.lower() for c in base.allow_countries)]
    return Narrowing(
        policy_id=draw(st.none() | st.sampled_from(["base", "q1", "q2", "q3", "missing"])),
        allow_classes=draw(lists(classes, [*(c.value for c in CLASSES), "sovereign"])),
        allow_countries=draw(lists(countries, [*COUNTRIES, "fr"])),
        allow_providers=draw(lists(base.allow_providers, PROVIDERS)),
        require_jurisdictions=draw(lists(base.require_jurisdictions, [*JURISDICTIONS, "EU"])),
        require_certifications=draw(
            lists([c.value for c in base.require_certifications], [c.value for c in CERTIFICATIONS])
        ),
        min_seal=draw(st.sampled_from(SEALS)),
        source=source,
    )


def health_maps(catalog: Catalog) -> st.SearchStrategy[dict[str, Health]]:
    ids = [e.endpoint_id for e in catalog.endpoints]
    if not ids:
        return st.just({})
    return st.dictionaries(st.sampled_from(ids), st.sampled_from(list(Health)), max_size=3)


def unavailable_maps(catalog: Catalog) -> st.SearchStrategy[dict[str, str]]:
    ids = [e.endpoint_id for e in catalog.endpoints]
    if not ids:
        return st.just({})
    return st.sets(st.sampled_from(ids), max_size=2).map(
        lambda s: {i: f"{i.upper()}_KEY is not set" for i in s}
    )


OUTCOMES = ["ok", "retryable", "rejected"]
"""What one attempt does: serve, fail in a way another endpoint can fix, or fail for good."""

outcome_sequences = st.lists(st.sampled_from(OUTCOMES), min_size=8, max_size=8)
