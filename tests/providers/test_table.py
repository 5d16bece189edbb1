"""Every endpoint kind the configuration accepts has exactly one provider."""

from __future__ import annotations

from llmeu.providers.table import PROVIDER_KINDS
from llmeu.routing.catalog import EndpointKind


def test_every_kind_has_a_provider() -> None:
    assert set(PROVIDER_KINDS) == set(EndpointKind)
