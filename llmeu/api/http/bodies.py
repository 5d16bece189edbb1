"""Decoding a JSON request body: every failure is a 400 that says what was wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

from llmeu.errors import InvalidRequest
from llmeu.protocol.error_shape import describe_validation_error

T = TypeVar("T")


def decode_body(decode: Callable[[bytes], T], body: bytes) -> T:
    """`decode(body)`, with msgspec's errors turned into an InvalidRequest naming `param`.

    JSON nested past the interpreter's recursion limit is refused the same way.
    """
    try:
        return decode(body)
    except msgspec.ValidationError as error:
        message, param = describe_validation_error(str(error))
        raise InvalidRequest(f"Invalid request: {message}", param=param) from None
    except msgspec.DecodeError as error:
        raise InvalidRequest(f"Invalid JSON body: {error}", code="invalid_json") from None
    except RecursionError:
        raise InvalidRequest("Invalid JSON body: nested too deeply", code="invalid_json") from None
