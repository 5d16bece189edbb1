"""Which answer a call may reuse: its partition and its normalized request, as keys.

An entry is found by two things:

- its **partition**: the policy as applied (its id and digest: a changed
  policy, or a request narrowed to a stricter one, never reads what another
  cached) and the tenant (`scope: key`, the default: the calling API key;
  `scope: policy`: every key under the policy);
- the **request**, normalized: the surface, the model as routed (the facts of
  every endpoint the policy admits for it, so two aliases of one endpoint
  share answers and a changed catalog does not reuse old ones), the messages,
  tools, sampling parameters and response format — never the `llmeu` field,
  the stream flags, the end user, metadata or headers — encoded with sorted
  keys, so that the order of JSON fields changes nothing.

The exact key hashes all of it. The semantic cache compares only the last
user turn's text (`Cacheable.text`): everything else must be identical, so it
is the *scope* of the comparison, and a near prompt is looked for only among
the entries of that scope.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec
from msgspec import UNSET, Struct

from llmeu.calls.request import ChatRequest, EmbeddingInputs, TextPart, UserMessage
from llmeu.routing.cache_rules import CacheRules, CacheScope
from llmeu.routing.catalog import Endpoint


class Partition(Struct, frozen=True):
    """The answers a call may read and adds to."""

    policy_id: str
    policy_sha256: str
    tenant: str
    """The API key whose calls share the answers; empty when every key of the policy does."""

    @classmethod
    def of(cls, policy_id: str, policy_sha256: str, rules: CacheRules, key_id: str) -> Partition:
        return cls(policy_id, policy_sha256, key_id if rules.scope is CacheScope.KEY else "")


class Cacheable(Struct, frozen=True):
    """A request as the cache reads it: `material` is its normalized form but for the last
    user turn's `text` (None where that turn is not plain text, or for embeddings: then the
    semantic cache does not apply and `material` holds all). `tools` and `sampled` (a
    temperature other than 0, or none given: the upstream's default samples) keep a call
    out of the semantic cache unless the policy lets them in."""

    material: bytes
    text: str | None = None
    tools: bool = False
    sampled: bool = False


def chat_cacheable(chat: ChatRequest, extras: Sequence[object] = ()) -> Cacheable:
    """A chat-shaped request (chat completions, Responses, Messages mapped onto it);
    `extras` are what the surface's upstreams read beyond the `ChatRequest`."""
    text = _last_user_text(chat)
    messages = chat.messages if text is None else [*chat.messages[:-1], UserMessage(content="")]
    normal = msgspec.structs.replace(
        chat, model="", stream=UNSET, stream_options=UNSET, user=UNSET, metadata=UNSET,
        llmeu=UNSET, messages=messages,
    )  # fmt: skip
    temperature = chat.temperature
    return Cacheable(
        material=_normal((normal, [None if e is UNSET else e for e in extras])),
        text=text,
        tools=bool(chat.tools),
        sampled=not (isinstance(temperature, int | float) and temperature == 0),
    )


def embeddings_cacheable(inputs: EmbeddingInputs, dimensions: int | None) -> Cacheable:
    return Cacheable(_normal((list(inputs), dimensions)))


def _normal(value: object) -> bytes:
    return msgspec.json.encode(value, order="sorted")


def _last_user_text(chat: ChatRequest) -> str | None:
    last = chat.messages[-1]
    if not isinstance(last, UserMessage):
        return None
    if isinstance(last.content, str):
        return last.content
    if all(isinstance(part, TextPart) for part in last.content):
        return "".join(part.text for part in last.content if isinstance(part, TextPart))
    return None


def routed_model(endpoints: Sequence[Endpoint]) -> bytes:
    """The model as routed: what the routing block would say of each endpoint that may serve
    the call, in a fixed order. Made once for each set of endpoint objects (`_ROUTED`)."""
    ids = tuple(map(id, endpoints))
    known = _ROUTED.get(ids)
    if known is not None:
        return known[1]
    facts = sorted(
        "\x1f".join((e.endpoint_id, e.model, e.model_version, e.provider, e.inference_region,
                     e.sovereignty_class.value, e.retention.text))
        for e in endpoints
    )  # fmt: skip
    routed = "\x1e".join(facts).encode()
    if len(_ROUTED) >= _MEMO_LIMIT:
        _ROUTED.clear()
    _ROUTED[ids] = (tuple(endpoints), routed)
    return routed


_MEMO_LIMIT = 1024
_ROUTED: dict[tuple[int, ...], tuple[tuple[Endpoint, ...], bytes]] = {}
"""The model as routed, by the identities of the endpoints. An entry holds its endpoints, so
none of them is freed while it is here and no other object can take its identity: a
reloaded catalog's endpoints are other objects, with entries of their own. Endpoints are
frozen: their facts do not change under an entry."""

_PREFIXES: dict[tuple[str, str, str, str, bytes], hashlib._Hash] = {}
"""The exact key's hash over its first parts (partition, surface, model as routed), copied
for each call: the same few prefixes serve every call of a key."""


class Lookup:
    """One call's place in the cache: the key of its exact answer, and the scope in which a
    near prompt's answer may serve it.

    Built on every call under a caching policy, hit or miss: a plain class with slots, the
    exact key hashed once as the parts come (not framed into one buffer first)."""

    __slots__ = ("exact", "partition", "request", "routed", "surface")

    def __init__(self, partition: Partition, surface: str, routed: bytes, request: Cacheable):
        self.partition = partition
        self.surface = surface
        self.routed = routed
        self.request = request
        digest = self._scoping()
        _frame(digest, (request.text or "").encode())
        self.exact: str = digest.hexdigest()

    @property
    def scope(self) -> str:
        """Everything the exact key holds but the last user turn's text (semantic cache)."""
        return self._scoping().hexdigest()

    def _scoping(self) -> hashlib._Hash:
        """SHA-256 of the parts, each length-prefixed so that no two sequences hash alike."""
        p = self.partition
        parts = (p.policy_id, p.policy_sha256, p.tenant, self.surface, self.routed)
        prefix = _PREFIXES.get(parts)
        if prefix is None:
            prefix = hashlib.sha256()
            for part in parts[:4]:
                _frame(prefix, part.encode())
            _frame(prefix, self.routed)
            if len(_PREFIXES) >= _MEMO_LIMIT:
                _PREFIXES.clear()
            _PREFIXES[parts] = prefix
        digest = prefix.copy()
        _frame(digest, self.request.material)
        return digest


def _frame(digest: hashlib._Hash, part: bytes) -> None:
    digest.update(len(part).to_bytes(8, "big"))
    digest.update(part)
