"""A fleet's signing keys: a directory of PEM files that several gateways read and reread.

    --signing-key-dir DIR      (LLMEU_SIGNING_KEY_DIR)

    20261101T120000.000000000Z-<kid>.pem   PKCS#8 PEM private key: may sign; the newest signs
    20260301T090000Z-old.pem               SubjectPublicKeyInfo PEM public key: verifies only

Every gateway of a fleet mounts the same directory (a Kubernetes Secret, a
shared volume, a directory a configuration tool writes) and reads it again on
SIGHUP and when it changes, so a key added there signs in every replica
without a restart, and every key there verifies.

Which key signs is decided by the file *names*, never by modification times:
a Secret mount, a copy or a restore resets those. A name that begins with a
UTC time stamp (`YYYYMMDDTHHMMSS[.fraction]Z`, the form `llmeu keys
rotate-signing` writes) orders by that stamp; names without one count as
older than any stamped name and order among themselves by name. The stamp
is the moment a key may start signing: the last *private* key in that order
whose stamp has passed signs (the earliest one, while all are still to
come); all keys, private and public, are published at once. Two gateways
reading the same files (with clocks in step) therefore pick the same key,
and a key stamped a little ahead is in every gateway's JWKS before any of
them signs with it: a verifier holding any gateway's JWKS never meets an
unknown `kid`.

What is read and what is skipped:

- names starting with `.` are skipped: Kubernetes keeps a Secret's real files
  in `..<timestamp>/` behind a `..data` symlink that it swaps atomically, and
  shows each file as a symlink through `..data`; rotation writes a `.tmp`
  file and renames it. Subdirectories are skipped too.
- every other file must be a PEM Ed25519 private or public key: anything else
  is an error naming the file, and a reload that meets one keeps the keys it
  had. A private key that any user may read is refused (group-readable is
  allowed: a Secret mounted with an `fsGroup` is mode 0440 by design).
- a file that vanishes while the directory is read (the symlink swap) makes
  the read start over.

Retiring a key is by hand: replace its private PEM with its public half
(`openssl pkey -in F.pem -pubout -out F.pub`, then remove F.pem) to keep
verifying the receipts it signed, or delete the file to stop publishing it.
"""

from __future__ import annotations

import calendar
import contextlib
import os
import re
import stat
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from llmeu.errors import ConfigError
from llmeu.evidence.signing_keys import KeyRing, SigningKey, key_id

KEY_SUFFIX = ".pem"
_STAMP = re.compile(r"(\d{8}T\d{6})(?:\.(\d{1,9}))?Z")
_ATTEMPTS = 3  # reads of a directory whose files vanish meanwhile (an atomic swap)

Fingerprint = tuple[tuple[tuple[str, int, int, int, int], ...], tuple[str, ...]]


def name_order(name: str) -> tuple[int, str]:
    """The sort key of a key file's name: its stamp in nanoseconds (-1 without one), then
    the name itself. The greatest private key signs."""
    match = _STAMP.match(name)
    if match is None:
        return -1, name
    digits = match.group(1)
    try:
        moment = datetime(
            int(digits[0:4]), int(digits[4:6]), int(digits[6:8]),
            int(digits[9:11]), int(digits[11:13]), int(digits[13:15]), tzinfo=UTC,
        )  # fmt: skip
    except ValueError:
        return -1, name
    seconds = calendar.timegm(moment.utctimetuple())
    return seconds * 1_000_000_000 + int((match.group(2) or "").ljust(9, "0")), name


def key_file_name(key: SigningKey, signs_from_ns: int) -> str:
    """`20261101T120000.000000000Z-<kid>.pem`: the stamp orders keys, the kid names them."""
    seconds, nanos = divmod(signs_from_ns, 1_000_000_000)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(seconds)) + f".{nanos:09d}Z"
    return f"{stamp}-{key.kid}{KEY_SUFFIX}"


@dataclass(frozen=True, slots=True)
class _KeyFile:
    path: Path
    public_key: Ed25519PublicKey
    signing: SigningKey | None  # None: a public key, published only


