"""The configuration file of DESIGN §4: endpoints, policies and the default policy.

Validation is strict: an unknown field, a missing required one, a bad
ISO-8601 duration, an unknown sovereignty class, kind or capability, or a
duplicate id is a `ConfigError` naming the field and its line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar

import yaml

from llmeu.errors import ConfigError
from llmeu.personal.rules import (
    DEFAULT_MAX_SCAN_CHARS,
    Action,
    Detector,
    OnError,
    PersonalDataRules,
    RestrictTo,
    Unscanned,
)
from llmeu.routing.catalog import (
    BUNDLED_MODELS,
    LOCAL_DEFAULT_MAX_TOKENS,
    SEAL_LEVELS,
    AzureAuth,
    Capability,
    Catalog,
    Certification,
    Endpoint,
    EndpointKind,
    Prices,
    SovereigntyClass,
    Timeouts,
    UpstreamOptions,
)
from llmeu.routing.durations import ZERO, Duration
from llmeu.routing.policy import LimitsFail, Policy, expand_jurisdictions

T = TypeVar("T")
_Node = yaml.Node
_NULL_TAG = "tag:yaml.org,2002:null"
_COUNTRY = re.compile(r"^[A-Za-z]{2}$")
# Control characters, line separators and bidirectional overrides: names reach
# log lines, tables and the console, where these would forge or disguise text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    catalog: Catalog
    policies: dict[str, Policy]
    default_policy: str


def parse_config(text: str, *, base_policies: Iterable[Policy] = ()) -> GatewayConfig:
    """Parse and validate a configuration file's text.

    `base_policies` (the built-in ones) stay available unless the file
    defines a policy with the same id.
    """
    root = _compose(text)
    if root is None:
        raise ConfigError("the configuration file is empty")
    top = _mapping(root, "configuration", {"endpoints", "policies", "default_policy"})
    endpoints = [_endpoint(n) for n in _sequence(top.get("endpoints"), "endpoints")]
    _refuse_duplicates(endpoints, top.get("endpoints"), lambda e: e.endpoint_id, "endpoint_id")
    own = [_policy(n) for n in _sequence(top.get("policies"), "policies")]
    _refuse_duplicates(own, top.get("policies"), lambda p: p.policy_id, "policy_id")
    policies = {p.policy_id: p for p in base_policies}
    policies.update({p.policy_id: p for p in own})
    if "default_policy" not in top:
        raise ConfigError(
            "missing required field", field="default_policy", line=root.start_mark.line + 1
        )
    default = _scalar(top["default_policy"], "default_policy", str)
    if default not in policies:
        raise ConfigError(
            f"default_policy `{default}` is not a defined policy ({', '.join(sorted(policies))})",
            field="default_policy",
            line=_line(top["default_policy"]),
        )
    return GatewayConfig(Catalog(endpoints), policies, default)


def parse_endpoints(text: str) -> list[Endpoint]:
    """Endpoints from a YAML document holding only an `endpoints:` list."""
    root = _compose(text)
    if root is None:
        return []
    top = _mapping(root, "catalog", {"endpoints"})
    return [_endpoint(n) for n in _sequence(top.get("endpoints"), "endpoints")]


def parse_policy(text: str) -> Policy:
    """One policy from a YAML or JSON document (the platform API's PUT body)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"not valid YAML or JSON: {error}") from None
    if root is None:
        raise ConfigError("the policy document is empty")
    return _policy(root)


_ENDPOINT_FIELDS = {
    "endpoint_id", "provider", "kind", "base_url", "api_key_env", "model", "model_version",
    "aliases", "inference_region", "country", "sovereignty_class", "retention",
    "price_eur_per_mtok", "priority", "capabilities", "timeouts", "jurisdiction",
    "certifications", "seal", "default_max_tokens",
    "region", "project", "deployment", "api_version", "auth", "credentials_file", "base_url_env",
}  # fmt: skip
_ENDPOINT_REQUIRED = (
    "endpoint_id", "provider", "model", "inference_region", "sovereignty_class", "retention",
    "price_eur_per_mtok",
)  # fmt: skip


def _endpoint(node: _Node) -> Endpoint:
    fields = _mapping(node, "endpoint", _ENDPOINT_FIELDS, required=_ENDPOINT_REQUIRED)
    kind = _enum(fields.get("kind"), "kind", EndpointKind, EndpointKind.OPENAI)
    model = _name(fields["model"], "model")
    upstream = _upstream_options(fields, kind, node)
    base_url = _text(fields, "base_url", "") or _default_base_url(kind, upstream)
    if upstream.base_url_env and "base_url" in fields:
        raise ConfigError("give base_url or base_url_env, not both", field="base_url_env",
                          line=_line(fields["base_url_env"]))  # fmt: skip
    remote = kind is not EndpointKind.LOCAL and not upstream.base_url_env
    if remote and not base_url.startswith(("http://", "https://")):
        raise ConfigError(
            f"an `{kind.value}` endpoint needs a base_url starting with http:// or https://",
            field="base_url",
            line=_line(fields.get("base_url", node)),
        )
    prices = _mapping(fields["price_eur_per_mtok"], "price_eur_per_mtok", {"input", "output"},
                      required=("input", "output"), prefix="price_eur_per_mtok.")  # fmt: skip
    return Endpoint(
        endpoint_id=_name(fields["endpoint_id"], "endpoint_id"),
        provider=_name(fields["provider"], "provider"),
        kind=kind,
        base_url=base_url.rstrip("/"),
        api_key_env=_text(fields, "api_key_env", None),
        model=model,
        model_version=_text(fields, "model_version", "", (str, int, float)),
        aliases=tuple(_name(n, "aliases") for n in _sequence(fields.get("aliases"), "aliases")),
        inference_region=_name(fields["inference_region"], "inference_region"),
        country=_country(fields["country"], "country") if "country" in fields else "",
        sovereignty_class=_enum(fields["sovereignty_class"], "sovereignty_class", SovereigntyClass),
        retention=_duration(fields["retention"], "retention"),
        prices=Prices(
            input=_non_negative(prices["input"], "price_eur_per_mtok.input"),
            output=_non_negative(prices["output"], "price_eur_per_mtok.output"),
        ),
        priority=_optional(fields, "priority", int, 100),
        capabilities=_capabilities(fields, kind, model, node),
        timeouts=_timeouts(fields.get("timeouts")),
        jurisdiction=_country(fields["jurisdiction"], "jurisdiction")
        if "jurisdiction" in fields
        else "",
        certifications=_certifications(fields.get("certifications"), "certifications"),
        seal=_seal(fields.get("seal"), "seal"),
        upstream=upstream,
        default_max_tokens=_default_max_tokens(fields, kind, model),
    )


_GOOGLE = frozenset({EndpointKind.VERTEX, EndpointKind.VERTEX_ANTHROPIC})
_KIND_FIELDS: dict[str, frozenset[EndpointKind]] = {
    "region": frozenset({EndpointKind.BEDROCK}) | _GOOGLE,
    "project": _GOOGLE,
    "deployment": frozenset({EndpointKind.AZURE_OPENAI}),
    "api_version": frozenset({EndpointKind.AZURE_OPENAI}),
    "auth": frozenset({EndpointKind.AZURE_OPENAI}),
    "credentials_file": _GOOGLE,
    "base_url_env": frozenset({EndpointKind.AZURE_OPENAI}),
}
_KIND_REQUIRED = {
    EndpointKind.BEDROCK: ("region",),
    EndpointKind.VERTEX: ("region",),
    EndpointKind.VERTEX_ANTHROPIC: ("region",),
}
_REGION = re.compile(r"^[a-z]{2,}(-[a-z]+)+-?[0-9]+$")
_TOKEN = re.compile(r"^[A-Za-z0-9._:-]+$")


def _upstream_options(fields: dict[str, _Node], kind: EndpointKind, node: _Node) -> UpstreamOptions:
    """The native kinds' fields: each only on the kinds it applies to, values checked here so
    that a typo fails `llmeu config check`, not the first call."""
    for name, kinds in _KIND_FIELDS.items():
        if name in fields and kind not in kinds:
            allowed = ", ".join(sorted(k.value for k in kinds))
            raise ConfigError(f"{name} applies to `kind: {allowed}` endpoints only", field=name,
                              line=_line(fields[name]))  # fmt: skip
    for name in _KIND_REQUIRED.get(kind, ()):
        if name not in fields:
            raise ConfigError(f"a `{kind.value}` endpoint needs `{name}`", field=name,
                              line=_line(node))  # fmt: skip
    region = _text(fields, "region", "")
    if region and not _REGION.match(region):
        raise ConfigError(f"region must look like eu-central-1 or europe-west4, got {region!r}",
                          field="region", line=_line(fields["region"]))  # fmt: skip
    for name in ("project", "deployment", "api_version"):
        value = _text(fields, name, "", (str, date))  # YAML reads 2024-10-21 as a date
        if name in fields and not _TOKEN.match(value):
            raise ConfigError(f"{name} must be a plain name (letters, digits, . _ : -)",
                              field=name, line=_line(fields[name]))  # fmt: skip
    deployment = _text(fields, "deployment", "")
    api_version = _text(fields, "api_version", "", (str, date))
    if deployment and not api_version:
        raise ConfigError("an Azure deployment URL needs `api_version` (e.g. 2024-10-21)",
                          field="api_version", line=_line(fields["deployment"]))  # fmt: skip
    auth = _enum(fields.get("auth"), "auth", AzureAuth, AzureAuth.API_KEY)
    azure_key = kind is EndpointKind.AZURE_OPENAI and auth is AzureAuth.API_KEY
    if azure_key and "api_key_env" not in fields:
        raise ConfigError("`auth: api_key` needs `api_key_env` (or use `auth: entra`)",
                          field="api_key_env", line=_line(node))  # fmt: skip
    credentials_file = _text(fields, "credentials_file", "")
    if credentials_file.lstrip().startswith(("{", "-----")) or "\n" in credentials_file:
        raise ConfigError(
            "credentials_file is the path of a key file, never the key itself",
            field="credentials_file",
            line=_line(fields["credentials_file"]),
        )
    return UpstreamOptions(
        region=region, project=_text(fields, "project", ""), deployment=deployment,
        api_version=api_version, auth=auth, credentials_file=credentials_file,
        base_url_env=_text(fields, "base_url_env", ""),
    )  # fmt: skip


def _default_base_url(kind: EndpointKind, upstream: UpstreamOptions) -> str:
    """The public endpoint of a region, so a catalog entry need not spell it out."""
    if kind is EndpointKind.BEDROCK:
        return f"https://bedrock-runtime.{upstream.region}.amazonaws.com"
    if kind in _GOOGLE:
        return f"https://{upstream.region}-aiplatform.googleapis.com"
    return ""


def _certifications(node: _Node | None, what: str) -> frozenset[Certification]:
    return frozenset(_enum(n, what, Certification) for n in _sequence(node, what))


def _seal(node: _Node | None, what: str) -> int | None:
    """A Cloud Sovereignty Framework level: 0 to 4 (SEAL-0 … SEAL-4)."""
    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG):
        return None
    value: int = _scalar(node, what, int)
    if value not in SEAL_LEVELS:
        raise ConfigError(
            f"{what} must be a SEAL level from 0 to 4, got {value}", field=what, line=_line(node)
        )
    return value


