"""The policies in force and the effective policy of a request.

Policies come from the built-in set, the configuration file, and the
platform API (stored in the ledger; they override the first two by id).
A request narrows its key's policy with the `llmeu` body field and/or the
`x-llmeu-policy` header (a policy id, or a JSON object of the same shape);
the header applies first, the body narrows further.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping

import msgspec

from llmeu.calls.request import RoutingRequest
from llmeu.errors import ConfigError, InvalidRequest
from llmeu.ledger.store import Store
from llmeu.routing.config_file import parse_policy
from llmeu.routing.policy import Narrowing, Policy, narrow, policy_document

_routing_request = msgspec.json.Decoder(RoutingRequest)
log = logging.getLogger("llmeu.policies")


class PolicyBook:
    def __init__(self, base: Mapping[str, Policy], default_policy: str, store: Store):
        self._base = dict(base)
        self._stored: dict[str, Policy] = {}
        self.default_policy = default_policy
        self._store = store
        self.policies: dict[str, Policy] = dict(base)
        # Loads and puts take turns: a load that read the table before a put
        # committed must not overwrite the policy the put installed.
        self._turn = asyncio.Lock()

    def configure(self, base: Mapping[str, Policy], default_policy: str) -> list[str]:
        """The configured policies after a reload; stored ones still override them by id.
        Returns the ids of the policies this changed or removed."""
        self._base = dict(base)
        self.default_policy = default_policy
        return self._install({**self._base, **self._stored})

    async def load(self) -> list[str]:
        """The stored policies over the configured ones. A stored policy that this version
        refuses (stored before a rule was tightened) is left out and logged, never a
        reason not to start; keys under it are refused as under an unknown policy.
        Returns the ids of the policies this changed or removed."""
        async with self._turn:
            stored: dict[str, Policy] = {}
            for pid, body in (await self._store.list_policies()).items():
                try:
                    stored[pid] = parse_policy(json.dumps({"policy_id": pid, **body}))
                except ConfigError as error:
                    log.error("stored policy %r is invalid and left out: %s", pid, error)
            self._stored = stored
            return self._install({**self._base, **self._stored})

    def _install(self, policies: dict[str, Policy]) -> list[str]:
        """Put `policies` in force; the ids of those it changed or removed (what the answer
        cache kept under them goes)."""
        changed = [pid for pid, policy in self.policies.items() if policies.get(pid) != policy]
        self.policies = policies
        return changed

    def get(self, policy_id: str) -> Policy | None:
        return self.policies.get(policy_id)

    async def put(self, policy: Policy, now: float) -> None:
        body = policy_document(policy)
        body.pop("policy_id")
        async with self._turn:
            await self._store.put_policy(policy.policy_id, body, now)
            self._stored[policy.policy_id] = policy
            self._install({**self._base, **self._stored})

    def effective(
        self, key_policy_id: str, body_field: RoutingRequest | None, header: str | None
    ) -> Policy:
        policy = self._key_policy(key_policy_id)
        if header:
            policy = narrow(policy, _header_narrowing(header), self.policies)
        if body_field is not None:
            policy = narrow(policy, _body_narrowing(body_field), self.policies)
        return policy

    def effective_for_tools(
        self,
        key_policy_id: str,
        allow_mcp_servers: tuple[str, ...],
        allow_tools: tuple[str, ...],
        header: str | None,
    ) -> Policy:
        """The effective policy of an MCP request: the key's policy narrowed by the key's own
        patterns (`key_narrowing`), then by the request's `x-llmeu-policy` header."""
        policy = key_narrowing(self._key_policy(key_policy_id), allow_mcp_servers, allow_tools)
        if header:
            policy = narrow(policy, _header_narrowing(header), self.policies)
        return policy

    def _key_policy(self, key_policy_id: str) -> Policy:
        base = self.policies.get(key_policy_id)
        if base is None:
            raise InvalidRequest(
                f"the key's policy `{key_policy_id}` is not defined", code="unknown_policy"
            )
        return base


def key_narrowing(
    policy: Policy, allow_mcp_servers: tuple[str, ...], allow_tools: tuple[str, ...]
) -> Policy:
    """`policy` narrowed by a key's own patterns of tool servers and tools (an API key may
    carry them: they narrow its policy on every MCP call). A key's list that is not within
    its policy's is refused as a request's would be, naming `key.allow_tools`."""
    if not allow_mcp_servers and not allow_tools:
        return policy
    narrowing = Narrowing(
        allow_mcp_servers=list(allow_mcp_servers), allow_tools=list(allow_tools), source="key"
    )
    return narrow(policy, narrowing, {})


def _body_narrowing(field: RoutingRequest, source: str = "llmeu") -> Narrowing:
    policy_id = field.policy_id if isinstance(field.policy_id, str) else None
    return Narrowing.of(field, policy_id=policy_id, source=source)


def _header_narrowing(header: str) -> Narrowing:
    text = header.strip()
    if not text.startswith("{"):
        return Narrowing(policy_id=text, source="x-llmeu-policy")
    try:
        field = _routing_request.decode(text)
    except msgspec.DecodeError as error:
        raise InvalidRequest(
            f"invalid x-llmeu-policy header: {error}", param="x-llmeu-policy"
        ) from None
    return _body_narrowing(field, source="x-llmeu-policy")
