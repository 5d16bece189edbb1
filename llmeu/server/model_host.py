"""`llmeu serve` and the model host: one per machine, launched before any worker.

The host is launched here, in the process that then serves or forks the
workers, so every worker connects to the same one and none loads a model; a
keeper that ends is launched again here too, on the same socket (`launch`).
When its start check fails, the one-line reason is logged and:

- the local model is the only endpoint that could serve (no other endpoint
  has its credentials): `llmeu serve` exits with status 1, as a gateway that
  can answer nothing should not report ready;
- otherwise the gateway starts, each local endpoint unavailable with that
  reason (its one log line, `/v1/platform/endpoints`), and the remote
  endpoints serve.
"""

from __future__ import annotations

import dataclasses
import logging

from llmeu.api.gateway import load_gateway_config
from llmeu.config import Settings
from llmeu.modelhost.launch import LaunchedHost, launch
from llmeu.providers.host_link import host_limits
from llmeu.providers.table import missing_credentials
from llmeu.routing.catalog import EndpointKind

log = logging.getLogger("llmeu")


class OnlyEndpointFailed(Exception):
    """The model host could not start and no other endpoint can serve."""


def launch_model_host(settings: Settings) -> tuple[Settings, LaunchedHost | None]:
    """The settings the gateway serves with (the host's socket, or its fault), and the
    launched host to stop at the end; raises `OnlyEndpointFailed`, and the configuration's
    `ConfigError`."""
    if not settings.load_local_models or settings.model_host_socket is not None:
        return settings, None
    catalog = load_gateway_config(settings).catalog
    local = [e for e in catalog.endpoints if e.kind is EndpointKind.LOCAL]
    if not local:
        return settings, None
    host = launch(host_limits(settings))
    if host.fault is None:
        return dataclasses.replace(settings, model_host_socket=host.socket_path), host
    missing = missing_credentials(catalog, settings.environ)
    if all(e.kind is EndpointKind.LOCAL or e.endpoint_id in missing for e in catalog.endpoints):
        log.error("%s", host.fault)
        raise OnlyEndpointFailed(host.fault)
    # Each local endpoint reports it as the reason it is unavailable, as it starts.
    return dataclasses.replace(settings, model_host_fault=host.fault), None