def _jurisdictions(node: _Node | None, what: str) -> frozenset[str]:
    """ISO countries; `EU` stands for the 27 member states."""
    codes: list[str] = []
    for item in _sequence(node, what):
        value: str = _scalar(item, what, str)
        if value.strip().upper() == "EU":
            codes.extend(expand_jurisdictions([value]))
        else:
            codes.append(_country(item, what))
    return frozenset(codes)


def _default_max_tokens(fields: dict[str, _Node], kind: EndpointKind, model: str) -> int | None:
    """A positive number, or null for none; `kind: local` only, where a chat model
    defaults to 512."""
    if "default_max_tokens" not in fields:
        chat = Capability.CHAT in BUNDLED_MODELS.get(model, frozenset())
        return LOCAL_DEFAULT_MAX_TOKENS if kind is EndpointKind.LOCAL and chat else None
    node = fields["default_max_tokens"]
    if kind is not EndpointKind.LOCAL:
        raise ConfigError(
            "default_max_tokens applies to `kind: local` endpoints only (an upstream has its own)",
            field="default_max_tokens",
            line=_line(node),
        )
    if getattr(node, "tag", None) == _NULL_TAG:
        return None
    value: int = _scalar(node, "default_max_tokens", int)
    if value <= 0:
        raise ConfigError("default_max_tokens must be positive", field="default_max_tokens",
                          line=_line(node))  # fmt: skip
    return value


