"""MCP tool servers: the configuration file's `mcp_servers:` catalog.

A tool server receives what an agent sends its tools, as surely as a model
endpoint receives a prompt: it is catalogued with the same sovereignty fields
as an endpoint (who runs it, where, under which law, keeping data how long)
and is a `Site`, so the same policy predicates decide which keys may reach it
(`Policy.exclusion(server)`). Only Streamable HTTP servers are catalogued: a
gateway does not start commands (stdio servers).

    mcp_servers:
      - server_id: crm                      # tools are exposed as crm__<tool>
        url: https://crm.example.eu/mcp     # the server's MCP endpoint
        provider: example
        country: FR
        sovereignty_class: eu_sovereign
        retention: P0D
        jurisdiction: FR                    # optional, as for endpoints
        certifications: [iso27001]          # optional
        seal: 3                             # optional
        api_key_env: CRM_MCP_TOKEN          # sent as `Authorization: Bearer`
        headers_env: {X-Tenant: CRM_TENANT} # more headers, each from a variable
        timeouts: {connect: 10, first_token: 60, idle: 60, total: 300}
        max_result_bytes: 4194304           # a larger result is refused, not read

`first_token` bounds the wait for the server's answer to begin, `idle` each
gap in a streamed answer (a progress notification counts), `total` the
whole call. A server whose `api_key_env` or a `headers_env` variable is unset
is skipped until it is set, and says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import yaml

from llmeu.errors import ConfigError
from llmeu.routing import yaml_nodes as nodes
from llmeu.routing.catalog import Certification, SovereigntyClass, Timeouts
from llmeu.routing.durations import Duration
from llmeu.routing.rule_kinds import seal_level
from llmeu.routing.yaml_nodes import Node

TOOL_SEPARATOR = "__"
"""Between a server's id and a tool's name in the names `/mcp` exposes: `crm__lookup`."""
DEFAULT_MAX_RESULT_BYTES = 4 << 20
TOOL_SERVER_TIMEOUTS = Timeouts(connect=10.0, first_token=60.0, idle=60.0, total=300.0)
_SERVER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Headers the gateway sets itself on every request to a tool server.
_RESERVED_HEADERS = frozenset({
    "host", "content-length", "content-type", "accept", "authorization", "connection",
    "transfer-encoding", "mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name",
    "last-event-id",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class ToolServer:
    """One MCP server reached over Streamable HTTP; a `Site` of the policy predicates."""

    server_id: str
    url: str
    provider: str
    country: str
    sovereignty_class: SovereigntyClass
    retention: Duration
    jurisdiction: str = ""
    certifications: frozenset[Certification] = frozenset()
    seal: int | None = None
    api_key_env: str | None = None
    headers_env: tuple[tuple[str, str], ...] = ()
    """(header, environment variable) pairs sent on every request to the server."""
    timeouts: Timeouts = field(default_factory=lambda: TOOL_SERVER_TIMEOUTS)
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES

    def exposed(self, tool: str) -> str:
        """The name a tool of this server has on the gateway's `/mcp`."""
        return f"{self.server_id}{TOOL_SEPARATOR}{tool}"

    def credential_variables(self) -> tuple[str, ...]:
        """The environment variables the server's requests need."""
        names = tuple(env for _, env in self.headers_env)
        return (self.api_key_env, *names) if self.api_key_env else names


class ToolCatalog:
    """The tool servers, by id and by URL (a request naming a server by its URL is matched
    here, never followed)."""

    __slots__ = ("_by_id", "_by_url", "servers")

    def __init__(self, servers: Iterable[ToolServer] = ()):
        self.servers: tuple[ToolServer, ...] = tuple(servers)
        self._by_id = {s.server_id: s for s in self.servers}
        self._by_url = {normal_url(s.url): s for s in self.servers}

    def get(self, server_id: str) -> ToolServer | None:
        return self._by_id.get(server_id)

    def by_url(self, url: str) -> ToolServer | None:
        return self._by_url.get(normal_url(url))

    def __bool__(self) -> bool:
        return bool(self.servers)


def missing_tool_credentials(catalog: ToolCatalog, environ: Mapping[str, str]) -> dict[str, str]:
    """The servers whose credential variables are unset, with the reason they are skipped."""
    missing: dict[str, str] = {}
    for server in catalog.servers:
        unset = [name for name in server.credential_variables() if not environ.get(name)]
        if unset:
            missing[server.server_id] = f"{', '.join(unset)} not set"
    return missing


def split_tool_name(name: str) -> tuple[str, str] | None:
    """(server id, tool) of an exposed name, or None when it has no server part."""
    server_id, separator, tool = name.partition(TOOL_SEPARATOR)
    if not separator or not server_id or not tool:
        return None
    return server_id, tool


