"""API keys at rest and at the door.

Keys created through the platform API exist in the ledger only as SHA-256
hashes: neither the SQLite files (read byte for byte, WAL included) nor a
PostgreSQL database (every row of every table) holds a secret, and the
gateway's log never prints one. At the door a key is looked up by its id and
its hash compared with `hmac.compare_digest`, on hashes of equal length, so a
guess reveals neither how much of it was right nor how long the secret is.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import re
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.api.services.auth import KeyRing
from llmeu.errors import AuthenticationFailed
from llmeu.ledger import secrets
from llmeu.ledger.sqlite import SqliteDatabase
from llmeu.ledger.store import Store
from tests.support.databases import fetch, postgres_database_sync
from tests.support.processes import ADMIN_KEY, FakeUpstream, Gateway, config_yaml, fake_endpoint

SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@pytest.fixture
def start(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> Callable[..., Gateway]:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    return lambda **kwargs: gateway_factory(config=config, **kwargs)


def create_keys(gateway: Gateway, count: int = 3) -> dict[str, str]:
    """Keys made through the platform API, each used once; key id → token."""
    tokens = {}
    with httpx.Client(base_url=gateway.url, timeout=30) as client:
        for i in range(count):
            created = client.post(
                "/v1/platform/keys",
                json={"name": f"team-{i}", "budget_eur": 10},
                headers={"authorization": f"Bearer {ADMIN_KEY}"},
            )
            assert created.status_code == 201, created.text
            token = created.json()["key"]
            tokens[created.json()["id"]] = token
            me = client.get("/v1/platform/me", headers={"authorization": f"Bearer {token}"})
            assert me.status_code == 200
    return tokens


def needles(tokens: dict[str, str]) -> list[bytes]:
    """What must not be stored: each token, its secret part, and the admin token."""
    found = [ADMIN_KEY.encode()]
    for key_id, token in tokens.items():
        secret = token.removeprefix(f"sk-llmeu-{key_id}-")
        assert len(secret) >= 40 and secret != token
        found += [token.encode(), secret.encode()]
    return found


def assert_hashes(stored: dict[str, str], tokens: dict[str, str]) -> None:
    for key_id, token in tokens.items():
        assert SHA256_HEX.fullmatch(stored[key_id])
        assert stored[key_id] == hashlib.sha256(token.encode()).hexdigest()
    assert stored["admin"] == hashlib.sha256(ADMIN_KEY.encode()).hexdigest()


def test_sqlite_files_hold_only_hashes(start: Callable[..., Gateway], tmp_path: Path) -> None:
    data_dir = tmp_path / "ledger"
    gateway = start(data_dir=data_dir)
    tokens = create_keys(gateway)

    def files() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in data_dir.iterdir() if p.is_file()}

    running = files()  # the WAL holds the newest pages while the process runs
    assert "llmeu.db-wal" in running
    assert gateway.stop() == 0
    stopped = files()
    for name, content in [*running.items(), *stopped.items()]:
        for needle in needles(tokens):
            assert needle not in content, f"a key secret is stored in {name}"
    for needle in needles(tokens):
        assert needle.decode() not in gateway.output()

    with contextlib.closing(sqlite3.connect(data_dir / "llmeu.db")) as conn:
        stored = dict(conn.execute("SELECT key_id, secret_hash FROM api_keys").fetchall())
    assert_hashes(stored, tokens)


@pytest.mark.postgres
def test_postgres_rows_hold_only_hashes(start: Callable[..., Gateway]) -> None:
    with postgres_database_sync() as url:
        gateway = start(args=["--database-url", url])
        tokens = create_keys(gateway)
        assert gateway.stop() == 0

        async def dump() -> tuple[list[str], dict[str, str]]:
            """Every row of every table as text, and the stored hashes."""
            tables = await fetch(
                url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
            rows: list[str] = []
            for table in tables:
                sql = f'SELECT t::text AS row FROM "{table["tablename"]}" t'
                rows += [str(r["row"]) for r in await fetch(url, sql)]
            keys = await fetch(url, "SELECT key_id, secret_hash FROM api_keys")
            return rows, {str(r["key_id"]): str(r["secret_hash"]) for r in keys}

        rows, stored = asyncio.run(dump())
    assert len(rows) > len(tokens)  # keys, migrations, policies, instances
    text = "\n".join(rows)
    for needle in needles(tokens):
        assert needle.decode() not in text
    assert_hashes(stored, tokens)


def test_a_right_id_with_a_wrong_secret_is_refused(start: Callable[..., Gateway]) -> None:
    gateway = start()
    (first_id, first), (_, second) = list(create_keys(gateway, count=2).items())
    secret = first.removeprefix(f"sk-llmeu-{first_id}-")
    flipped = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    attempts = {
        "right": (first, 200),
        "last-character-changed": (f"sk-llmeu-{first_id}-{flipped}", 401),
        "secret-of-another-key": (f"sk-llmeu-{first_id}-" + second.split("-", 3)[3], 401),
        "secret-cut-short": (first[:-1], 401),
        "secret-extended": (first + "x", 401),
        "id-only": (f"sk-llmeu-{first_id}-", 401),
    }
    for name, (token, status) in attempts.items():
        response = httpx.get(
            f"{gateway.url}/v1/platform/me", headers={"authorization": f"Bearer {token}"}
        )
        assert response.status_code == status, name
        if status == 401:
            assert response.json()["error"]["code"] == "invalid_api_key", name


class CompareDigestSpy:
    """Stands in for `hmac.compare_digest`: records its arguments, answers as told."""

    def __init__(self, answer: Callable[[str, str], bool] = hmac.compare_digest):
        self.calls: list[tuple[Any, Any]] = []
        self.answer = answer

    def __call__(self, a: Any, b: Any) -> bool:
        self.calls.append((a, b))
        return self.answer(a, b)


@pytest.fixture
def compare_digest(monkeypatch: pytest.MonkeyPatch) -> CompareDigestSpy:
    spy = CompareDigestSpy()
    monkeypatch.setattr(secrets.hmac, "compare_digest", spy)
    return spy


@pytest.mark.parametrize("right", [True, False], ids=["right-token", "wrong-token"])
def test_matches_compares_hashes_with_compare_digest(
    compare_digest: CompareDigestSpy, right: bool
) -> None:
    token = secrets.new_token("kabc")
    stored = secrets.hash_token(token)
    presented = token if right else token[:-1]
    assert secrets.matches(presented, stored) is right
    assert compare_digest.calls == [(secrets.hash_token(presented), stored)]
    compare_digest.answer = lambda a, b: not right  # the answer is compare_digest's alone
    assert secrets.matches(presented, stored) is not right


def test_key_ids_come_from_the_token_shape() -> None:
    shapes = {
        "sk-llmeu-kabc-secret": "kabc",
        "sk-llmeu-kabc-with-dashes-in-secret": "kabc",
        "sk-llmeu-kabc-": "kabc",
        "sk-llmeu-kabc": "admin",
        "sk-llmeu--secret": "admin",
        "sk-llmeu-": "admin",
        "sk-other-kabc-secret": "admin",
        "anything the operator chose": "admin",
        "": "admin",
    }
    assert {token: secrets.key_id_of(token) for token in shapes} == shapes


@pytest.fixture
async def ring(tmp_path: Path) -> AsyncIterator[KeyRing]:
    db = SqliteDatabase(tmp_path / "ledger.db")
    await db.open()
    store = Store(db)
    await store.migrate()
    keys = KeyRing(store)
    await keys.ensure_admin(ADMIN_KEY, "eu-strict")
    yield keys
    await db.close()


TOKEN_SHAPES = [
    # (how the Authorization header is built from a valid token, accepted, digests compared)
    ("Bearer {token}", True, 1),
    ("bearer {token}", True, 1),
    ("Bearer   {token}  ", True, 1),
    ("Bearer {token}x", False, 1),
    ("Bearer {cut}", False, 1),
    ("Bearer {wrong_secret}", False, 1),
    ("Bearer {other_id}", False, 0),
    ("Bearer {id_only}", False, 1),
    ("Bearer {token}é", False, 1),
    ("Bearer sk-llmeu-", False, 1),
    ("Bearer not-a-llmeu-key", False, 1),
    ("Bearer {admin}", True, 1),
    ("Bearer {long}", False, 0),
    ("Basic {token}", False, 0),
    ("{token}", False, 0),
    ("Bearer ", False, 0),
    ("", False, 0),
]


@pytest.mark.parametrize(
    ("header", "accepted", "compared"),
    TOKEN_SHAPES,
    ids=[f"{i:02d}-{h.split(' ')[0] or 'empty'}" for i, (h, _, _) in enumerate(TOKEN_SHAPES)],
)
async def test_token_shapes_at_the_door(
    ring: KeyRing, compare_digest: CompareDigestSpy, header: str, accepted: bool, compared: int
) -> None:
    key, token = await ring.create(name="team", policy_id="eu-strict")
    secret = token.removeprefix(f"sk-llmeu-{key.key_id}-")
    authorization = header.format(
        token=token,
        cut=token[:-1],
        wrong_secret=f"sk-llmeu-{key.key_id}-" + "A" * len(secret),
        other_id=f"sk-llmeu-kffffffffffff-{secret}",
        id_only=f"sk-llmeu-{key.key_id}-",
        admin=ADMIN_KEY,
        long=token + "x" * 600,
    )
    if accepted:
        assert (await ring.authenticate(authorization)).key_id in (key.key_id, "admin")
    else:
        with pytest.raises(AuthenticationFailed):
            await ring.authenticate(authorization)
    assert len(compare_digest.calls) == compared
    for presented, stored in compare_digest.calls:
        assert SHA256_HEX.fullmatch(presented) and SHA256_HEX.fullmatch(stored)
