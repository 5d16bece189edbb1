"""The catalog and policies a gateway serves: the configuration file, or the embedded default.

Settings only name the file (`Settings.config_file`); reading and validating
it happens here, so that settings stay the base of the house and routing
depends on nothing above it.
"""

from __future__ import annotations

from pathlib import Path

from llmeu.errors import ConfigError
from llmeu.routing.builtin import (
    BUILTIN_POLICIES,
    DEFAULT_POLICY,
    builtin_catalog,
    builtin_tool_servers,
)
from llmeu.routing.config_file import GatewayConfig, parse_config


def load_config(path: Path | None, *, host: str, local_country: str = "") -> GatewayConfig:
    """`path`'s catalog and policies (the built-in policies stay available unless it redefines
    their ids), or without a file the built-in catalog — the bundled models on `host`, the
    EU providers of `builtin.yaml` — and the built-in policies."""
    if path is None:
        catalog = builtin_catalog(host, local_country)
        policies = {p.policy_id: p for p in BUILTIN_POLICIES}
        return GatewayConfig(catalog, policies, DEFAULT_POLICY, builtin_tool_servers())
    try:
        text = path.read_text("utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    return parse_config(text, base_policies=BUILTIN_POLICIES)
