"""SigV4 through the signer as the Bedrock provider calls it, against AWS's published suite.

The vectors are those of the AWS Signature Version 4 test suite
(`aws-sig-v4-test-suite`): credentials AKIDEXAMPLE, region us-east-1,
service `service`, 2015-08-30T12:36:00Z; each request and its expected
`Authorization` as the suite's `.req` and `.authz` files give them. The fake
Bedrock's own verifier (written from the specification, not from botocore)
accepts what the signer makes and refuses a signature made with another
secret.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.credentials import Credentials

from llmeu.providers.aws_signing import sign
from llmeu.providers.native_credentials import missing_aws_credentials
from tests.support.fake_bedrock import FakeBedrock
from tests.support.fake_http import Request

SUITE_KEY = "AKIDEXAMPLE"
SUITE_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUITE_TIME = datetime(2015, 8, 30, 12, 36, 0, tzinfo=UTC)
SCOPE = f"Credential={SUITE_KEY}/20150830/us-east-1/service/aws4_request"

VECTORS = [
    pytest.param("GET", "/", [], b"", "host;x-amz-date",
                 "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
                 id="get-vanilla"),
    pytest.param("POST", "/", [], b"", "host;x-amz-date",
                 "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
                 id="post-vanilla"),
    pytest.param("GET", "/?Param2=value2&Param1=value1", [], b"", "host;x-amz-date",
                 "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
                 id="get-vanilla-query-order-key-case"),
    pytest.param("POST", "/?Param1=value1", [], b"", "host;x-amz-date",
                 "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
                 id="post-vanilla-query"),
    pytest.param("POST", "/", [("Content-Type", "application/x-www-form-urlencoded")],
                 b"Param1=value1", "content-type;host;x-amz-date",
                 "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
                 id="post-x-www-form-urlencoded"),
    pytest.param("GET", "/", [("My-Header1", "value1"), ("My-Header2", '"a   b   c"')], b"",
                 "host;my-header1;my-header2;x-amz-date",
                 "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
                 id="get-header-value-trim"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "target", "headers", "body", "signed", "signature"), VECTORS)
def test_the_signer_matches_the_aws_suite(
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: bytes,
    signed: str,
    signature: str,
) -> None:
    out = dict(sign(
        Credentials(SUITE_KEY, SUITE_SECRET), service="service", region="us-east-1",
        method=method, url=f"https://example.amazonaws.com{target}", headers=headers, body=body,
        now=SUITE_TIME,
    ))  # fmt: skip
    assert out[b"x-amz-date"] == b"20150830T123600Z"
    assert out[b"authorization"].decode() == (
        f"AWS4-HMAC-SHA256 {SCOPE}, SignedHeaders={signed}, Signature={signature}"
    )


def _signed_request(
    secret: str, path: str = "/model/eu.anthropic.claude-x-v1%3A0/converse"
) -> Request:
    body = b'{"messages": []}'
    headers = [("content-type", "application/json"), ("accept", "application/json")]
    out = sign(Credentials("AKIDTEST", secret, "session-token"), service="bedrock",
               region="eu-central-1", method="POST", url=f"http://127.0.0.1:8123{path}",
               headers=headers, body=body)  # fmt: skip
    sent = {k.decode(): v.decode() for k, v in out}
    sent["host"] = "127.0.0.1:8123"
    return Request("POST", path, "", sent, body, path)


def test_the_fake_bedrock_accepts_the_signature_made_with_its_secret() -> None:
    fake = FakeBedrock("AKIDTEST", "the-secret")
    request = _signed_request("the-secret")
    assert request.headers["x-amz-security-token"] == "session-token"
    assert fake.verify(request) is None


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda r: setattr(r, "body", r.body + b" "), id="body"),
        pytest.param(lambda r: setattr(r, "path", "/model/other/converse"), id="path"),
        pytest.param(lambda r: r.headers.update({"x-amz-date": "20200101T000000Z"}), id="date"),
    ],
)
def test_the_fake_bedrock_refuses_a_tampered_request(tamper: object) -> None:
    fake = FakeBedrock("AKIDTEST", "the-secret")
    request = _signed_request("the-secret")
    tamper(request)  # type: ignore[operator]
    assert fake.verify(request) is not None


def test_the_fake_bedrock_refuses_another_secret() -> None:
    fake = FakeBedrock("AKIDTEST", "the-secret")
    assert "does not match" in str(fake.verify(_signed_request("another-secret")))


@pytest.mark.parametrize(
    ("environ", "missing"),
    [
        pytest.param({}, True, id="nothing"),
        pytest.param({"AWS_ACCESS_KEY_ID": "A"}, True, id="key-without-secret"),
        pytest.param({"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S"}, False, id="pair"),
        pytest.param({"AWS_PROFILE": "eu"}, False, id="profile"),
    ],
)
def test_missing_aws_credentials(environ: dict[str, str], missing: bool) -> None:
    reason = missing_aws_credentials(environ)
    assert (reason is not None) is missing
    assert "S" not in (reason or "").split()  # never a secret in the reason
