"""JSON Canonicalization Scheme (RFC 8785): one byte string per JSON value.

Receipts, checkpoints and chain links hash or sign JSON, so two parties must
turn the same value into the same bytes: JCS fixes the member order (UTF-16
code units), the whitespace (none), the string escapes (only `"`, `\\` and
control characters) and the number format (ECMAScript's `Number.prototype.
toString`, so `1.0` and `1` are both `1`, `1e-7` stays `1e-7` but `0.00001`
is written out).

Why not the `rfc8785` package: it is correct, but it writes value by value
through a `BytesIO` and took ~95 µs of CPU for one trace's metadata, where
this module takes ~20 µs (`bench/evidence.py`'s input, the same machine):
the chain link is paid on every call. Here the C string encoder of the
standard `json` module does the escaping and only floats are formatted by
hand; the tests hold the result to RFC 8785's vectors, to ECMAScript itself
and to the `rfc8785` package on generated values.

Values are what `json.loads` returns plus tuples: dict (string keys), list,
tuple, str, int, float, bool, None. Anything else, NaN, infinities, integers
outside ±(2**53 - 1) (not exactly representable as a JSON number in the
I-JSON sense of RFC 7493) and lone surrogates are refused with
`ValueError`/`TypeError` rather than written in a form another
implementation would read differently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from msgspec import Raw
from msgspec.json import Encoder

_MAX_SAFE_INTEGER = 2**53 - 1
# The C encoder of `json` (ensure_ascii=False): escapes `"`, `\\`, \b \f \n \r \t
# and the other control characters as \u00xx (lowercase hex), exactly as JCS asks.
_encode_string = json.encoder.encode_basestring
_encode_json = Encoder().encode


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 serialisation of `value`, UTF-8 encoded."""
    parts: list[str] = []
    _write(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError("JCS input holds a lone surrogate (not valid Unicode)") from error


class FlatObject:
    """The JCS form of objects with fixed ASCII member names and scalar values, null
    members left out — `canonical_json` of the same object, byte for byte, in about half
    the time of writing it member by member: the hot path of every chain link
    (`llmeu.evidence.chain`).

    msgspec's C encoder writes the object: it escapes strings as JCS does (`"`, `\\`,
    the short forms \\b \\f \\n \\r \\t, other control characters as lowercase
    \\u00xx, nothing else) and lays out a float of 1e-4 <= |x| < 1e16 with the shortest
    round-tripping digits in positional form, as ECMAScript does. What it would write
    otherwise — an integral float (`1.0` for JCS's `1`), a float outside that range, an
    integer JCS cannot represent exactly, a non-scalar — is formatted here first and
    handed over as raw JSON. The tests hold both to `canonical_json`."""

    def __init__(self, names: Iterable[str]):
        ordered = sorted(names)
        if not "".join(ordered).isascii():
            raise ValueError("FlatObject member names must be ASCII")
        self._names = ordered

    def encode(self, values: Mapping[str, Any]) -> bytes:
        members: dict[str, Any] = {}
        for name in self._names:
            value = values.get(name)
            if value is None:
                continue
            kind = type(value)
            if kind is float:
                if value.is_integer() or not 1e-4 <= abs(value) < 1e16:
                    value = Raw(format_number(value).encode())
            elif kind is int:
                if not -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
                    _integer(value)  # raises
            elif kind is not str and kind is not bool:
                value = Raw(canonical_json(value))
            members[name] = value
        try:
            return _encode_json(members)
        except UnicodeEncodeError as error:
            raise ValueError("JCS input holds a lone surrogate (not valid Unicode)") from error


def _integer(value: int) -> str:
    if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        return int.__repr__(value)
    raise ValueError(f"integer {value} is outside the range JCS can represent exactly")


def _boolean(value: bool) -> str:
    return "true" if value else "false"


def _null(value: None) -> str:
    return "null"


def _write(value: Any, parts: list[str]) -> None:
    scalar = _SCALARS.get(type(value))
    if scalar is not None:
        parts.append(scalar(value))
    elif isinstance(value, Mapping):
        _write_object(value, parts)
    elif isinstance(value, list | tuple):
        _write_array(value, parts)
    elif isinstance(value, str | int | float):
        _write(_plain(value), parts)
    else:
        raise TypeError(f"JCS cannot serialise a value of type {type(value).__name__}")


def _write_object(members: Mapping[str, Any], parts: list[str]) -> None:
    try:
        keys = sorted(members)
        ascii_keys = "".join(keys).isascii()
    except TypeError:
        raise TypeError("JCS object keys must be strings") from None
    if not ascii_keys:
        keys.sort(key=_utf16_order)  # code points and UTF-16 code units agree on ASCII only
    append = parts.append
    separator = "{"
    for key in keys:
        value = members[key]
        scalar = _SCALARS.get(type(value))
        if scalar is not None:
            append(f"{separator}{_encode_string(key)}:{scalar(value)}")
        else:
            append(f"{separator}{_encode_string(key)}:")
            _write(value, parts)
        separator = ","
    append("}" if keys else "{}")


def _write_array(items: list[Any] | tuple[Any, ...], parts: list[str]) -> None:
    append = parts.append
    separator = "["
    for item in items:
        scalar = _SCALARS.get(type(item))
        if scalar is not None:
            append(separator + scalar(item))
        else:
            append(separator)
            _write(item, parts)
        separator = ","
    append("]" if items else "[]")


def _utf16_order(key: str) -> bytes:
    """RFC 8785 §3.2.3 sorts by UTF-16 code units: U+1F602 (D83D DE02) comes before U+FB33."""
    return key.encode("utf-16-be", "surrogatepass")


def _plain(value: str | int | float) -> str | int | float:
    """The base-type value of a subclass instance (an enum member, say)."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    return float(value)


def format_number(number: float) -> str:
    """ECMAScript's Number::toString(10) of a finite double (ECMA-262 §6.1.6.1.20).

    Python's `repr` already yields the shortest digits that round-trip, picked
    the same way ECMAScript picks them; only where the decimal point goes and
    when to switch to an exponent differ (Python: below 1e-4 and from 1e16;
    ECMAScript: below 1e-6 and from 1e21), so the digits are re-laid here.
    """
    if not math.isfinite(number):
        raise ValueError(f"{number} is not a JSON number")
    if number == 0:
        return "0"  # -0 too
    text = float.__repr__(number)
    if "e" not in text:  # 1e-4 <= |number| < 1e16: positional in both languages
        return text[:-2] if text.endswith(".0") else text
    sign = "-" if number < 0 else ""
    digits, point = _digits_and_point(text.lstrip("-"))
    return sign + _lay_out(digits, point)


def _digits_and_point(text: str) -> tuple[str, int]:
    """`repr` text → (significant digits, n) with value = 0.digits * 10**n."""
    mantissa, _, exponent_text = text.partition("e")
    exponent = int(exponent_text) if exponent_text else 0
    whole, _, fraction = mantissa.partition(".")
    whole = whole.lstrip("0")
    if whole:
        digits, point = whole + fraction, len(whole) + exponent
    else:
        significant = fraction.lstrip("0")
        digits, point = significant, exponent - (len(fraction) - len(significant))
    return digits.rstrip("0"), point


def _lay_out(digits: str, n: int) -> str:
    """ECMA-262 Number::toString steps 6-10, with k = len(digits)."""
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    exponent = n - 1
    sign = "+" if exponent > 0 else "-"
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{sign}{abs(exponent)}"


# Exact types only (a dict lookup per value, the hot path of every chain link);
# subclasses such as enums take the slower path through `_plain`.
_SCALARS: dict[type, Callable[[Any], str]] = {
    str: _encode_string,
    int: _integer,
    float: format_number,
    bool: _boolean,
    type(None): _null,
}