def _capabilities(
    fields: dict[str, _Node], kind: EndpointKind, model: str, node: _Node
) -> frozenset[Capability]:
    """Declared capabilities; a `local` endpoint serves a bundled model and only what it can do."""
    bundled = BUNDLED_MODELS.get(model) if kind is EndpointKind.LOCAL else None
    if kind is EndpointKind.LOCAL and bundled is None:
        raise ConfigError(
            f"no bundled local model `{model}` (bundled: {', '.join(BUNDLED_MODELS)})",
            field="model",
            line=_line(fields["model"]),
        )
    if "capabilities" not in fields:
        return bundled or frozenset({Capability.CHAT})
    items = _sequence(fields["capabilities"], "capabilities")
    if not items:
        raise ConfigError(
            "capabilities must not be empty (chat, embeddings, tools, responses)",
            field="capabilities",
            line=_line(fields["capabilities"]),
        )
    declared = frozenset(_enum(n, "capabilities", Capability) for n in items)
    if bundled is not None and not declared <= bundled:
        raise ConfigError(
            f"the bundled model `{model}` offers only {', '.join(sorted(bundled))}",
            field="capabilities",
            line=_line(fields["capabilities"]),
        )
    return declared


def _timeouts(node: _Node | None) -> Timeouts:
    if node is None:
        return Timeouts()
    names = {"connect", "first_token", "idle", "total"}
    fields = _mapping(node, "timeouts", names, prefix="timeouts.")
    values = {k: _positive(v, f"timeouts.{k}") for k, v in fields.items()}
    return Timeouts(**values)


