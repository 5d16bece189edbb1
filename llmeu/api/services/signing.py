"""The gateway's signing keys, from the settings: a PEM file, a PEM in a variable, or the data dir.

Receipts and checkpoints are signed with the active key of this ring; its
JWKS is what `GET /.well-known/llmeu/jwks.json` publishes. A key given as PEM
(file or variable) is the operator's to rotate; a key in the data dir is
generated at first start (mode 0600) and rotated by `llmeu keys rotate-signing`.
"""

from __future__ import annotations

from llmeu.config import Settings
from llmeu.errors import ConfigError
from llmeu.evidence.signing_keys import KeyRing, load_directory_keys


def configured_pem_source(settings: Settings) -> str | None:
    """Where a PEM key comes from when the settings name one, else None (the key directory)."""
    if settings.signing_key_file is not None:
        return str(settings.signing_key_file)
    if settings.environ.get(settings.signing_key_env):
        return f"${settings.signing_key_env}"
    return None


def load_signing_keys(settings: Settings) -> KeyRing:
    """Raises ConfigError naming the source of a key that cannot be read or used."""
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
    try:
        ring = load_directory_keys(settings.signing_key_dir)
    except OSError as error:
        raise ConfigError(f"signing keys in {settings.signing_key_dir}: {error}") from None
    if not retired:
        return ring
    extra = KeyRing.from_pem(ring.active.private_pem(), retired=retired)
    return KeyRing(ring.active, (*ring.retired, *extra.retired))
