"""Money as people read it, in every table and footer of the command line."""

from __future__ import annotations

import pytest

from llmeu.cli.money import money

AMOUNTS = [
    pytest.param(0, "EUR", "€0", id="nothing"),
    pytest.param(0.0, "EUR", "€0", id="nothing-as-float"),
    pytest.param(0.0012, "EUR", "€0.0012", id="fraction-of-a-cent"),
    pytest.param(0.0000123, "EUR", "€0.0000123", id="tiny-never-scientific"),
    pytest.param(0.00012345, "EUR", "€0.000123", id="three-significant-digits"),
    pytest.param(0.5, "EUR", "€0.50", id="at-least-two-decimals"),
    pytest.param(0.01, "EUR", "€0.01", id="a-cent"),
    pytest.param(0.9999, "EUR", "€1.00", id="rounds-up-to-one"),
    pytest.param(1234.567, "EUR", "€1,234.57", id="thousands"),
    pytest.param(-0.25, "EUR", "-€0.25", id="negative"),
    pytest.param(0.0012, "USD", "0.0012 USD", id="other-currency"),
    pytest.param(None, "EUR", "-", id="unknown"),
]


@pytest.mark.parametrize(("amount", "currency", "shown"), AMOUNTS)
def test_money(amount: float | None, currency: str, shown: str) -> None:
    assert money(amount, currency) == shown