_POLICY_FIELDS = {
    "policy_id", "allow_classes", "allow_countries", "allow_providers", "max_retention",
    "store_content", "fallback", "limits_fail", "require_jurisdictions",
    "require_certifications", "min_seal", "keep_metadata", "personal_data",
}  # fmt: skip


def _policy(node: _Node) -> Policy:
    fields = _mapping(node, "policy", _POLICY_FIELDS,
                      required=("policy_id", "allow_classes", "max_retention"))  # fmt: skip
    classes = frozenset(
        _enum(n, "allow_classes", SovereigntyClass)
        for n in _sequence(fields["allow_classes"], "allow_classes")
    )
    return Policy(
        policy_id=_name(fields["policy_id"], "policy_id"),
        allow_classes=classes,
        allow_countries=frozenset(
            _country(n, "allow_countries")
            for n in _sequence(fields.get("allow_countries"), "allow_countries")
        ),
        allow_providers=frozenset(
            _name(n, "allow_providers")
            for n in _sequence(fields.get("allow_providers"), "allow_providers")
        ),
        max_retention=_duration(fields["max_retention"], "max_retention"),
        store_content=_duration(fields["store_content"], "store_content")
        if "store_content" in fields
        else ZERO,
        fallback=_optional(fields, "fallback", bool, True),
        limits_fail=_enum(fields.get("limits_fail"), "limits_fail", LimitsFail, LimitsFail.OPEN),
        require_jurisdictions=_jurisdictions(
            fields.get("require_jurisdictions"), "require_jurisdictions"
        ),
        require_certifications=_certifications(
            fields.get("require_certifications"), "require_certifications"
        ),
        min_seal=_seal(fields.get("min_seal"), "min_seal"),
        keep_metadata=_optional_duration(fields.get("keep_metadata"), "keep_metadata"),
        personal_data=_personal_data(fields.get("personal_data")),
    )


