"""AWS Signature Version 4 for Bedrock calls, through botocore's signer and credential chain.

The signature itself is botocore's (`SigV4Auth`): llmeu only decides the
clock, so that the signer can be checked against AWS's published test suite
with its fixed date, and hands the signed headers to its own HTTP client.
Credentials come from the environment the settings snapshotted
(`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), else from
botocore's whole chain (profile, SSO, web identity, container, instance
metadata), whose refreshable credentials renew themselves before they expire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from botocore.auth import SIGV4_TIMESTAMP, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, ReadOnlyCredentials
from botocore.exceptions import BotoCoreError
from botocore.session import Session

from llmeu.errors import UpstreamError


def credentials_from(environ: Mapping[str, str]) -> Credentials | None:
    """Static credentials from the environment, or botocore's chain's; None when neither
    has any."""
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        return Credentials(key, secret, environ.get("AWS_SESSION_TOKEN") or None)
    try:
        found: Credentials | None = Session().get_credentials()
    except BotoCoreError as error:
        raise UpstreamError(
            f"could not load AWS credentials: {type(error).__name__}", retryable=True
        ) from None
    return found


def sign(
    credentials: Credentials | ReadOnlyCredentials,
    *,
    service: str,
    region: str,
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    now: datetime | None = None,
) -> list[tuple[bytes, bytes]]:
    """The request's headers with `Authorization`, `X-Amz-Date` (and the session token)
    added by botocore's SigV4 signer, as the HTTP client sends them."""
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
    signer = SigV4Auth(credentials, service, region)
    request.context["timestamp"] = (now or datetime.now(UTC)).strftime(SIGV4_TIMESTAMP)
    # SigV4Auth.add_auth with our clock: the same four steps, in the same order.
    signer._modify_request_before_signing(request)
    canonical = signer.canonical_request(request)
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    signer._inject_signature_to_request(request, signature)
    return [(name.lower().encode(), str(value).encode()) for name, value in request.headers.items()]
