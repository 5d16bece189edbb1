"""Every administrative change through the platform API is one admin event, on SQLite and on
PostgreSQL: the right actor, role, action, target, digests and address; the listing and its
filters; and usage, traces and exports that never count an event as a call."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from llmeu.api.app import App
from llmeu.evidence.admin_events import object_digest
from llmeu.ledger.secrets import hash_token
from tests.platform.conftest import Client, TenantFactory, chat, client_for

EVENTS = "/v1/platform/admin-events"
POLICY = {"allow_classes": ["eu_sovereign"], "max_retention": "P0D"}
ADDRESS = "127.0.0.1"  # what httpx.ASGITransport gives as the client's address


async def events(admin: Client, **query: Any) -> list[dict[str, Any]]:
    response = await admin.get(EVENTS, params={"limit": 500, **query})
    assert response.status_code == 200, response.text
    return list(reversed(response.json()["data"]))  # oldest first


async def one_new(admin: Client, before: list[dict[str, Any]]) -> dict[str, Any]:
    """The one event recorded since `before` was listed."""
    after = await events(admin)
    known = {e["id"] for e in before}
    new = [e for e in after if e["id"] not in known]
    assert len(new) == 1, new
    return new[0]


def assert_event(
    event: dict[str, Any], action: str, target: str | None, before: Any, after: Any,
    actor: str = "admin", role: str | None = "admin",
) -> None:  # fmt: skip
    assert (event["action"], event["target"]) == (action, target)
    assert (event["actor"], event["role"], event["source"]) == (actor, role, ADDRESS)
    assert event["before_sha256"] == object_digest(before)
    assert event["after_sha256"] == object_digest(after)
    assert isinstance(event["chain_seq"], int)


async def test_every_change_is_one_event(admin: Client, app: App, tenant: TenantFactory) -> None:
    seen = await events(admin)
    created = await admin.post("/v1/platform/keys", json={"name": "ci", "purpose": "tests"})
    created_key = created.json()
    public = {k: v for k, v in created_key.items() if k != "key"}
    event = await one_new(admin, seen)
    assert_event(event, "key.create", created_key["id"], None, public)
    assert created_key["key"] not in json.dumps(event)
    assert hash_token(created_key["key"]) not in json.dumps(event)

    seen = await events(admin)
    revoked = await admin.delete(f"/v1/platform/keys/{created_key['id']}")
    assert revoked.status_code == 200, revoked.text
    listed = {k["id"]: k for k in (await admin.get("/v1/platform/keys")).json()["data"]}
    assert_event(await one_new(admin, seen), "key.revoke", created_key["id"], public,
                 listed[created_key["id"]])  # fmt: skip

    body = POLICY
    seen = await events(admin)
    put = await admin.put("/v1/platform/policies/audited", json=body)
    assert put.status_code == 200, put.text
    assert_event(await one_new(admin, seen), "policy.put", "audited", None, put.json())
    seen = await events(admin)
    again = await admin.put("/v1/platform/policies/audited", json={**body, "max_retention": "P1D"})
    assert_event(await one_new(admin, seen), "policy.put", "audited", put.json(), again.json())

    seen = await events(admin)
    reloaded = await admin.post("/v1/platform/reload")
    assert reloaded.status_code == 200, reloaded.text
    event = await one_new(admin, seen)
    assert (event["action"], event["target"]) == ("config.reload", "configuration")
    assert event["before_sha256"] == event["after_sha256"] is not None  # the same file

    seen = await events(admin)
    cleared = (await admin.delete("/v1/platform/cache")).json()
    assert_event(await one_new(admin, seen), "cache.clear", "answer-cache", None,
                 {"entries": cleared["entries"]})  # fmt: skip

    seen = await events(admin)
    hold = (await admin.post("/v1/platform/holds", json={"reason": "case 7"})).json()
    assert_event(await one_new(admin, seen), "hold.place", hold["id"], None, hold)
    seen = await events(admin)
    released = (await admin.delete(f"/v1/platform/holds/{hold['id']}")).json()
    assert_event(await one_new(admin, seen), "hold.release", hold["id"], hold, released)

    seen = await events(admin)
    erased = (await admin.delete("/v1/platform/subjects/user-42")).json()
    subject = hashlib.sha256(b"user-42").hexdigest()
    event = await one_new(admin, seen)
    assert_event(event, "subject.erase", subject, None, erased)
    assert "user-42" not in json.dumps(event)

    seen = await events(admin)
    async with client_for(app, "sk-llmeu-kforged-" + "0" * 40) as forged:
        assert (await forged.get("/v1/platform/me")).status_code == 401
    event = await one_new(admin, seen)
    assert_event(event, "auth.failed", "kforged", None, None, actor="unauthenticated", role=None)

    seen = await events(admin)
    made = (await admin.post("/v1/platform/teams", json={"name": "search"})).json()
    assert_event(await one_new(admin, seen), "team.create", made["id"], None, made)
    seen = await events(admin)
    changed = (await admin.patch(f"/v1/platform/teams/{made['id']}", json={"name": "s2"})).json()
    assert_event(await one_new(admin, seen), "team.update", made["id"], made, changed)
    seen = await events(admin)
    assert (await admin.delete(f"/v1/platform/teams/{made['id']}")).status_code == 200
    assert_event(await one_new(admin, seen), "team.delete", made["id"], changed, None)

    # Refused or failed changes record nothing: a tenant's, an invalid policy, no key.
    seen = await events(admin)
    client, _ = await tenant("bot")
    assert (await client.post("/v1/platform/reload")).status_code == 403
    assert (
        await admin.put("/v1/platform/policies/bad", json={"allow_classes": 3})
    ).status_code == 400
    assert (await admin.delete("/v1/platform/keys/knone")).status_code == 404
    async with client_for(app, "") as nobody:
        assert (await nobody.get("/v1/platform/me")).status_code == 401
    tenant_created = await one_new(admin, seen)  # the tenant factory's own key.create
    assert tenant_created["action"] == "key.create"


async def test_the_listing_filters_and_pages(admin: Client, tenant: TenantFactory) -> None:
    for name in ("a", "b", "c"):
        await tenant(name)
    put = await admin.put("/v1/platform/policies/p1", json=POLICY)
    assert put.status_code == 200, put.text
    created = await events(admin, action="key.create")
    assert len(created) == 3 and all(e["action"] == "key.create" for e in created)
    assert [e["action"] for e in await events(admin, action="policy.put")] == ["policy.put"]
    assert await events(admin, actor="kunknown") == []
    assert len(await events(admin, actor="admin")) == 4
    middle = created[1]["at"]
    window = await events(admin, **{"from": str(middle), "to": str(created[2]["at"])})
    assert [e["id"] for e in window] == [created[1]["id"]]
    seqs = [e["chain_seq"] for e in await events(admin)]
    assert seqs == sorted(seqs)

    pages: list[str] = []
    cursor = None
    while True:
        params = {"limit": "1", **({"cursor": cursor} if cursor else {})}
        page = (await admin.get(EVENTS, params=params)).json()
        pages += [e["id"] for e in page["data"]]
        cursor = page["next_cursor"]
        if not page["has_more"]:
            break
    assert pages == [e["id"] for e in reversed(await events(admin))]

    for query, param in (("limit=0", "limit"), ("limit=x", "limit"), ("cursor=%%%", "cursor"),
                         ("from=yesterday", "from")):  # fmt: skip
        bad = await admin.get(f"{EVENTS}?{query}")
        assert bad.status_code == 400, bad.text
        assert bad.json()["error"]["param"] == param
    client, _ = await tenant("d")
    denied = await client.get(EVENTS)
    assert denied.status_code == 403
    assert denied.json()["error"]["code"] == "role_forbidden"


async def test_events_never_count_as_calls(
    admin: Client, app: App, tenant: TenantFactory, tmp_path: Path
) -> None:
    client, key = await tenant("bot")
    answered = await chat(client)
    assert answered.status_code == 200, answered.text
    usage = (await admin.get("/v1/platform/usage", params={"group_by": "key"})).json()
    traces = (await admin.get("/v1/platform/traces")).json()
    calls = (await admin.get("/v1/platform/exports/calls.jsonl")).text

    assert (await admin.put("/v1/platform/policies/p2", json=POLICY)).status_code == 200
    await admin.post("/v1/platform/holds", json={"reason": "r"})
    await admin.post("/v1/platform/reload")
    recorded = await events(admin)
    assert len(recorded) == 4  # the tenant's key, then the three changes

    assert (await admin.get("/v1/platform/usage", params={"group_by": "key"})).json() == usage
    assert (await admin.get("/v1/platform/traces")).json() == traces
    assert (await admin.get("/v1/platform/exports/calls.jsonl")).text == calls
    assert [t["id"] for t in traces["data"]] == [answered.json()["llmeu"]["trace_id"]]
    for event in recorded:
        response = await admin.get(f"/v1/platform/traces/{event['id']}")
        assert response.status_code == 404
    assert set(await app.gateway.store.spend_by_key()) == {key["id"]}

    archive = await admin.get("/v1/platform/exports/admin-events.jsonl")
    assert archive.headers["content-type"] == "application/x-ndjson"
    assert [json.loads(line) for line in archive.text.splitlines()] == recorded
    if app.gateway.settings.database_url is None:  # the CLI reads the same SQLite file
        out = tmp_path / "exports"
        done = subprocess.run(
            [sys.executable, "-m", "llmeu.cli.main", "audit", "export",
             "--from", "2000-01-01", "--to", "2100-01-01", "--out", str(out),
             "--data-dir", str(tmp_path), "--config", str(tmp_path / "config.yaml")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        lines = (out / "admin-events.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in lines] == recorded
        exported = [json.loads(line)["trace_id"] for line in (out / "calls.jsonl").read_text()
                    .splitlines()]  # fmt: skip
        assert exported == [answered.json()["llmeu"]["trace_id"]]
