"""A fleet's key directory: which key signs, what is published, what is skipped, what fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from llmeu.errors import ConfigError
from llmeu.evidence import SigningKey, build_receipt, verify_receipt
from llmeu.evidence.key_directory import (
    directory_fingerprint,
    key_file_name,
    name_order,
    read_key_directory,
    write_new_key,
)
from tests.evidence.factories import trace_view

NOV_1 = 1_604_232_000 * 1_000_000_000  # 2020-11-01T12:00:00Z


def put_key(directory: Path, name: str, key: SigningKey | None = None) -> SigningKey:
    key = key or SigningKey.generate()
    path = directory / name
    path.write_bytes(key.private_pem())
    path.chmod(0o600)
    return key


def public_pem(key: SigningKey) -> bytes:
    return key.public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def kids(directory: Path) -> list[str]:
    return [k["kid"] for k in read_key_directory(directory).jwks()["keys"]]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("20201101T120000Z-a.pem", "20201101T120001Z-a.pem"),
        ("20201101T120000.000000001Z-z.pem", "20201101T120000.000000002Z-a.pem"),
        ("20201101T120000.5Z-z.pem", "20201101T120000.600000000Z-a.pem"),
        ("20201231T235959Z-z.pem", "20210101T000000Z-a.pem"),
        ("signing.pem", "20000101T000000Z-a.pem"),
        ("a.pem", "b.pem"),
        ("20201399T000000Z-not-a-date.pem", "20000101T000000Z-a.pem"),
    ],
    ids=["seconds", "nanoseconds", "short-fraction", "year", "unstamped-older", "by-name",
         "invalid-stamp-unstamped"],
)  # fmt: skip
def test_names_order_keys_by_their_stamp(older: str, newer: str) -> None:
    assert name_order(older) < name_order(newer)


def test_the_newest_private_key_signs_and_every_key_is_published(tmp_path: Path) -> None:
    old = put_key(tmp_path, "20201101T120000Z-old.pem")
    new = put_key(tmp_path, "20201102T120000Z-new.pem")
    middle = put_key(tmp_path, "20201101T180000Z-middle.pem")
    legacy = put_key(tmp_path, "signing.pem")
    ring = read_key_directory(tmp_path)
    assert ring.active.kid == new.kid
    assert kids(tmp_path) == [new.kid, middle.kid, old.kid, legacy.kid]


def test_mtimes_do_not_decide_which_key_signs(tmp_path: Path) -> None:
    newer = put_key(tmp_path, "20201102T000000Z-b.pem")
    older = put_key(tmp_path, "20201101T000000Z-a.pem")
    os.utime(tmp_path / "20201102T000000Z-b.pem", ns=(0, 0))
    assert read_key_directory(tmp_path).active.kid == newer.kid != older.kid


def test_public_keys_verify_but_never_sign(tmp_path: Path) -> None:
    retired = SigningKey.generate()
    (tmp_path / "20211231T000000Z-retired.pub").write_bytes(public_pem(retired))
    signing = put_key(tmp_path, "20201101T000000Z-current.pem")
    ring = read_key_directory(tmp_path)
    assert ring.active.kid == signing.kid
    assert kids(tmp_path) == [signing.kid, retired.kid]
    old_receipt = build_receipt(trace_view(), retired, policy_sha256=None, request_sha256=None,
                                content_sha256=None)  # fmt: skip
    assert verify_receipt(old_receipt, ring.jwks()).valid


def test_only_public_keys_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.pub").write_bytes(public_pem(SigningKey.generate()))
    with pytest.raises(ConfigError, match="no PEM private key to sign with"):
        read_key_directory(tmp_path)


def test_dotfiles_subdirectories_and_kubernetes_symlinks(tmp_path: Path) -> None:
    """The layout the kubelet makes for a Secret: files in `..<time>/`, a `..data` symlink
    to it, and one symlink per key through `..data`."""
    first = tmp_path / "..2020_11_01_12_00_00.000000001"
    first.mkdir()
    key = put_key(first, "20201101T120000Z-k.pem")
    (first / "README").write_text("not a key, but hidden behind ..data")
    (tmp_path / "..data").symlink_to(first.name)
    (tmp_path / "20201101T120000Z-k.pem").symlink_to("..data/20201101T120000Z-k.pem")
    (tmp_path / ".lock").write_text("")
    (tmp_path / ".20201201T000000Z-half.pem.tmp").write_text("-----BEGIN PRIVATE KEY-----")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "junk").write_text("junk")
    before = directory_fingerprint(tmp_path)
    assert read_key_directory(tmp_path).active.kid == key.kid

    second = tmp_path / "..2020_11_02_12_00_00.000000001"
    second.mkdir()
    put_key(second, "20201101T120000Z-k.pem", key)
    newer = put_key(second, "20201102T120000Z-n.pem")
    (tmp_path / "..data_tmp").symlink_to(second.name)
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")  # the kubelet's atomic swap
    (tmp_path / "20201102T120000Z-n.pem").symlink_to("..data/20201102T120000Z-n.pem")
    assert directory_fingerprint(tmp_path) != before
    assert read_key_directory(tmp_path).active.kid == newer.kid
    assert kids(tmp_path) == [newer.kid, key.kid]


def test_fingerprint_moves_with_a_rewritten_file_and_not_without(tmp_path: Path) -> None:
    put_key(tmp_path, "a.pem")
    first = directory_fingerprint(tmp_path)
    assert directory_fingerprint(tmp_path) == first
    (tmp_path / ".lock").write_text("dotfiles never count")
    assert directory_fingerprint(tmp_path) == first
    replacement = tmp_path / ".a.pem.tmp"
    replacement.write_bytes(SigningKey.generate().private_pem())
    replacement.rename(tmp_path / "a.pem")  # a new inode under the same name
    second = directory_fingerprint(tmp_path)
    assert second != first
    rewritten = tmp_path / "a.pem"
    rewritten.write_bytes(SigningKey.generate().private_pem())  # in place, same size
    later = rewritten.stat().st_mtime_ns + 1_000_000_000
    os.utime(rewritten, ns=(later, later))
    assert directory_fingerprint(tmp_path) not in {first, second}


def rsa_pem() -> bytes:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello", "neither a PEM private key nor a PEM public key"),
        (b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
         "not an unencrypted PEM private key"),
        (None, "the signing key must be Ed25519, not"),
        (b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
         "not a PEM public key"),
    ],
    ids=["not-a-key", "truncated-private", "rsa", "truncated-public"],
)  # fmt: skip
def test_a_broken_file_is_named_in_the_error(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    put_key(tmp_path, "20201101T000000Z-good.pem")
    broken = tmp_path / "20201102T000000Z-broken.pem"
    broken.write_bytes(content if content is not None else rsa_pem())
    broken.chmod(0o600)
    with pytest.raises(ConfigError, match=message) as raised:
        read_key_directory(tmp_path)
    assert str(broken) in str(raised.value)


def test_a_private_key_everyone_may_read_is_refused_group_readable_is_not(
    tmp_path: Path,
) -> None:
    put_key(tmp_path, "a.pem")
    (tmp_path / "a.pem").chmod(0o440)  # a Secret mounted with an fsGroup
    read_key_directory(tmp_path)
    (tmp_path / "a.pem").chmod(0o644)
    with pytest.raises(ConfigError, match=r"a\.pem is readable by every user"):
        read_key_directory(tmp_path)


def test_a_dangling_symlink_is_named(tmp_path: Path) -> None:
    put_key(tmp_path, "a.pem")
    (tmp_path / "b.pem").symlink_to("..data/b.pem")
    with pytest.raises(ConfigError, match=r"b\.pem: No such file"):
        read_key_directory(tmp_path)


def test_a_missing_or_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such directory"):
        read_key_directory(tmp_path / "absent")
    with pytest.raises(ConfigError, match="no PEM private key"):
        read_key_directory(tmp_path)


def test_a_written_key_is_the_newest_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    old = SigningKey.generate()
    put_key(tmp_path, key_file_name(old, NOV_1), old)
    new = write_new_key(tmp_path, signs_from_ns=NOV_1 + 1)
    names = sorted(os.listdir(tmp_path))
    assert names == [f"20201101T120000.000000000Z-{old.kid}.pem",
                     f"20201101T120000.000000001Z-{new.kid}.pem"]  # fmt: skip
    assert (tmp_path / names[1]).stat().st_mode & 0o777 == 0o600
    ring = read_key_directory(tmp_path)
    assert ring.active.kid == new.kid
    assert kids(tmp_path) == [new.kid, old.kid]


def test_a_key_stamped_ahead_is_published_at_once_and_signs_when_its_time_comes(
    tmp_path: Path,
) -> None:
    current = put_key(tmp_path, "20201101T000000Z-current.pem")
    ahead = write_new_key(tmp_path, signs_from_ns=NOV_1)
    before = read_key_directory(tmp_path, now_ns=NOV_1 - 1)
    assert before.active.kid == current.kid
    assert [k["kid"] for k in before.jwks()["keys"]] == [current.kid, ahead.kid]
    assert read_key_directory(tmp_path, now_ns=NOV_1).active.kid == ahead.kid
    # Its coming due is a change to look for, though no file changed.
    assert directory_fingerprint(tmp_path, now_ns=NOV_1 - 1) != directory_fingerprint(
        tmp_path, now_ns=NOV_1
    )


def test_while_every_key_is_still_to_come_the_earliest_signs(tmp_path: Path) -> None:
    earliest = put_key(tmp_path, "20201101T000000Z-a.pem")
    put_key(tmp_path, "20201102T000000Z-b.pem")
    assert read_key_directory(tmp_path, now_ns=0).active.kid == earliest.kid
