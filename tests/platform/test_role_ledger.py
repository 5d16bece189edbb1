"""A key's role is the ledger's: it survives a restart, on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from llmeu.api.app import create_app
from tests.platform.conftest import chat, client_for, settings_for
from tests.support.processes import ADMIN_KEY, FakeUpstream


async def test_a_keys_role_survives_a_restart(
    tmp_path: Path, database_url: str, fake_upstream: FakeUpstream
) -> None:
    first = create_app(settings_for(tmp_path, database_url, fake_upstream))
    await first.gateway.start()
    try:
        async with client_for(first, ADMIN_KEY) as admin:
            keys = {}
            for role in (None, "auditor", "dpo"):
                made = await admin.post("/v1/platform/keys", json={"role": role})
                assert made.status_code == 201, made.text
                keys[role] = made.json()
        async with client_for(first, keys[None]["key"]) as member:
            assert (await chat(member)).status_code == 200
        await first.gateway.ledger.flush()
    finally:
        await first.gateway.stop()
    auditor, dpo = keys["auditor"], keys["dpo"]

    again = create_app(settings_for(tmp_path, database_url, fake_upstream))
    await again.gateway.start()
    try:
        async with client_for(again, auditor["key"]) as client:
            me = (await client.get("/v1/platform/me")).json()
            assert (me["id"], me["role"]) == (auditor["id"], "auditor")
            traces = (await client.get("/v1/platform/traces")).json()["data"]
            assert len(traces) == 1
            refused = await client.put("/v1/platform/policies/x", json={"allow_classes": []})
            assert refused.status_code == 403
            assert refused.json()["error"]["code"] == "role_forbidden"
        async with client_for(again, dpo["key"]) as client:
            assert (await client.get("/v1/platform/holds")).status_code == 200
            assert (await client.get("/v1/platform/keys")).status_code == 403
        stored = await again.gateway.store.get_key(auditor["id"])
        assert stored is not None and stored.role == "auditor" and not stored.is_admin
    finally:
        await again.gateway.stop()
