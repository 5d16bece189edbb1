"""JCS (RFC 8785): the RFC's own examples, its number samples, and two independent oracles."""

from __future__ import annotations

import json
import random
import shutil
import struct
import subprocess

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from llmeu.evidence.jcs import canonical_json, format_number

# The input/output pairs that RFC 8785's author publishes with the RFC
# (the `testdata` of the reference implementations): input as JSON text,
# expected canonical output as text (encoded to UTF-8 for comparison).
RFC8785_VECTORS = {
    "arrays": (
        '[\n  56,\n  {\n    "d": true,\n    "10": null,\n    "1": [ ]\n  }\n]\n',
        '[56,{"1":[],"10":null,"d":true}]',
    ),
    "french": (
        '{\n  "peach": "This sorting order",\n  "p\u00e9ch\u00e9": "is wrong according to French",\n'
        '  "p\u00eache": "but canonicalization MUST",\n  "sin":   "ignore locale"\n}\n',
        '{"peach":"This sorting order","p\u00e9ch\u00e9":"is wrong according to French",'
        '"p\u00eache":"but canonicalization MUST","sin":"ignore locale"}',
    ),
    "structures": (
        '{\n  "1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0},\n  "10": { },\n  "": "empty",\n'
        '  "a": { },\n  "111": [ {"e": "yes","E": "no" } ],\n  "A": { }\n}',
        '{"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],'
        '"A":{},"a":{}}',
    ),
    "unicode": (
        '{\n  "Unnormalized Unicode":"A\\u030a"\n}\n',
        '{"Unnormalized Unicode":"A\u030a"}',
    ),
    "values": (
        '{\n  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],\n'
        '  "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n'
        '  "literals": [null, true, false]\n}',
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    ),
    "weird": (
        '{\n  "\\u20ac": "Euro Sign",\n  "\\r": "Carriage Return",\n  "\\u000a": "Newline",\n'
        '  "1": "One",\n  "\\u0080": "Control\\u007f",\n  "\\ud83d\\ude02": "Smiley",\n'
        '  "\\u00f6": "Latin Small Letter O With Diaeresis",\n'
        '  "\\ufb33": "Hebrew Letter Dalet With Dagesh",\n  "</script>": "Browser Challenge"\n}\n',
        '{"\\n":"Newline","\\r":"Carriage Return","1":"One","</script>":"Browser Challenge",'
        '"\u0080":"Control\u007f","\u00f6":"Latin Small Letter O With Diaeresis",'
        '"\u20ac":"Euro Sign","\U0001f602":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    ),
}

# RFC 8785 Appendix B: IEEE 754 doubles (hex) and their serialisation.
RFC8785_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def double(hex_bits: str) -> float:
    return float(struct.unpack(">d", bytes.fromhex(hex_bits))[0])


@pytest.mark.parametrize(("source", "expected"), RFC8785_VECTORS.values(), ids=RFC8785_VECTORS)
def test_rfc8785_vectors(source: str, expected: str) -> None:
    assert canonical_json(json.loads(source)) == expected.encode("utf-8")


@pytest.mark.parametrize(("bits", "expected"), RFC8785_NUMBERS, ids=[b for b, _ in RFC8785_NUMBERS])
def test_rfc8785_number_samples(bits: str, expected: str) -> None:
    assert format_number(double(bits)) == expected
    assert canonical_json([double(bits)]) == f"[{expected}]".encode()


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), -float("inf"), 2**53, -(2**53), "\ud800", {1: "x"}, b"x", {1.5}],
    ids=["nan", "inf", "-inf", "2**53", "-2**53", "lone-surrogate", "int-key", "bytes", "set"],
)
def test_refuses_what_jcs_cannot_represent(value: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        canonical_json(value)


def test_integral_floats_and_ints_are_one_number() -> None:
    assert (
        canonical_json({"a": 1.0, "b": -0.0, "c": 1e16}) == b'{"a":1,"b":0,"c":10000000000000000}'
    )
    assert canonical_json({"a": 1, "b": 0}) == canonical_json({"a": 1.0, "b": 0.0})


def test_subclasses_serialise_as_their_base_value() -> None:
    from enum import IntEnum, StrEnum

    class Status(StrEnum):
        DONE = "completed"

    class Code(IntEnum):
        OK = 200

    assert canonical_json([Status.DONE, Code.OK, (1, 2)]) == b'["completed",200,[1,2]]'


def _random_doubles(count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    values = []
    while len(values) < count:
        value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if value == value and abs(value) != float("inf"):
            values.append(value)
    # Short decimals at every decimal exponent: the boundaries of each notation.
    for exponent in range(-325, 309):
        for mantissa in ("1", "1.5", "9.999", "123456789", "5"):
            value = float(f"{mantissa}e{exponent}")
            if abs(value) != float("inf"):
                values.append(value)
    return values


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js as the ECMAScript oracle")
def test_numbers_match_ecmascript_itself() -> None:
    """JCS numbers are defined as ECMAScript's Number.prototype.toString: ask ECMAScript."""
    values = _random_doubles(20_000, seed=8785)
    script = (
        "const view = new DataView(new ArrayBuffer(8));"
        "const lines = require('fs').readFileSync(0, 'utf8').trim().split('\\n');"
        "process.stdout.write(lines.map(h => { view.setBigUint64(0, BigInt('0x' + h));"
        " return String(view.getFloat64(0)); }).join('\\n'));"
    )
    bits = "\n".join(struct.pack(">d", v).hex() for v in values)
    result = subprocess.run(
        ["node", "-e", script], input=bits, capture_output=True, text=True, check=True, timeout=60
    )
    expected = ["0" if e == "-0" else e for e in result.stdout.split("\n")]
    mismatches = [(v, e) for v, e in zip(values, expected, strict=True) if format_number(v) != e]
    assert mismatches == []


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(JSON_VALUES)
def test_agrees_with_the_rfc8785_package(value: object) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)  # type: ignore[arg-type]
