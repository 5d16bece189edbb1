"""`KeyReloader`: which reads of the key files reach the gateway, and which do not."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from llmeu.api.services.signing import KeyReloader, load_signing_keys
from llmeu.config import Settings
from llmeu.evidence import KeyRing, SigningKey
from llmeu.evidence.key_directory import write_new_key
from tests.support.waiting import until_value

SECOND = 1_000_000_000


class Used:
    """The rings a reloader hands over, as the gateway's `_use_signing_keys` sees them."""

    def __init__(self, ring: KeyRing):
        self.rings = [ring]

    def __call__(self, ring: KeyRing) -> bool:
        if ring.jwks() == self.rings[-1].jwks() and ring.active.kid == self.rings[-1].active.kid:
            return False
        self.rings.append(ring)
        return True

    @property
    def active(self) -> str:
        return self.rings[-1].active.kid


def fleet(tmp_path: Path) -> tuple[Settings, SigningKey]:
    directory = tmp_path / "keys"
    directory.mkdir()
    first = write_new_key(directory, signs_from_ns=time.time_ns() - 60 * SECOND)
    settings = Settings(data_dir=tmp_path / "data", signing_key_dir=directory)
    return settings, first


async def test_a_poll_reads_only_changed_files_and_sighup_reads_anyway(tmp_path: Path) -> None:
    settings, first = fleet(tmp_path)
    used = Used(load_signing_keys(settings))
    reloader = KeyReloader(settings, used)
    await reloader.poll()  # the first look reads, and finds the same keys
    assert used.active == first.kid and len(used.rings) == 1

    second = write_new_key(tmp_path / "keys")
    await reloader.poll()
    assert used.active == second.kid
    assert [k["kid"] for k in used.rings[-1].jwks()["keys"]] == [second.kid, first.kid]

    await reloader.poll()
    await reloader.reload()
    assert len(used.rings) == 2  # nothing changed: nothing handed over


async def test_a_broken_file_keeps_the_keys_and_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings, first = fleet(tmp_path)
    used = Used(load_signing_keys(settings))
    reloader = KeyReloader(settings, used)
    broken = (tmp_path / "keys") / "zz-broken.pem"
    broken.write_text("not a key")
    await reloader.poll()
    await reloader.poll()
    assert used.active == first.kid and len(used.rings) == 1
    logged = [r.getMessage() for r in caplog.records if "not reloaded" in r.getMessage()]
    assert len(logged) == 1 and str(broken) in logged[0]
    await reloader.reload()  # SIGHUP says it again
    assert len([r for r in caplog.records if "not reloaded" in r.getMessage()]) == 2


async def test_a_key_stamped_ahead_signs_when_its_time_comes_without_a_file_change(
    tmp_path: Path,
) -> None:
    settings, first = fleet(tmp_path)
    used = Used(load_signing_keys(settings))
    reloader = KeyReloader(settings, used)
    ahead = write_new_key(tmp_path / "keys", signs_from_ns=time.time_ns() + SECOND // 2)
    await reloader.poll()
    assert ahead.kid in {k["kid"] for k in used.rings[-1].jwks()["keys"]}  # published at once

    async def active_after_a_poll() -> str:
        await reloader.poll()
        return used.active

    await until_value(active_after_a_poll, lambda kid: kid == ahead.kid)
    assert first.kid in {k["kid"] for k in used.rings[-1].jwks()["keys"]}


async def test_a_replaced_key_file_is_read_again(tmp_path: Path) -> None:
    """`--signing-key-file`: the operator's PEM, rotated by replacing the file."""
    first, second = SigningKey.generate(), SigningKey.generate()
    path = tmp_path / "signing-key.pem"
    path.write_bytes(first.private_pem())
    settings = Settings(data_dir=tmp_path / "data", signing_key_file=path)
    used = Used(load_signing_keys(settings))
    reloader = KeyReloader(settings, used)
    await reloader.poll()
    assert used.active == first.kid and len(used.rings) == 1
    replacement = tmp_path / ".signing-key.pem.new"
    replacement.write_bytes(second.private_pem())
    replacement.rename(path)
    await reloader.poll()
    assert used.active == second.kid
    assert not (tmp_path / "data").exists()  # nothing generated beside a configured key
