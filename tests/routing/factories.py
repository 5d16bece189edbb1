"""Small builders of catalog endpoints and policies for the routing tests."""

from __future__ import annotations

from collections.abc import Iterable

from llmeu.routing.catalog import (
    Capability,
    Certification,
    Endpoint,
    EndpointKind,
    Prices,
    SovereigntyClass,
)
from llmeu.routing.durations import ZERO, Duration
from llmeu.routing.policy import LimitsFail, Policy
from llmeu.routing.tool_servers import ToolServer


def endpoint(
    endpoint_id: str,
    *,
    sovereignty_class: str = "eu_sovereign",
    country: str = "FR",
    provider: str | None = None,
    retention: str = "P0D",
    priority: int = 10,
    prices: tuple[float, float] = (1.0, 2.0),
    aliases: Iterable[str] = ("m",),
    capabilities: Iterable[str] = ("chat",),
    jurisdiction: str = "",
    certifications: Iterable[str] = (),
    seal: int | None = None,
) -> Endpoint:
    return Endpoint(
        endpoint_id=endpoint_id,
        provider=provider or endpoint_id.split("-")[0],
        kind=EndpointKind.OPENAI,
        model=f"upstream-{endpoint_id}",
        model_version="1",
        aliases=tuple(aliases),
        inference_region="test-1",
        country=country,
        sovereignty_class=SovereigntyClass(sovereignty_class),
        retention=Duration.parse(retention),
        prices=Prices(*prices),
        base_url="http://127.0.0.1:9/v1",
        priority=priority,
        capabilities=frozenset(Capability(c) for c in capabilities),
        jurisdiction=jurisdiction,
        certifications=frozenset(Certification(c) for c in certifications),
        seal=seal,
    )


def tool_server(
    server_id: str,
    *,
    sovereignty_class: str = "eu_sovereign",
    country: str = "FR",
    provider: str | None = None,
    retention: str = "P0D",
    jurisdiction: str = "",
    certifications: Iterable[str] = (),
    seal: int | None = None,
    url: str | None = None,
) -> ToolServer:
    return ToolServer(
        server_id=server_id,
        url=url or f"http://127.0.0.1:9/{server_id}/mcp",
        provider=provider or server_id.split("-")[0],
        country=country,
        sovereignty_class=SovereigntyClass(sovereignty_class),
        retention=Duration.parse(retention),
        jurisdiction=jurisdiction,
        certifications=frozenset(Certification(c) for c in certifications),
        seal=seal,
    )


def policy(
    policy_id: str = "p",
    *,
    classes: Iterable[str] = ("on_premise", "eu_sovereign"),
    countries: Iterable[str] = (),
    providers: Iterable[str] = (),
    max_retention: str = "P0D",
    store_content: str = "P0D",
    fallback: bool = True,
    limits_fail: str = "open",
) -> Policy:
    return Policy(
        policy_id=policy_id,
        allow_classes=frozenset(SovereigntyClass(c) for c in classes),
        allow_countries=frozenset(countries),
        allow_providers=frozenset(providers),
        max_retention=Duration.parse(max_retention),
        store_content=Duration.parse(store_content) if store_content != "P0D" else ZERO,
        fallback=fallback,
        limits_fail=LimitsFail(limits_fail),
    )
