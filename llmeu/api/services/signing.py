"""The gateway's signing keys, from the settings: a PEM file, a PEM in a variable, a fleet's
key directory, or the data dir.

Receipts and checkpoints are signed with the active key of this ring; its
JWKS is what `GET /.well-known/llmeu/jwks.json` publishes. A key given as PEM
(file or variable) is the operator's to rotate; a key directory
(`--signing-key-dir`, `llmeu.evidence.key_directory`) is shared by a fleet and
gains keys from `llmeu keys rotate-signing --signing-key-dir` or from whatever
writes it (a Kubernetes Secret); a key in the data dir is generated at first
start (mode 0600) and rotated by `llmeu keys rotate-signing`.

Every source but the variable is files, and `signing_fingerprint` says from
their metadata alone whether they changed: the gateway polls it and reads the
keys again when it moves (and on SIGHUP, whatever it says).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Hashable
from typing import Any

from llmeu.config import Settings
from llmeu.errors import ConfigError
from llmeu.evidence.key_directory import directory_fingerprint, read_key_directory
from llmeu.evidence.signing_keys import KeyRing, load_directory_keys

log = logging.getLogger("llmeu")


def configured_pem_source(settings: Settings) -> str | None:
    """Where a PEM key comes from when the settings name one, else None (a key directory)."""
    if settings.signing_key_file is not None:
        return str(settings.signing_key_file)
    if settings.environ.get(settings.signing_key_env):
        return f"${settings.signing_key_env}"
    return None


def configured_key_source(settings: Settings) -> str | None:
    """Where the keys come from when the settings name a source, else None (the data dir)."""
    pem = configured_pem_source(settings)
    if pem is not None and settings.signing_key_dir is not None:
        raise ConfigError(
            f"the signing key is named twice: {pem} and --signing-key-dir "
            f"{settings.signing_key_dir}; give one"
        )
    if pem is None and settings.signing_key_dir is not None:
        return str(settings.signing_key_dir)
    return pem


def signing_fingerprint(settings: Settings) -> Hashable:
    """Changes when a file the keys come from changes (the metadata of the key file, the
    key directory's files, the retired keys' files); constant for a key in a variable."""
    files = [*settings.signing_retired_keys]
    if settings.signing_key_file is not None:
        files.append(settings.signing_key_file)
    stats = []
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            stats.append((str(path), 0, 0, -1, 0))
            continue
        stats.append((str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
    directory = None
    if configured_pem_source(settings) is None:
        directory = settings.signing_key_dir or settings.generated_signing_key_dir
    return tuple(stats), None if directory is None else directory_fingerprint(directory)


def load_signing_keys(settings: Settings) -> KeyRing:
    """Raises ConfigError naming the source of a key that cannot be read or used."""
    configured_key_source(settings)  # refuses two sources
    retired = []
    for path in settings.signing_retired_keys:
        try:
            retired.append(path.read_bytes())
        except OSError as error:
            raise ConfigError(f"retired signing key {path}: {error.strerror}") from None
    if settings.signing_key_file is not None:
        path = settings.signing_key_file
        try:
            pem = path.read_bytes()
        except OSError as error:
            raise ConfigError(f"signing key {path}: {error.strerror}") from None
        return KeyRing.from_pem(pem, retired=retired, source=str(path))
    value = settings.environ.get(settings.signing_key_env)
    if value:
        return KeyRing.from_pem(value, retired=retired, source=f"${settings.signing_key_env}")
    if settings.signing_key_dir is not None:
        ring = read_key_directory(settings.signing_key_dir)
    else:
        directory = settings.generated_signing_key_dir
        try:
            ring = load_directory_keys(directory)
        except OSError as error:
            raise ConfigError(f"signing keys in {directory}: {error}") from None
    if not retired:
        return ring
    extra = KeyRing.from_pem(ring.active.private_pem(), retired=retired)
    return KeyRing(ring.active, (*ring.retired, *extra.retired))


class KeyReloader:
    """Reads the keys again on demand (SIGHUP) and when their files change (a poll of their
    metadata every `signing_key_poll_seconds`), and hands a ring that differs to `use`.

    A read that fails (a broken file, a key directory emptied) changes nothing: the keys
    in use stay, and the error is logged once per state of the files, naming the file.
    Each gateway process polls on its own, so `--workers N` needs nothing more.
    """

    def __init__(self, settings: Settings, use: Callable[[KeyRing], bool]):
        self._settings = settings
        self._use = use
        self._seen: Hashable | None = None  # None: read at the first poll, then compare
        self._lock = asyncio.Lock()

    async def reload(self) -> str | None:
        """Read the keys now, whatever their files say (SIGHUP, `POST /v1/platform/reload`);
        why they could not be read (the keys in use stay), or None."""
        return await self._read(forced=True)

    async def poll(self) -> None:
        """Read the keys when their files changed since the last read."""
        await self._read(forced=False)

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self._settings.signing_key_poll_seconds)
            try:
                await self.poll()
            except Exception:  # the watch must never end
                log.exception("signing key poll failed")

    async def _read(self, *, forced: bool) -> str | None:
        async with self._lock:
            seen = await asyncio.to_thread(signing_fingerprint, self._settings)
            if seen == self._seen and not forced:
                return None
            self._seen = seen
            try:
                ring = await asyncio.to_thread(load_signing_keys, self._settings)
            except ConfigError as error:
                log.error("signing keys not reloaded, the previous ones stay: %s", error)
                return str(error)
            if self._use(ring):
                log.warning(
                    "signing keys reloaded: %s signs, %d keys published",
                    ring.active.kid,
                    len(ring.jwks()["keys"]),
                )
            return None


def signing_state(ring: KeyRing) -> dict[str, Any]:
    """The key that signs and the keys published, as a reload's event digests them."""
    return {
        "active_kid": ring.active.kid,
        "published": sorted(key["kid"] for key in ring.jwks()["keys"]),
    }


def signing_change(
    before: dict[str, Any], after: dict[str, Any], error: str | None
) -> dict[str, Any]:
    """What a reload did to the signing keys, as its answer says it."""
    published = set(after["published"])
    change: dict[str, Any] = {
        "changed": before != after,
        "active_kid": after["active_kid"],
        "previous_active_kid": before["active_kid"],
        "added": sorted(published - set(before["published"])),
        "removed": sorted(set(before["published"]) - published),
    }
    if error is not None:
        change["error"] = f"the signing keys in use stay: {error}"
    return change
