"""SCIM's discovery documents (RFC 7644 §4): what this service provider supports.

PATCH and filters are supported (at most `MAX_COUNT` results a page); bulk
operations, sorting, ETags and password changes are not. The schemas list the
attributes the gateway reads (`llmeu.protocol.scim_wire`); every other
attribute a client sends is kept as sent.
"""

from __future__ import annotations

from typing import Any

from llmeu.protocol.scim_wire import GROUP, MAX_COUNT, USER

_LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
_CONFIG = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
_TYPE = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"


def service_provider_config(base: str) -> dict[str, Any]:
    return {
        "schemas": [_CONFIG],
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_COUNT},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": False},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": "The token in the variable `--scim-token-env` names",
                "primary": True,
            }
        ],
        "meta": {"resourceType": "ServiceProviderConfig",
                 "location": f"{base}/scim/v2/ServiceProviderConfig"},
    }  # fmt: skip


def resource_types(base: str) -> dict[str, Any]:
    types = [_resource_type(base, "User", "/Users", USER),
             _resource_type(base, "Group", "/Groups", GROUP)]  # fmt: skip
    return _list(types)


def schemas(base: str) -> dict[str, Any]:
    user = _schema(base, USER, "User", [
        _attribute("userName", required=True, uniqueness="server"),
        _attribute("externalId", case_exact=True),
        _attribute("displayName"),
        _attribute("active", kind="boolean"),
        {**_attribute("name", kind="complex"),
         "subAttributes": [_attribute(n) for n in ("formatted", "familyName", "givenName")]},
        {**_attribute("emails", kind="complex", multi=True),
         "subAttributes": [_attribute("value"), _attribute("type"),
                           _attribute("primary", kind="boolean")]},
    ])  # fmt: skip
    group = _schema(base, GROUP, "Group", [
        _attribute("displayName", required=True),
        _attribute("externalId", case_exact=True),
        {**_attribute("members", kind="complex", multi=True),
         "subAttributes": [_attribute("value", case_exact=True), _attribute("type")]},
    ])  # fmt: skip
    return _list([user, group])


def _list(resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schemas": [_LIST], "totalResults": len(resources), "startIndex": 1,
            "itemsPerPage": len(resources), "Resources": resources}  # fmt: skip


def _resource_type(base: str, name: str, endpoint: str, schema: str) -> dict[str, Any]:
    return {
        "schemas": [_TYPE],
        "id": name,
        "name": name,
        "endpoint": endpoint,
        "schema": schema,
        "meta": {"resourceType": "ResourceType",
                 "location": f"{base}/scim/v2/ResourceTypes/{name}"},
    }  # fmt: skip


def _schema(base: str, urn: str, name: str, attributes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": [_SCHEMA],
        "id": urn,
        "name": name,
        "attributes": attributes,
        "meta": {"resourceType": "Schema", "location": f"{base}/scim/v2/Schemas/{urn}"},
    }


def _attribute(
    name: str,
    *,
    kind: str = "string",
    required: bool = False,
    multi: bool = False,
    case_exact: bool = False,
    uniqueness: str = "none",
) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "multiValued": multi,
        "required": required,
        "caseExact": case_exact,
        "mutability": "readWrite",
        "returned": "default",
        "uniqueness": uniqueness,
    }