def read_key_directory(directory: Path, *, now_ns: int | None = None) -> KeyRing:
    """The ring the files of `directory` make at `now_ns` (the clock's time): the newest
    private key whose stamp has passed active, every other key published after it
    (newest first).

    Raises ConfigError naming the directory or the file that cannot be used."""
    now = time.time_ns() if now_ns is None else now_ns
    files = _read_files(directory)
    files.sort(key=lambda f: name_order(f.path.name), reverse=True)
    keys = [(name_order(f.path.name)[0], f.signing) for f in files if f.signing is not None]
    if not keys:
        raise ConfigError(
            f"signing keys in {directory}: no PEM private key to sign with "
            f"({len(files)} public keys)"
        )
    due = [key for stamp, key in keys if stamp <= now]
    active = due[0] if due else keys[-1][1]
    others = [f.public_key for f in files if key_id(f.public_key) != active.kid]
    return KeyRing(active, tuple(others))


def _read_files(directory: Path) -> list[_KeyFile]:
    """Every key file, read again from the start when one vanishes meanwhile (the swap of
    a Kubernetes Secret); one that stays missing is an error naming it."""
    for _ in range(_ATTEMPTS - 1):
        with contextlib.suppress(FileNotFoundError):
            return [_read_key_file(path) for path in _key_paths(directory)]
    try:
        return [_read_key_file(path) for path in _key_paths(directory)]
    except FileNotFoundError as error:
        raise ConfigError(f"signing key {error.filename}: {error.strerror}") from None


def directory_fingerprint(directory: Path, *, now_ns: int | None = None) -> Fingerprint:
    """What changes when a key file is added, removed, replaced or rewritten, or when the
    stamp of a key still to come passes, read from the directory's metadata only: cheap
    enough to poll every few seconds. A swapped Kubernetes Secret shows as new inodes
    behind the same names."""
    now = time.time_ns() if now_ns is None else now_ns
    entries = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return (), ()
    for name in names:
        if name.startswith("."):
            continue
        try:
            info = os.stat(directory / name)
        except OSError:
            entries.append((name, 0, 0, -1, 0))
            continue
        entries.append((name, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
    to_come = tuple(e[0] for e in entries if name_order(e[0])[0] > now)
    return tuple(entries), to_come


def write_new_key(directory: Path, *, signs_from_ns: int | None = None) -> SigningKey:
    """Generate a key that signs from `signs_from_ns` (now when None) and add it to
    `directory` at once or not at all (a temporary dotfile, which readers skip, renamed
    into place): a gateway polling the directory never reads half a key. The older keys
    stay: gateways sign with them until they have read the new one (and its time has
    come), and they keep verifying the receipts they signed."""
    key = SigningKey.generate()
    name = key_file_name(key, time.time_ns() if signs_from_ns is None else signs_from_ns)
    temporary = directory / f".{name}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key.private_pem())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.rename(temporary, directory / name)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    _sync_directory(directory)
    return key


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _key_paths(directory: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        raise ConfigError(f"signing keys in {directory}: no such directory") from None
    except OSError as error:
        raise ConfigError(f"signing keys in {directory}: {error.strerror}") from None
    paths = []
    for name in names:
        path = directory / name
        if name.startswith(".") or path.is_dir():
            continue
        paths.append(path)
    return paths


def _read_key_file(path: Path) -> _KeyFile:
    """Raises FileNotFoundError for a file gone meanwhile, ConfigError for any other fault."""
    try:
        info = os.stat(path)
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as error:
        raise ConfigError(f"signing key {path}: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"signing key {path}: not a regular file")
    if b"PRIVATE KEY-----" in data:
        if info.st_mode & 0o007:
            raise ConfigError(
                f"signing key {path} is readable by every user; `chmod 600` it "
                "(or mount the Secret with defaultMode 0400)"
            )
        signing = SigningKey.from_pem(data, source=str(path))
        return _KeyFile(path, signing.public_key, signing)
    if b"PUBLIC KEY-----" in data:
        return _KeyFile(path, _public_key(path, data), None)
    raise ConfigError(
        f"signing key {path}: neither a PEM private key nor a PEM public key "
        "(only key files belong in a signing key directory; names starting with `.` are skipped)"
    )


def _public_key(path: Path, data: bytes) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as error:
        raise ConfigError(f"signing key {path}: not a PEM public key ({error})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError(f"signing key {path}: must be Ed25519, not {type(key).__name__}")
    return key