def normal_url(url: str) -> str:
    """A URL as compared with the catalog's: scheme and host lower-cased, the default port
    and a trailing slash left out. Anything that is not an http(s) URL compares as itself."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return url
    scheme = parts.scheme.lower()
    default = 443 if scheme == "https" else 80
    host = parts.hostname.lower()
    netloc = host if port in (None, default) else f"{host}:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}{query}"


_FIELDS = {
    "server_id", "url", "provider", "country", "sovereignty_class", "retention",
    "jurisdiction", "certifications", "seal", "api_key_env", "headers_env", "timeouts",
    "max_result_bytes",
}  # fmt: skip
_REQUIRED = ("server_id", "url", "provider", "country", "sovereignty_class", "retention")


def parse_tool_server(node: Node) -> ToolServer:
    """One entry of `mcp_servers:`, checked field by field (errors name field and line)."""
    fields = nodes.mapping(node, "mcp server", _FIELDS, required=_REQUIRED)
    server_id = nodes.name(fields["server_id"], "server_id")
    if not _SERVER_ID.match(server_id):
        raise ConfigError(
            "server_id must be letters, digits and hyphens (at most 64, not starting with a "
            f"hyphen): its tools are exposed as <server_id>{TOOL_SEPARATOR}<tool>",
            field="server_id", line=nodes.line(fields["server_id"]),
        )  # fmt: skip
    max_result = fields.get("max_result_bytes")
    return ToolServer(
        server_id=server_id,
        url=_url(fields["url"]),
        provider=nodes.name(fields["provider"], "provider"),
        country=nodes.country(fields["country"], "country"),
        sovereignty_class=nodes.enum(
            fields["sovereignty_class"], "sovereignty_class", SovereigntyClass
        ),
        retention=nodes.duration(fields["retention"], "retention"),
        jurisdiction=nodes.country(fields["jurisdiction"], "jurisdiction")
        if "jurisdiction" in fields
        else "",
        certifications=frozenset(
            nodes.enum(n, "certifications", Certification)
            for n in nodes.sequence(fields.get("certifications"), "certifications")
        ),
        seal=seal_level(fields.get("seal"), "seal"),
        api_key_env=nodes.text(fields, "api_key_env", None),
        headers_env=_headers_env(fields.get("headers_env")),
        timeouts=_timeouts(fields.get("timeouts")),
        max_result_bytes=DEFAULT_MAX_RESULT_BYTES
        if max_result is None
        else int(nodes.positive(max_result, "max_result_bytes")),
    )


def _url(node: Node) -> str:
    url = nodes.name(node, "url")
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port out of range raises here
    except ValueError as error:
        raise ConfigError(
            f"url is not a valid URL: {error}", field="url", line=nodes.line(node)
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"url must be an http:// or https:// URL (Streamable HTTP), got {url!r}",
            field="url", line=nodes.line(node),
        )  # fmt: skip
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError(
            "url must not carry credentials, a query or a fragment: credentials go in "
            "api_key_env or headers_env",
            field="url", line=nodes.line(node),
        )  # fmt: skip
    return url


def _headers_env(node: Node | None) -> tuple[tuple[str, str], ...]:
    if node is None or nodes.is_null(node):
        return ()
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError("headers_env must be a mapping of header to variable",
                          field="headers_env", line=nodes.line(node))  # fmt: skip
    pairs: list[tuple[str, str]] = []
    for key, value in node.value:
        header = str(key.value)
        what = f"headers_env.{header}"
        if not _HEADER_NAME.match(header) or header.lower() in _RESERVED_HEADERS:
            raise ConfigError(
                f"`{header}` cannot be set by headers_env: a header name the gateway does "
                "not set itself (Authorization comes from api_key_env)",
                field=what, line=nodes.line(key),
            )  # fmt: skip
        pairs.append((header, nodes.name(value, what)))
    return tuple(pairs)


def _timeouts(node: Node | None) -> Timeouts:
    if node is None:
        return TOOL_SERVER_TIMEOUTS
    names = {"connect", "first_token", "idle", "total"}
    fields = nodes.mapping(node, "timeouts", names, prefix="timeouts.")
    values = {k: nodes.positive(v, f"timeouts.{k}") for k, v in fields.items()}
    defaults = TOOL_SERVER_TIMEOUTS
    return Timeouts(
        connect=values.get("connect", defaults.connect),
        first_token=values.get("first_token", defaults.first_token),
        idle=values.get("idle", defaults.idle),
        total=values.get("total", defaults.total),
    )
