"""The admin key: generated at first start when unset, printed once, stored only as a hash."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

KEY = re.compile(r"sk-llmeu-admin-[A-Za-z0-9_-]{20,}")


def test_generated_admin_key_is_printed_once_and_stored_hashed(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    first = gateway_factory(config=config, env={"LLMEU_ADMIN_KEY": ""}, data_dir=data_dir)
    printed = KEY.findall(first.output())
    assert len(printed) == 1
    token = printed[0]
    models = httpx.get(f"{first.base_url}/models", headers={"authorization": f"Bearer {token}"})
    assert models.status_code == 200
    first.stop()

    second = gateway_factory(config=config, env={"LLMEU_ADMIN_KEY": ""}, data_dir=data_dir)
    assert KEY.findall(second.output()) == []
    models = httpx.get(f"{second.base_url}/models", headers={"authorization": f"Bearer {token}"})
    assert models.status_code == 200
    second.stop()

    database = (data_dir / "llmeu.db").read_bytes()
    assert token.encode() not in database
    with sqlite3.connect(data_dir / "llmeu.db") as conn:
        (stored,) = conn.execute(
            "SELECT secret_hash FROM api_keys WHERE key_id = 'admin'"
        ).fetchone()
    assert len(stored) == 64 and stored not in token
