"""`llmeu keys|usage|traces|ledger` against a real gateway process (and its database)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.databases import fetch, postgres_database_sync
from tests.support.processes import REPO, FakeUpstream, Gateway, config_yaml, fake_endpoint


def llmeu(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("LLMEU_")}
    return subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", *args],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
        env={**inherited, **(env or {})},
    )  # fmt: skip


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), default_policy="eu-store")
    )


@pytest.fixture
def env(gateway: Gateway) -> dict[str, str]:
    """The connection through the environment (the options are tested separately)."""
    return {"LLMEU_BASE_URL": gateway.base_url, "LLMEU_API_KEY": gateway.admin_key}


def chat(gateway: Gateway, token: str, model: str = "fake-model") -> httpx.Response:
    return httpx.post(f"{gateway.base_url}/chat/completions",
                      headers={"authorization": f"Bearer {token}"},
                      json={"model": model, "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip


def test_keys_create_list_revoke(gateway: Gateway, env: dict[str, str]) -> None:
    created = as_json(llmeu("keys", "create", "--name", "ci", "--rpm", "600", "--budget-eur",
                            "12.5", "--json", env=env))  # fmt: skip
    assert created["name"] == "ci" and created["rpm_limit"] == 600
    assert created["budget_eur"] == 12.5 and created["policy_id"] == "eu-store"
    assert chat(gateway, created["key"]).status_code == 200

    table = llmeu("keys", "create", "--name", "second", "--policy", "eu-strict", env=env)
    assert table.returncode == 0, table.stderr
    assert "second" in table.stdout and "eu-strict" in table.stdout
    assert "secret (shown once, store it now): sk-llmeu-" in table.stdout

    listed = as_json(llmeu("keys", "list", "--json", env=env))
    assert {"ci", "second", "admin"} <= {k["name"] for k in listed["data"]}
    assert created["key"] not in json.dumps(listed)
    rows = llmeu("keys", "list", env=env).stdout
    assert created["id"] in rows and "ci" in rows

    revoked = llmeu("keys", "revoke", created["id"], env=env)
    assert revoked.returncode == 0 and revoked.stdout.strip() == f"revoked {created['id']}"
    assert chat(gateway, created["key"]).status_code == 401
    again = llmeu("keys", "revoke", created["id"], env=env)
    assert again.returncode == 1
    assert f"no active key `{created['id']}`" in again.stderr and "404" in again.stderr


def test_keys_create_with_a_role_the_caller_may_grant(env: dict[str, str]) -> None:
    operator = as_json(llmeu("keys", "create", "--name", "ops", "--role", "operator", "--json",
                             env=env))  # fmt: skip
    assert operator["role"] == "operator"
    as_operator = {**env, "LLMEU_API_KEY": operator["key"]}
    member = as_json(llmeu("keys", "create", "--role", "member", "--json", env=as_operator))
    assert member["role"] == "member"
    refused = llmeu("keys", "create", "--role", "admin", env=as_operator)
    assert refused.returncode == 1
    assert "403 the `operator` role may not create a key of role `admin`" in refused.stderr
    rows = llmeu("keys", "list", env=env).stdout.splitlines()
    assert any(row.split()[:4] == [operator["id"], "ops", "eu-store", "operator"] for row in rows)


def test_teams_keys_in_them_and_usage_by_team(gateway: Gateway, env: dict[str, str]) -> None:
    team = as_json(llmeu("teams", "create", "--name", "search", "--budget-eur-month", "200",
                         "--rpm", "600", "--members", "ana@example.eu, bo@example.eu", "--json",
                         env=env))  # fmt: skip
    team_id = team["id"]
    assert team["members"] == ["ana@example.eu", "bo@example.eu"]
    assert (team["rpm_limit"], team["tpm_limit"], team["spent_eur_month"]) == (600, None, 0)
    key = as_json(llmeu("keys", "create", "--team", team_id, "--json", env=env))
    assert key["team_id"] == team_id
    assert chat(gateway, key["key"]).status_code == 200
    usage = as_json(llmeu("usage", "--group-by", "team", "--json", env=env))
    assert {r["team"]: r["requests"] for r in usage["data"]} == {team_id: 1}
    table = llmeu("usage", "--group-by", "team", env=env)
    assert table.returncode == 0 and team_id in table.stdout

    shown = llmeu("teams", "show", team_id, env=env)
    assert shown.returncode == 0 and f"keys: {key['id']}" in shown.stdout
    changed = as_json(llmeu("teams", "update", team_id, "--no-budget", "--no-rpm", "--tpm",
                            "90000", "--json", env=env))  # fmt: skip
    assert changed["budget_eur_month"] is None and changed["name"] == "search"
    assert (changed["rpm_limit"], changed["tpm_limit"]) == (None, 90000)
    assert changed["spent_eur_month"] == pytest.approx(0.000023)  # the key's one call
    listed = llmeu("teams", "list", env=env)
    assert any(row.split()[:2] == [team_id, "search"] for row in listed.stdout.splitlines())
    kept = llmeu("teams", "delete", team_id, env=env)
    assert kept.returncode == 1 and "still has active keys" in kept.stderr
    assert llmeu("keys", "revoke", key["id"], env=env).returncode == 0
    deleted = llmeu("teams", "delete", team_id, env=env)
    assert deleted.returncode == 0 and deleted.stdout.strip() == f"deleted {team_id}"


def test_keys_create_reports_the_api_error(env: dict[str, str]) -> None:
    done = llmeu("keys", "create", "--policy", "nope", env=env)
    assert done.returncode == 1
    assert "400 unknown policy `nope` (param `policy_id`)" in done.stderr


def test_usage_table_and_json(gateway: Gateway, env: dict[str, str]) -> None:
    assert chat(gateway, gateway.admin_key).status_code == 200
    assert chat(gateway, gateway.admin_key, model="unknown").status_code == 404
    usage = as_json(llmeu("usage", "--group-by", "status", "--json", env=env))
    assert {r["status"]: r["requests"] for r in usage["data"]} == {"completed": 1, "rejected": 1}
    assert usage["totals"]["requests"] == 2
    table = llmeu("usage", "--group-by", "status", "--from", "2000-01-01", env=env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert any(line.split()[:3] == ["completed", "1", "1"] for line in lines)
    assert any(line.split()[:2] == ["total", "2"] for line in lines)
    empty = as_json(llmeu("usage", "--from", "2999-01-01", "--json", env=env))
    assert empty["totals"]["requests"] == 0
    bad = llmeu("usage", "--from", "someday", env=env)
    assert bad.returncode == 1 and "param `from`" in bad.stderr


def test_traces_list_pages_and_show(gateway: Gateway, env: dict[str, str]) -> None:
    trace_ids = [chat(gateway, gateway.admin_key).json()["llmeu"]["trace_id"] for _ in range(3)]
    listed = as_json(llmeu("traces", "list", "--status", "completed", "--json", env=env))
    assert [t["id"] for t in listed["data"]] == trace_ids[::-1]

    first = llmeu("traces", "list", "--limit", "2", env=env)
    assert (
        first.returncode == 0 and trace_ids[2] in first.stdout and trace_ids[0] not in first.stdout
    )
    cursor = first.stderr.split("more: --cursor ")[1].split()[0]
    rest = llmeu("traces", "list", "--limit", "2", "--cursor", cursor, env=env)
    assert trace_ids[0] in rest.stdout and "more:" not in rest.stderr

    shown = as_json(llmeu("traces", "show", trace_ids[0], "--json", env=env))
    api = httpx.get(f"{gateway.base_url}/platform/traces/{trace_ids[0]}",
                    headers={"authorization": f"Bearer {gateway.admin_key}"}).json()  # fmt: skip
    assert shown == api
    text = llmeu("traces", "show", trace_ids[0], env=env).stdout
    for expected in ("completed", "fakeprov-fr-a", "eu_sovereign", "served", "output:"):
        assert expected in text
    missing = llmeu("traces", "show", "trc_nope", env=env)
    assert missing.returncode == 1 and "404" in missing.stderr


def test_connection_options_and_tenant_scope(gateway: Gateway, env: dict[str, str]) -> None:
    tenant = as_json(llmeu("keys", "create", "--name", "tenant", "--json", env=env))
    chat(gateway, gateway.admin_key)
    own = chat(gateway, tenant["key"]).json()["llmeu"]["trace_id"]
    options = ["--base-url", gateway.url, "--api-key", tenant["key"], "--json"]
    listed = as_json(llmeu("traces", "list", *options))
    assert [t["id"] for t in listed["data"]] == [own]
    usage = as_json(llmeu("usage", "--key", "admin", *options))
    assert usage["totals"]["requests"] == 1
    refused = llmeu("keys", "list", *options)
    assert refused.returncode == 1 and "403" in refused.stderr
    wrong = llmeu("usage", "--base-url", gateway.url, "--api-key", "sk-llmeu-kx-wrong")
    assert wrong.returncode == 1 and "401" in wrong.stderr
    closed = llmeu("usage", "--base-url", "http://127.0.0.1:9", "--api-key", "x")
    assert closed.returncode == 1 and "cannot reach the gateway" in closed.stderr


def test_the_openai_variables_and_the_api_root_work_too(gateway: Gateway) -> None:
    chat(gateway, gateway.admin_key)
    env = {"OPENAI_BASE_URL": gateway.base_url, "OPENAI_API_KEY": gateway.admin_key}
    assert gateway.base_url.endswith("/v1")
    assert as_json(llmeu("usage", "--json", env=env))["totals"]["requests"] == 1
    assert as_json(llmeu("keys", "list", "--json", env=env))["data"]


def expire_content_sqlite(gateway: Gateway, trace_id: str) -> None:
    with sqlite3.connect(gateway.data_dir / "llmeu.db") as conn:
        conn.execute("UPDATE traces SET content_expires_at = 1 WHERE trace_id = ?", (trace_id,))


def test_ledger_purge_on_sqlite(gateway: Gateway, env: dict[str, str]) -> None:
    expired, kept = (chat(gateway, gateway.admin_key).json()["llmeu"]["trace_id"] for _ in "ab")
    expire_content_sqlite(gateway, expired)
    done = llmeu("ledger", "purge", "--data-dir", str(gateway.data_dir))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "purged the stored content of 1 traces and the metadata of 0 traces in sqlite:///"
    )
    shown = as_json(llmeu("traces", "show", expired, "--json", env=env))
    assert shown["content"]["stored"] is False and shown["status"] == "completed"
    assert shown["usage"]["output_tokens"] == 6
    assert as_json(llmeu("traces", "show", kept, "--json", env=env))["content"]["stored"] is True
    again = as_json(
        llmeu("ledger", "purge", "--json", env={"LLMEU_DATA_DIR": str(gateway.data_dir)})
    )
    assert again["purged"] == 0


def test_ledger_purge_refuses_a_place_without_a_ledger(tmp_path: Any) -> None:
    done = llmeu("ledger", "purge", "--data-dir", str(tmp_path / "nothing"))
    assert done.returncode == 1 and "no ledger at" in done.stderr
    assert not (tmp_path / "nothing" / "llmeu.db").exists()


@pytest.mark.postgres
def test_ledger_purge_on_postgres(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), default_policy="eu-store")
    with postgres_database_sync() as url:
        gateway = gateway_factory(config=config, args=["--database-url", url])
        trace_id = chat(gateway, gateway.admin_key).json()["llmeu"]["trace_id"]
        asyncio.run(fetch(url, "UPDATE traces SET content_expires_at = 1 WHERE trace_id = $1",
                          trace_id))  # fmt: skip
        done = as_json(llmeu("ledger", "purge", "--database-url", url, "--json"))
        assert done == {"purged": 1, "metadata_purged": 0, "database": url}
        rows = asyncio.run(fetch(url, "SELECT prompt, completion, input_tokens FROM traces "
                                      "WHERE route <> 'admin'"))  # fmt: skip
        assert rows == [{"prompt": None, "completion": None, "input_tokens": 11}]
        events = asyncio.run(fetch(url, "SELECT action, target FROM admin_events"))
        assert events == [{"action": "ledger.purge", "target": url}]  # the command's own
        gateway.kill()
