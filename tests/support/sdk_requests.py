"""Request bodies as the official SDKs send them, built from the SDKs' own request types.

`fields(params)` reads a request's TypedDict (`openai`'s
`CompletionCreateParams…`, `anthropic`'s `MessageCreateParams…`) at run time,
`variants(hint)` makes example values of a field's type — every alternative
of a union, every value of a `Literal`, a nested TypedDict with all its keys
and once per alternative of each of them — and `SdkBodies` sends them through
the SDK's own `create` over a transport that only records the body: what
reaches llmeu is what the SDK puts on the wire (header parameters such as
Anthropic's `workspace_id` leave the body, aliases are applied).
"""

from __future__ import annotations

import collections.abc
import contextlib
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import httpx2
import openai
from typing_extensions import is_typeddict

_FIRST_STRING = "f"
"""Every generated string: also the name of the one tool a request may need to name."""


def fields(params: type[Any]) -> dict[str, Any]:
    """A request TypedDict's keys and their type hints."""
    return typing.get_type_hints(params)


def _strip(hint: Any) -> Any:
    while typing.get_origin(hint) in (typing.Required, typing.NotRequired, typing.Annotated):
        hint = typing.get_args(hint)[0]
    return hint


def variants(hint: Any, depth: int = 0) -> list[Any]:
    """Example values of `hint`, one per alternative a client could send."""
    hint = _strip(hint)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return [v for arg in args if arg is not type(None) for v in variants(arg, depth)]
    if origin is typing.Literal:
        return list(args)
    if is_typeddict(hint):
        return _typed_dicts(hint, depth)
    if origin in (dict, collections.abc.Mapping):
        return [{_FIRST_STRING: first(args[1], depth + 1)}]
    if isinstance(origin, type) and issubclass(origin, collections.abc.Iterable):
        return [[value] for value in variants(args[0], depth + 1)]
    if hint is bool:
        return [True, False]
    if hint is int:
        return [1]
    if hint is float:
        return [0.5]
    if hint is str:
        return [_FIRST_STRING]
    if hint is object or hint is Any:  # in these types: a JSON schema, or any JSON
        return [{}]
    raise TypeError(f"no example for {hint!r}")


def first(hint: Any, depth: int = 0) -> Any:
    return variants(hint, depth)[0]


def _typed_dicts(params: type[Any], depth: int) -> list[dict[str, Any]]:
    """The TypedDict with every key (its first example); near the top, once more per other
    alternative of each key."""
    hints = fields(params)
    whole = {name: first(hint, depth + 1) for name, hint in hints.items()}
    if depth > 1:
        return [whole]
    out = [whole]
    for name, hint in hints.items():
        out += [{**whole, name: value} for value in variants(hint, depth + 1)[1:]]
    return out


def union_members(hint: Any) -> list[Any]:
    """The alternatives of a (list of a) union of TypedDicts: e.g. every kind of tool."""
    hint = _strip(hint)
    while typing.get_origin(hint) not in (typing.Union, types.UnionType) and typing.get_args(hint):
        hint = typing.get_args(hint)[0]
    return [arg for arg in typing.get_args(hint) if is_typeddict(arg)]


@dataclass
class SdkBodies:
    """The bodies an SDK method sends: `body(**kwargs)` calls `create(**kwargs)` and returns
    the JSON it would have posted."""

    create: Callable[..., Any]
    _sent: list[bytes]

    def body(self, **kwargs: Any) -> dict[str, Any]:
        self._sent.clear()
        with contextlib.suppress(openai.APIConnectionError, anthropic.APIConnectionError):
            self.create(**kwargs)
        assert len(self._sent) == 1, "the SDK sent no request"
        sent: dict[str, Any] = json.loads(self._sent[0])
        return sent


def openai_bodies(method: Callable[[openai.OpenAI], Callable[..., Any]]) -> SdkBodies:
    sent: list[bytes] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        raise httpx.ConnectError("recorded, not sent", request=request)  # nothing answers

    http = httpx.Client(transport=httpx.MockTransport(record))
    client = openai.OpenAI(base_url="http://sdk.invalid/v1", api_key="k", max_retries=0,
                           http_client=http)  # fmt: skip
    return SdkBodies(method(client), sent)


def anthropic_bodies(method: Callable[[anthropic.Anthropic], Callable[..., Any]]) -> SdkBodies:
    """The same over the `httpx2` client the `anthropic` SDK is built on."""
    sent: list[bytes] = []

    def record(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        raise httpx2.ConnectError("recorded, not sent", request=request)

    http = httpx2.Client(transport=httpx2.MockTransport(record))
    client = anthropic.Anthropic(base_url="http://sdk.invalid", api_key="k", max_retries=0,
                                 http_client=http)  # fmt: skip
    return SdkBodies(method(client), sent)
