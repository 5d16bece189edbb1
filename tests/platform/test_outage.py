"""The ledger database goes away under a running gateway: calls are still recorded when
it returns; when the buffer is full, new calls get 503 rather than go unrecorded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from llmeu.api.app import App, create_app
from llmeu.ledger.sqlite import SqliteDatabase
from tests.ledger.conftest import outage, sqlite_path
from tests.platform.conftest import chat, client_for, settings_for
from tests.support.processes import ADMIN_KEY, FakeUpstream
from tests.support.waiting import until


@pytest.fixture
async def small_buffer_app(
    tmp_path: Path, database_url: str, fake_upstream: FakeUpstream
) -> AsyncIterator[App]:
    """A gateway whose ledger buffers at most 6 records (3 calls: begin and finish)."""
    application = create_app(settings_for(tmp_path, database_url, fake_upstream, ledger_buffer=6))
    path = sqlite_path(database_url)
    if path is not None:  # a lock by another process shows within 0.2 s, not 10 s
        application.gateway.store.db = SqliteDatabase(path, busy_timeout=0.2)
    await application.gateway.start()
    yield application
    await application.gateway.stop()


async def test_calls_during_an_outage_are_recorded_and_a_full_buffer_refuses_with_503(
    small_buffer_app: App, database_url: str
) -> None:
    ledger = small_buffer_app.gateway.ledger
    async with client_for(small_buffer_app, ADMIN_KEY) as admin:
        assert (await chat(admin)).status_code == 200
        served: list[str] = []
        async with outage(database_url):
            while (response := await chat(admin)).status_code == 200:
                served.append(response.json()["llmeu"]["trace_id"])
                assert len(served) <= 3
            assert response.status_code == 503
            error = response.json()["error"]
            assert error["code"] == "ledger_unavailable" and error["type"] == "api_error"
            assert served and not ledger.healthy and ledger.full
        await until(lambda: ledger.depth == 0 and ledger.healthy, what="the buffer to drain")
        assert (await chat(admin)).status_code == 200
        for trace_id in served:
            trace = (await admin.get(f"/v1/platform/traces/{trace_id}")).json()
            assert trace["status"] == "completed"
        usage = (await admin.get("/v1/platform/usage?group_by=status")).json()
        assert usage["totals"]["completed"] == len(served) + 2
        assert usage["totals"]["requests"] == len(served) + 2  # the refused call left no trace


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)  # SQLite serves reads
async def test_platform_routes_answer_503_while_postgres_is_away(
    small_buffer_app: App, database_url: str
) -> None:
    async with client_for(small_buffer_app, ADMIN_KEY) as admin:
        async with outage(database_url):
            for path in ("/v1/platform/usage", "/v1/platform/traces", "/v1/platform/keys",
                         "/v1/platform/traces/trc_x"):  # fmt: skip
                response = await admin.get(path)
                assert response.status_code == 503, (path, response.text)
                assert response.json()["error"]["code"] == "ledger_unavailable"
            unknown_key = client_for(small_buffer_app, "sk-llmeu-knew-secret")
            async with unknown_key:
                assert (await chat(unknown_key)).status_code == 503
        assert (await admin.get("/v1/platform/usage")).status_code == 200
