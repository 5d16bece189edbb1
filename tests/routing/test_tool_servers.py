"""The configuration file's `mcp_servers:`: validated as strictly as endpoints."""

from __future__ import annotations

import pytest

from llmeu.errors import ConfigError
from llmeu.routing.builtin import BUILTIN_POLICIES, builtin_tool_servers
from llmeu.routing.config_file import parse_config
from llmeu.routing.tool_servers import TOOL_SERVER_TIMEOUTS, normal_url, split_tool_name

SERVER = """
  - server_id: crm
    url: https://crm.example.eu/mcp
    provider: example
    country: fr
    sovereignty_class: eu_sovereign
    retention: P0D
"""


def config(servers: str = SERVER) -> str:
    return f"mcp_servers:{servers}default_policy: eu\n"


def test_a_server_with_only_its_required_fields() -> None:
    (server,) = parse_config(config(), base_policies=BUILTIN_POLICIES).tool_servers.servers
    assert (server.server_id, server.country, server.retention.text) == ("crm", "FR", "P0D")
    assert server.timeouts == TOOL_SERVER_TIMEOUTS
    assert server.exposed("lookup") == "crm__lookup"
    assert server.credential_variables() == ()


def test_every_optional_field() -> None:
    text = config(
        SERVER
        + """    jurisdiction: FR
    certifications: [iso27001, secnumcloud]
    seal: 3
    api_key_env: CRM_TOKEN
    headers_env: {X-Tenant: CRM_TENANT}
    timeouts: {total: 5, idle: 2}
    max_result_bytes: 1000
"""
    )
    (server,) = parse_config(text, base_policies=BUILTIN_POLICIES).tool_servers.servers
    assert server.seal == 3
    assert server.headers_env == (("X-Tenant", "CRM_TENANT"),)
    assert (server.timeouts.total, server.timeouts.idle, server.timeouts.connect) == (5, 2, 10)
    assert server.max_result_bytes == 1000
    assert server.credential_variables() == ("CRM_TOKEN", "CRM_TENANT")


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        pytest.param("    retention: P0D\n", "", "retention", id="missing-retention"),
        pytest.param("server_id: crm", "server_id: crm__x", "server_id", id="separator-in-id"),
        pytest.param("server_id: crm", "server_id: -crm", "server_id", id="leading-hyphen"),
        pytest.param("https://crm.example.eu/mcp", "stdio://crm", "url", id="not-http"),
        pytest.param("https://crm.example.eu/mcp", "https://u:p@crm.example.eu/mcp", "url",
                     id="credentials-in-url"),
        pytest.param("https://crm.example.eu/mcp", "https://crm.example.eu/mcp?k=1", "url",
                     id="query-in-url"),
        pytest.param("country: fr", "country: France", "country", id="country"),
        pytest.param("eu_sovereign", "eu_only", "sovereignty_class", id="class"),
        pytest.param("retention: P0D", "retention: forever", "retention", id="duration"),
        pytest.param("    retention: P0D\n", "    retention: P0D\n    command: npx server\n",
                     "command", id="stdio-command"),
        pytest.param("    retention: P0D\n", "    retention: P0D\n    headers_env: {Host: H}\n",
                     "headers_env.Host", id="reserved-header"),
        pytest.param("    retention: P0D\n",
                     "    retention: P0D\n    headers_env: {Authorization: A}\n",
                     "headers_env.Authorization", id="authorization-header"),
        pytest.param("    retention: P0D\n", "    retention: P0D\n    seal: 7\n", "seal",
                     id="seal"),
        pytest.param("    retention: P0D\n", "    retention: P0D\n    timeouts: {total: 0}\n",
                     "timeouts.total", id="timeout"),
    ],
)  # fmt: skip
def test_invalid_fields_are_named(old: str, new: str, field: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(config(SERVER.replace(old, new)), base_policies=BUILTIN_POLICIES)
    assert refused.value.field == field
    assert refused.value.line is not None


def test_duplicate_ids_and_urls_are_refused() -> None:
    with pytest.raises(ConfigError, match="duplicate server_id `crm`"):
        parse_config(config(SERVER + SERVER), base_policies=BUILTIN_POLICIES)
    other = SERVER.replace("server_id: crm", "server_id: crm2").replace("/mcp", "/mcp/")
    with pytest.raises(ConfigError, match="duplicate url"):
        parse_config(config(SERVER + other), base_policies=BUILTIN_POLICIES)


def test_servers_are_found_by_url_as_written_differently() -> None:
    catalog = parse_config(config(), base_policies=BUILTIN_POLICIES).tool_servers
    server = catalog.get("crm")
    assert catalog.by_url("HTTPS://CRM.example.eu:443/mcp/") is server
    assert catalog.by_url("https://crm.example.eu/other") is None
    assert catalog.by_url("not a url") is None
    assert normal_url("http://h:8080/a/") == "http://h:8080/a"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("crm__lookup", ("crm", "lookup")),
        ("crm__get__all", ("crm", "get__all")),
        ("crm", None),
        ("__lookup", None),
        ("crm__", None),
    ],
)
def test_exposed_names_split_at_the_first_separator(
    name: str, expected: tuple[str, str] | None
) -> None:
    assert split_tool_name(name) == expected


def test_the_built_in_catalog_ships_no_tool_server() -> None:
    assert not builtin_tool_servers()
