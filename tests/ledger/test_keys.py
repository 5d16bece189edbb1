"""Keys and stored policies: create, read, list, revoke; secrets only as hashes."""

from __future__ import annotations

import pytest

from llmeu.errors import DatabaseError, DatabaseUnavailable
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.secrets import hash_token, key_id_of, matches, new_key_id, new_token
from llmeu.ledger.store import Store


def key(key_id: str, created_at: float, **fields: object) -> ApiKey:
    token = new_token(key_id)
    return ApiKey(key_id=key_id, name=f"name of {key_id}", secret_hash=hash_token(token),
                  policy_id="eu-strict", is_admin=False, created_at=created_at,
                  **fields)  # type: ignore[arg-type]  # fmt: skip


async def test_keys_are_created_listed_and_read_back(store: Store) -> None:
    first = key("kfirst", 10.0, budget_eur=5.0, rpm_limit=60, tpm_limit=1000,
                allow_mcp_servers=("crm", "docs-*"), allow_tools=("crm__lookup",),
                role="auditor")  # fmt: skip
    second = key("ksecond", 5.0)
    await store.insert_key(first)
    await store.insert_key(second)
    assert await store.get_key("kfirst") == first
    assert await store.get_key("knone") is None
    assert [k.key_id for k in await store.list_keys()] == ["ksecond", "kfirst"]


async def test_a_key_id_is_unique(store: Store) -> None:
    await store.insert_key(key("ktwice", 1.0))
    with pytest.raises(DatabaseError) as refused:
        await store.insert_key(key("ktwice", 2.0))
    assert not isinstance(refused.value, DatabaseUnavailable)


async def test_revoking_is_recorded_once(store: Store) -> None:
    await store.insert_key(key("kgone", 1.0))
    assert await store.revoke_key("kgone", 50.0) is True
    assert await store.revoke_key("kgone", 60.0) is False
    assert await store.revoke_key("knone", 60.0) is False
    revoked = await store.get_key("kgone")
    assert revoked is not None and revoked.revoked_at == 50.0


async def test_upserting_the_admin_key_replaces_its_hash_and_reinstates_it(store: Store) -> None:
    old = ApiKey("admin", "admin", hash_token("first"), "eu-strict", True, 1.0)
    await store.upsert_key(old)
    await store.revoke_key("admin", 2.0)
    await store.upsert_key(ApiKey("admin", "admin", hash_token("second"), "eu", True, 3.0))
    admin = await store.get_key("admin")
    assert admin is not None
    assert matches("second", admin.secret_hash) and not matches("first", admin.secret_hash)
    assert admin.revoked_at is None and admin.policy_id == "eu" and admin.created_at == 1.0


async def test_policies_are_stored_and_replaced(store: Store) -> None:
    await store.put_policy("team-a", {"allow_classes": ["on_premise"]}, 1.0)
    await store.put_policy("team-b", {"allow_classes": ["eu_sovereign"]}, 1.0)
    await store.put_policy("team-a", {"allow_classes": ["eu_resident"]}, 2.0)
    assert await store.list_policies() == {
        "team-a": {"allow_classes": ["eu_resident"]},
        "team-b": {"allow_classes": ["eu_sovereign"]},
    }


def test_tokens_name_their_key_and_are_compared_by_hash() -> None:
    key_id = new_key_id()
    token = new_token(key_id)
    assert key_id_of(token) == key_id
    assert key_id_of("any string an operator chose") == "admin"
    assert key_id_of("sk-llmeu-") == "admin"
    assert matches(token, hash_token(token))
    assert not matches(token + "x", hash_token(token))
    assert hash_token(token) != token and token not in hash_token(token)
