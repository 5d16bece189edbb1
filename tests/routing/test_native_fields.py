"""The native kinds' fields in the configuration file: what they mean, each refusal naming
its field, and the credentials each kind waits for before it is routable."""

from __future__ import annotations

import pytest

from llmeu.errors import ConfigError
from llmeu.providers.native_credentials import entra_available
from llmeu.providers.table import missing_credentials
from llmeu.routing.catalog import AzureAuth, Catalog, EndpointKind
from llmeu.routing.config_file import parse_endpoints

COMMON = """\
    model: m
    inference_region: eu
    sovereignty_class: eu_resident
    retention: P0D
    price_eur_per_mtok: {input: 1, output: 2}
"""


def one(kind: str, fields: str) -> str:
    return f"endpoints:\n  - endpoint_id: e\n    provider: p\n    kind: {kind}\n{COMMON}{fields}"


def test_bedrock_gets_its_regional_url_and_region() -> None:
    (endpoint,) = parse_endpoints(one("bedrock", "    region: eu-central-1\n"))
    assert endpoint.kind is EndpointKind.BEDROCK
    assert endpoint.base_url == "https://bedrock-runtime.eu-central-1.amazonaws.com"
    assert endpoint.upstream.region == "eu-central-1"


def test_vertex_gets_its_regional_url_project_and_key_file() -> None:
    text = one("vertex", "    region: europe-west4\n    project: acme\n"
                         "    credentials_file: /etc/llmeu/sa.json\n")  # fmt: skip
    (endpoint,) = parse_endpoints(text)
    assert endpoint.base_url == "https://europe-west4-aiplatform.googleapis.com"
    assert (endpoint.upstream.project, endpoint.upstream.credentials_file) == (
        "acme", "/etc/llmeu/sa.json")  # fmt: skip


def test_claude_on_vertex_gets_the_regional_url_project_and_key_file() -> None:
    text = one("vertex_anthropic", "    region: europe-west1\n    project: acme\n"
                                   "    credentials_file: /etc/llmeu/sa.json\n")  # fmt: skip
    (endpoint,) = parse_endpoints(text)
    assert endpoint.kind is EndpointKind.VERTEX_ANTHROPIC
    assert endpoint.base_url == "https://europe-west1-aiplatform.googleapis.com"
    assert (endpoint.upstream.region, endpoint.upstream.project) == ("europe-west1", "acme")
    assert endpoint.upstream.credentials_file == "/etc/llmeu/sa.json"


def test_azure_deployment_with_an_unquoted_api_version() -> None:
    text = one("azure_openai", "    base_url: https://acme.openai.azure.com\n"
               "    api_key_env: AZ_KEY\n    deployment: gpt-4o-eu\n    api_version: 2024-10-21\n")  # fmt: skip
    (endpoint,) = parse_endpoints(text)
    assert (endpoint.upstream.deployment, endpoint.upstream.api_version) == (
        "gpt-4o-eu", "2024-10-21")  # fmt: skip
    assert endpoint.upstream.auth is AzureAuth.API_KEY


REFUSED = [
    pytest.param("bedrock", "", "region", "needs `region`", id="bedrock-without-region"),
    pytest.param("vertex", "    project: p\n", "region", "needs `region`", id="vertex-no-region"),
    pytest.param("vertex_anthropic", "    project: p\n", "region", "needs `region`",
                 id="vertex-anthropic-no-region"),
    pytest.param("vertex_anthropic", "    region: europe-west1\n    deployment: d\n",
                 "deployment", "applies to", id="deployment-on-vertex-anthropic"),
    pytest.param("vertex_anthropic", "    region: europe-west1\n    credentials_file: '{}'\n",
                 "credentials_file", "never the key itself", id="inline-key-vertex-anthropic"),
    pytest.param("bedrock", "    region: Frankfurt\n", "region", "must look like",
                 id="bad-region"),
    pytest.param("openai", "    base_url: https://x\n    region: eu-west-1\n", "region",
                 "applies to", id="region-on-openai"),
    pytest.param("bedrock", "    region: eu-west-1\n    deployment: d\n", "deployment",
                 "applies to", id="deployment-on-bedrock"),
    pytest.param("azure_openai", "    base_url: https://x\n    api_key_env: K\n"
                 "    deployment: d\n", "api_version", "needs `api_version`",
                 id="deployment-without-api-version"),
    pytest.param("azure_openai", "    base_url: https://x\n", "api_key_env",
                 "needs `api_key_env`", id="azure-without-key-or-entra"),
    pytest.param("azure_openai", "    base_url: https://x\n    auth: password\n", "auth",
                 "unknown auth", id="unknown-auth"),
    pytest.param("azure_openai", "    base_url: https://x\n    api_key_env: K\n"
                 "    deployment: a/b\n    api_version: v\n", "deployment", "plain name",
                 id="deployment-with-a-slash"),
    pytest.param("azure_openai", "    base_url: https://x\n    base_url_env: URL\n"
                 "    api_key_env: K\n", "base_url_env", "not both", id="both-urls"),
    pytest.param("vertex", "    region: europe-west4\n    credentials_file: '{\"type\": 1}'\n",
                 "credentials_file", "never the key itself", id="inline-key"),
    pytest.param("vertex", "    region: europe-west4\n    credentials_file: '-----BEGIN'\n",
                 "credentials_file", "never the key itself", id="inline-pem"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "fields", "field", "message"), REFUSED)
def test_refused_naming_the_field(kind: str, fields: str, field: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_endpoints(one(kind, fields))
    assert raised.value.field == field
    assert message in str(raised.value)


CREDENTIALS = [
    pytest.param("bedrock", "    region: eu-west-1\n", {}, "no AWS credentials", id="aws-none"),
    pytest.param("bedrock", "    region: eu-west-1\n",
                 {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}, None, id="aws-pair"),
    pytest.param("bedrock", "    region: eu-west-1\n    api_key_env: BEDROCK_KEY\n", {},
                 "BEDROCK_KEY is not set", id="bedrock-api-key"),
    pytest.param("vertex", "    region: europe-west4\n", {}, "no Google credentials",
                 id="google-none"),
    pytest.param("vertex", "    region: europe-west4\n",
                 {"GOOGLE_APPLICATION_CREDENTIALS": "/k.json"}, None, id="google-adc-file"),
    pytest.param("azure_openai", "    base_url_env: AZ_URL\n    api_key_env: AZ_KEY\n",
                 {"AZ_KEY": "k"}, "AZ_URL is not set", id="azure-url-env"),
    pytest.param("azure_openai", "    base_url_env: AZ_URL\n    api_key_env: AZ_KEY\n",
                 {"AZ_KEY": "k", "AZ_URL": "https://acme.openai.azure.com"}, None,
                 id="azure-set"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "fields", "environ", "reason"), CREDENTIALS)
def test_skipped_until_credentials_are_set(
    kind: str, fields: str, environ: dict[str, str], reason: str | None
) -> None:
    found = missing_credentials(Catalog(parse_endpoints(one(kind, fields))), environ)
    assert (reason in found.get("e", "")) if reason else found == {}
    for value in environ.values():
        assert value not in found.get("e", "").split()


@pytest.mark.skipif(entra_available(), reason="azure-identity is installed here")
def test_entra_without_azure_identity_is_skipped_saying_why() -> None:
    text = one("azure_openai", "    base_url: https://acme.openai.azure.com\n    auth: entra\n")
    found = missing_credentials(Catalog(parse_endpoints(text)), {})
    assert "azure-identity" in found["e"]
