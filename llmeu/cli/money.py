"""Amounts of money as people read them: `€0`, `€0.0012`, `€0.50`, `€1,234.57`.

A call's cost is often a fraction of a cent, so rounding to cents would show
most calls as free; printing a float shows `0.0000000 EUR` or `1.23e-05`.
The rule: nothing is `€0`; below one unit, three significant digits (at
least two decimals, trailing zeros dropped beyond them); from one unit up,
two decimals with thousands separators. A currency other than EUR is written
after the amount (`0.0012 USD`). The console's `fmtEur` follows the same rule.
"""

from __future__ import annotations

import math

SYMBOLS = {"EUR": "€"}


def money(amount: float | None, currency: str = "EUR") -> str:
    """`-` for an unknown amount, which is not the same as nothing."""
    if amount is None:
        return "-"
    sign = "-" if amount < 0 else ""
    number = _number(abs(amount))
    symbol = SYMBOLS.get(currency)
    return f"{sign}{symbol}{number}" if symbol else f"{sign}{number} {currency}".rstrip()


def _number(size: float) -> str:
    if size == 0:
        return "0"
    if size >= 1:
        return f"{size:,.2f}"
    text = f"{size:.{min(20, max(2, 2 - math.floor(math.log10(size))))}f}"
    if text.startswith("1."):  # rounded up to one unit
        return f"{size:,.2f}"
    whole, _, fraction = text.partition(".")
    return f"{whole}.{fraction.rstrip('0').ljust(2, '0')}"
