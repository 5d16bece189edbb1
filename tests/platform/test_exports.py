"""Exports for a DPO, checked field by field against the calls a test made."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from llmeu.api.app import App, create_app
from llmeu.api.services.exports import Period, records_of_processing, subprocessors_csv
from llmeu.config import Settings
from llmeu.routing.catalog import Catalog
from llmeu.routing.tool_servers import ToolCatalog
from tests.ledger.conftest import database_url  # noqa: F401  (the parametrized fixture)
from tests.platform.conftest import TEAM_POLICY, chat, client_for
from tests.routing.factories import tool_server
from tests.support.processes import ADMIN_KEY, FakeUpstream, config_yaml, fake_endpoint

Client = httpx.AsyncClient


def _config(upstream: FakeUpstream) -> str:
    certified = fake_endpoint("fakeprov-fr-a", upstream).replace(
        "    country: FR\n",
        "    country: FR\n    jurisdiction: FR\n    certifications: [secnumcloud, iso27001]\n",
    )
    return config_yaml(certified, policies=TEAM_POLICY)


@pytest.fixture
async def app(
    tmp_path: Path,
    database_url: str,  # noqa: F811
    fake_upstream: FakeUpstream,
) -> AsyncIterator[App]:
    config = tmp_path / "config.yaml"
    config.write_text(_config(fake_upstream))
    settings = Settings(
        data_dir=tmp_path, database_url=None if database_url.startswith("sqlite") else database_url,
        config_file=config, admin_key=ADMIN_KEY, load_local_models=False,
    )  # fmt: skip
    application = create_app(settings)
    await application.gateway.start()
    yield application
    await application.gateway.stop()


async def test_exports_say_what_the_calls_did(app: App, tmp_path: Path) -> None:
    started = time.time() - 1
    async with client_for(app, ADMIN_KEY) as admin:
        created = await admin.post(
            "/v1/platform/keys",
            json={"name": "support-bot", "policy_id": "eu-store",
                  "purpose": "answering customer support tickets"},
        )  # fmt: skip
        assert created.status_code == 201, created.text
        key = created.json()
        assert key["purpose"] == "answering customer support tickets"
        async with client_for(app, key["key"]) as bot:
            traces = [(await chat(bot, f"ticket {i}")).headers["x-llmeu-trace-id"] for i in (1, 2)]
            refused = await chat(bot, "x", model="missing-model")
            assert refused.status_code == 404
        await app.gateway.ledger.flush()
        window = {"from": str(started), "to": str(time.time() + 1)}

        records = await admin.get("/v1/platform/exports/records-of-processing.json", params=window)
        assert records.status_code == 200, records.text
        activity = next(a for a in records.json()["activities"] if a["key_id"] == key["id"])
        assert activity["purpose"] == "answering customer support tickets"
        assert activity["policy_id"] == "eu-store"
        assert activity["countries"] == ["FR"]
        assert activity["recipients"] == [
            {"provider": "fakeprov", "endpoint_id": "fakeprov-fr-a", "country": "FR",
             "inference_region": "test-1", "sovereignty_class": "eu_sovereign",
             "jurisdiction": "FR", "certifications": ["iso27001", "secnumcloud"],
             "catalog": "current", "kind": "endpoint"},
        ]  # fmt: skip
        assert activity["retention_by_route"] == [
            {"endpoint_id": "fakeprov-fr-a", "retention": "P1D", "calls": 2}
        ]
        volumes = activity["volumes"]
        assert volumes["calls"] == 3
        assert volumes["by_status"] == {"completed": 2, "rejected": 1}

        calls = await admin.get("/v1/platform/exports/calls.jsonl", params=window)
        assert calls.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in calls.text.splitlines()]
        mine = [c for c in lines if c["key_id"] == key["id"]]
        assert [c["trace_id"] for c in mine if c["status"] == "completed"] == traces
        assert sum(c["input_tokens"] for c in mine if c["input_tokens"]) == volumes["input_tokens"]
        assert all("prompt" not in c and "completion" not in c for c in lines)
        assert "ticket 1" not in calls.text

        csv_text = (await admin.get("/v1/platform/exports/subprocessors.csv", params=window)).text
        rows = list(csv.DictReader(io.StringIO(csv_text)))
        assert [
            (r["provider"], r["jurisdiction"], r["certifications"], r["calls"]) for r in rows
        ] == [("fakeprov", "FR", "iso27001 secnumcloud", "2")]

        markdown = await admin.get("/v1/platform/exports/records-of-processing.md", params=window)
        assert "## Key `" + key["id"] + "` — support-bot" in markdown.text
        assert "| fakeprov | fakeprov-fr-a | FR | FR | eu_sovereign |" in markdown.text

        assert (await admin.get("/v1/platform/exports/everything.zip")).status_code == 404
        later = {"from": str(time.time() + 10), "to": str(time.time() + 20)}
        empty = await admin.get("/v1/platform/exports/calls.jsonl", params=later)
        assert empty.text == ""
        async with client_for(app, key["key"]) as bot:
            denied = await bot.get("/v1/platform/exports/calls.jsonl")
            assert denied.status_code == 403

    if app.gateway.settings.database_url is None:  # the CLI reads the same SQLite file
        out = tmp_path / "exports"
        done = subprocess.run(
            [sys.executable, "-m", "llmeu.cli.main", "audit", "export",
             "--from", "2000-01-01", "--to", "2100-01-01", "--out", str(out),
             "--data-dir", str(tmp_path), "--config", str(tmp_path / "config.yaml")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in out.iterdir()) == sorted(
            ["admin-events.jsonl", "calls.jsonl", "records-of-processing.json",
             "records-of-processing.md", "subprocessors.csv"]
        )  # fmt: skip
        assert (out / "subprocessors.csv").read_text() == csv_text
        exported = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
        assert {c["trace_id"] for c in exported} >= set(traces)


def test_a_tool_server_a_tool_call_reached_is_a_recipient() -> None:
    tools = ToolCatalog([tool_server("crm", jurisdiction="FR", certifications=["iso27001"])])
    base = {"key_id": "kbot", "status": "completed", "endpoint_id": None, "provider": "crm",
            "inference_region": None, "sovereignty_class": "eu_sovereign", "retention": "P0D",
            "input_tokens": None, "output_tokens": None, "cost_eur": None}  # fmt: skip
    reached = {**base, "mcp_server": "crm", "attempts": [{"endpoint_id": "crm", "provider": "crm"}]}
    refused = {**base, "mcp_server": None, "attempts": [], "status": "rejected"}
    period = Period(0.0, 1.0)
    records = records_of_processing([reached, refused], [], Catalog([]), period, tools)
    (activity,) = records["activities"]
    assert activity["recipients"] == [
        {"provider": "crm", "endpoint_id": "crm", "country": "FR", "inference_region": None,
         "sovereignty_class": "eu_sovereign", "jurisdiction": "FR",
         "certifications": ["iso27001"], "catalog": "current", "kind": "mcp_server"},
    ]  # fmt: skip
    assert activity["retention_by_route"] == [
        {"endpoint_id": "crm", "retention": "P0D", "calls": 1}
    ]
    rows = list(csv.DictReader(io.StringIO(subprocessors_csv([reached], Catalog([]), tools))))
    assert [(r["endpoint_id"], r["kind"], r["calls"]) for r in rows] == [("crm", "mcp_server", "1")]