_PERSONAL_DATA_FIELDS = {"detectors", "restrict", "unscanned", "on_error", "max_scan_chars"}
_RESTRICT_FIELDS = {"allow_classes", "allow_countries", "allow_providers"}


def _personal_data(node: _Node | None) -> PersonalDataRules | None:
    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG):
        return None
    fields = _mapping(node, "personal_data", _PERSONAL_DATA_FIELDS, prefix="personal_data.")
    actions: list[tuple[Detector, Action]] = []
    detectors = fields.get("detectors")
    if detectors is not None:
        for key, value in _mapping(
            detectors, "personal_data.detectors", {d.value for d in Detector},
            prefix="personal_data.detectors.",
        ).items():  # fmt: skip
            what = f"personal_data.detectors.{key}"
            actions.append((Detector(key), _enum(value, what, Action)))
    restrict = _restrict(fields.get("restrict"))
    if any(a is Action.RESTRICT for _, a in actions) and restrict == RestrictTo():
        raise ConfigError(
            "a detector's action is `restrict` but `restrict` names no class, country or "
            "provider to restrict to",
            field="personal_data.restrict",
            line=_line(node),
        )
    max_scan = fields.get("max_scan_chars")
    return PersonalDataRules(
        actions=tuple(sorted(actions)),
        restrict=restrict,
        unscanned=_enum(fields.get("unscanned"), "personal_data.unscanned", Unscanned,
                        Unscanned.ALLOW),
        on_error=_enum(fields.get("on_error"), "personal_data.on_error", OnError, OnError.CLOSED),
        max_scan_chars=DEFAULT_MAX_SCAN_CHARS
        if max_scan is None
        else int(_positive(max_scan, "personal_data.max_scan_chars")),
    )  # fmt: skip


def _restrict(node: _Node | None) -> RestrictTo:
    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG):
        return RestrictTo()
    fields = _mapping(node, "personal_data.restrict", _RESTRICT_FIELDS,
                      prefix="personal_data.restrict.")  # fmt: skip
    classes = "personal_data.restrict.allow_classes"
    countries = "personal_data.restrict.allow_countries"
    providers = "personal_data.restrict.allow_providers"
    return RestrictTo(
        allow_classes=frozenset(
            _enum(n, classes, SovereigntyClass).value
            for n in _sequence(fields.get("allow_classes"), classes)
        ),
        allow_countries=frozenset(
            _country(n, countries) for n in _sequence(fields.get("allow_countries"), countries)
        ),
        allow_providers=frozenset(
            _name(n, providers) for n in _sequence(fields.get("allow_providers"), providers)
        ),
    )


def _optional_duration(node: _Node | None, what: str) -> Duration | None:
    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG):
        return None
    return _duration(node, what)


def _compose(text: str) -> _Node | None:
    try:
        return yaml.compose(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise ConfigError(
            f"not valid YAML: {error}", line=mark.line + 1 if mark else None
        ) from None


def _line(node: _Node) -> int:
    return int(node.start_mark.line) + 1


def _mapping(
    node: _Node, what: str, allowed: set[str], *, required: Iterable[str] = (), prefix: str = ""
) -> dict[str, _Node]:
    """The fields of a mapping node; errors name the field as `prefix` + key."""
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{what} must be a mapping", field=what, line=_line(node))
    fields: dict[str, _Node] = {}
    for key_node, value_node in node.value:
        key = str(key_node.value)
        if key not in allowed:
            raise ConfigError(
                f"unknown field `{key}` in {what} (allowed: {', '.join(sorted(allowed))})",
                field=prefix + key,
                line=_line(key_node),
            )
        if key in fields:
            raise ConfigError(
                f"field `{key}` given twice", field=prefix + key, line=_line(key_node)
            )
        fields[key] = value_node
    for key in required:
        if key not in fields:
            raise ConfigError(
                f"missing required field in {what}", field=prefix + key, line=_line(node)
            )
    return fields


def _sequence(node: _Node | None, what: str) -> list[_Node]:
    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG):
        return []
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(f"{what} must be a list", field=what, line=_line(node))
    return list(node.value)


