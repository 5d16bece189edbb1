"""Whether a native endpoint's credentials are there, decided offline and without the SDKs.

`llmeu routes`, `llmeu config check` and the gateway's start ask this of
every endpoint; answering must not load botocore, google-auth or
azure-identity (about a second of imports), which load only when an
endpoint of their kind is built. Reasons name variables and files, never
their values.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from llmeu.routing.catalog import Endpoint

AWS_CHAIN_VARIABLES = (
    "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
)
"""Variables that point botocore's chain at credentials (besides the key pair itself)."""


def missing_aws_credentials(environ: Mapping[str, str]) -> str | None:
    """Why botocore's chain has nothing to find, or None when it has. Instance-metadata
    roles cannot be seen offline: on EC2, set AWS_PROFILE or the key pair."""
    if environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"):
        return None
    if any(environ.get(name) for name in AWS_CHAIN_VARIABLES):
        return None
    return (
        "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, "
        "are not set"
    )


def google_key_file(endpoint: Endpoint, environ: Mapping[str, str]) -> str | None:
    """The service-account key file a `vertex` or `vertex_anthropic` endpoint uses."""
    return endpoint.upstream.credentials_file or environ.get("GOOGLE_APPLICATION_CREDENTIALS")


def entra_available() -> bool:
    """Whether azure-identity is installed (`auth: entra`)."""
    try:
        return importlib.util.find_spec("azure.identity") is not None
    except ModuleNotFoundError:  # not even the `azure` namespace is installed
        return False