def _scalar(node: _Node, what: str, kind: type[T] | tuple[type, ...]) -> T:
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(f"{what} must be a single value", field=what, line=_line(node))
    value = yaml.constructor.SafeConstructor().construct_object(node)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise ConfigError(f"{what} must not be a boolean", field=what, line=_line(node))
    if not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(f"{what} must be a {names}, got {value!r}", field=what, line=_line(node))
    return value  # type: ignore[return-value]


def _optional(fields: dict[str, _Node], name: str, kind: Any, default: Any) -> Any:
    node = fields.get(name)
    return default if node is None else _scalar(node, name, kind)


def _enum(node: _Node | None, what: str, enum: Callable[[str], T], default: T | None = None) -> T:
    if node is None:
        if default is None:
            raise ConfigError("missing required field", field=what)
        return default
    value = _scalar(node, what, str)
    try:
        return enum(value)
    except ValueError:
        known = ", ".join(m.value for m in enum)  # type: ignore[attr-defined]
        raise ConfigError(
            f"unknown {what} `{value}` (known: {known})", field=what, line=_line(node)
        ) from None


def _name(node: _Node, what: str) -> str:
    """A non-empty string without control characters: an id, a provider, a model or region."""
    value: str = _scalar(node, what, str)
    if not value.strip():
        raise ConfigError(f"{what} must not be empty", field=what, line=_line(node))
    _refuse_control(value, what, node)
    return value


def _text(
    fields: dict[str, _Node], name: str, default: T, kind: type | tuple[type, ...] = str
) -> str | T:
    """An optional value as text, without control characters."""
    node = fields.get(name)
    if node is None:
        return default
    value = str(_scalar(node, name, kind))
    _refuse_control(value, name, node)
    return value


def _refuse_control(value: str, what: str, node: _Node) -> None:
    found = _CONTROL.search(value)
    if found is not None:
        raise ConfigError(
            f"{what} must not contain control characters (found {found.group()!r} at "
            f"position {found.start()})",
            field=what,
            line=_line(node),
        )


def _country(node: _Node, what: str) -> str:
    """An ISO 3166-1 alpha-2 country code, upper-cased."""
    value: str = _scalar(node, what, str)
    if not _COUNTRY.match(value):
        raise ConfigError(
            f"{what} must be a two-letter ISO country code such as FR or DE, got {value!r}",
            field=what,
            line=_line(node),
        )
    return value.upper()


def _duration(node: _Node, what: str) -> Duration:
    value = _scalar(node, what, str)
    try:
        return Duration.parse(value)
    except ValueError as error:
        raise ConfigError(str(error), field=what, line=_line(node)) from None


def _non_negative(node: _Node, what: str) -> float:
    value = float(_scalar(node, what, (int, float)))
    if value < 0:
        raise ConfigError(f"{what} must not be negative", field=what, line=_line(node))
    return value


def _positive(node: _Node, what: str) -> float:
    value = float(_scalar(node, what, (int, float)))
    if value <= 0:
        raise ConfigError(f"{what} must be positive", field=what, line=_line(node))
    return value


def _refuse_duplicates(
    items: list[T], node: _Node | None, key: Callable[[T], str], field: str
) -> None:
    first: dict[str, int] = {}
    for item, item_node in zip(items, _sequence(node, field), strict=True):
        value = key(item)
        line = next((_line(v) for k, v in item_node.value if k.value == field), _line(item_node))
        if value in first:
            raise ConfigError(
                f"duplicate {field} `{value}` (first defined on line {first[value]})",
                field=field,
                line=line,
            )
        first[value] = line
