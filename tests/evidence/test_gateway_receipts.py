"""Receipts from a real gateway, checked by an independent JOSE implementation (Node's `jose`).

The gateway runs as a process on 127.0.0.1 in front of the fake upstream;
receipts come back on the answer (`x-llmeu-receipt`, the final frame's
routing block) and from the platform API, and `tests/evidence/jose/verify.mjs`
verifies them against the published JWKS.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmeu.evidence.signing_keys import SigningKey
from tests.support.processes import REPO, FakeUpstream, Gateway, config_yaml, fake_endpoint

JOSE = REPO / "tests/evidence/jose"
pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (JOSE / "node_modules/jose").is_dir(),
    reason="Node.js and `npm ci` in tests/evidence/jose (make install) are needed",
)


def jose_verify(tmp_path: Path, jwks: dict[str, Any], receipt: str) -> dict[str, Any]:
    """What Node's `jose` says of a receipt: {"valid": true, "payload": …} or an error."""
    jwks_file, receipt_file = tmp_path / "jwks.json", tmp_path / "receipt.jws"
    jwks_file.write_text(json.dumps(jwks))
    receipt_file.write_text(receipt)
    done = subprocess.run(
        ["node", str(JOSE / "verify.mjs"), str(jwks_file), str(receipt_file)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout)
    assert (done.returncode == 0) == result["valid"], done.stdout + done.stderr
    return result


def one_byte_changed(receipt: str) -> str:
    """The receipt with one byte of its payload changed (and validly re-encoded)."""
    header, payload, signature = receipt.split(".")
    raw = bytearray(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    at = raw.index(b'"status"') + len('"status":"')
    raw[at] ^= 0x01
    changed = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    return f"{header}.{changed}.{signature}"


def chat(client: httpx.Client, body: dict[str, Any]) -> tuple[httpx.Response, bytes]:
    raw = json.dumps(body).encode()
    response = client.post("/v1/chat/completions", content=raw,
                           headers={"content-type": "application/json"})  # fmt: skip
    return response, raw


def streamed(client: httpx.Client, body: dict[str, Any]) -> tuple[list[dict[str, Any]], bytes]:
    raw = json.dumps({**body, "stream": True}).encode()
    frames = []
    with client.stream("POST", "/v1/chat/completions", content=raw,
                       headers={"content-type": "application/json"}) as response:  # fmt: skip
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: {"):
                frames.append(json.loads(line.removeprefix("data: ")))
    return frames, raw


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def gateway(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> Gateway:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    return gateway_factory(config=config, data_dir=tmp_path / "data")


def admin(gateway: Gateway) -> httpx.Client:
    headers = {"authorization": f"Bearer {gateway.admin_key}"}
    return httpx.Client(base_url=gateway.url, headers=headers, timeout=30)


def test_receipts_on_answers_and_from_the_api_verify_with_node_jose(
    gateway: Gateway, tmp_path: Path
) -> None:
    with admin(gateway) as client:
        jwks = httpx.get(f"{gateway.url}/.well-known/llmeu/jwks.json").json()  # no key needed
        question = {"model": "fake-model", "messages": [{"role": "user", "content": "Bonjour"}],
                    "llmeu": {"receipt": True}}  # fmt: skip
        response, raw = chat(client, question)
        assert response.status_code == 200, response.text
        receipt = response.headers["x-llmeu-receipt"]
        trace_id = response.json()["llmeu"]["trace_id"]
        answer = response.json()["choices"][0]["message"]["content"]

        checked = jose_verify(tmp_path, jwks, receipt)
        assert checked["valid"] and checked["typ"] == "llmeu-receipt+jws"
        assert checked["kid"] == jwks["keys"][0]["kid"]
        payload = checked["payload"]
        assert payload["trace_id"] == trace_id and payload["status"] == "completed"
        assert payload["routing"]["endpoint_id"] == "fakeprov-fr-a"
        assert payload["digests"] == {"request_sha256": sha256(raw),
                                      "content_sha256": sha256(answer.encode())}  # fmt: skip
        assert payload["policy"]["policy_id"] == "eu-strict"
        assert len(payload["policy"]["sha256"]) == 64
        assert "Bonjour" not in json.dumps(payload)

        stored = client.get(f"/v1/platform/traces/{trace_id}/receipt")
        assert stored.status_code == 200
        assert stored.json() == {"object": "trace.receipt", "trace_id": trace_id,
                                 "kid": checked["kid"], "receipt": receipt}  # fmt: skip

        frames, raw_stream = streamed(client, question)
        routing = frames[-1]["llmeu"]
        streamed_check = jose_verify(tmp_path, jwks, routing["receipt"])
        assert streamed_check["payload"]["trace_id"] == routing["trace_id"]
        assert streamed_check["payload"]["stream"] is True
        text = "".join(f["choices"][0]["delta"].get("content") or "" for f in frames)
        assert streamed_check["payload"]["digests"]["content_sha256"] == sha256(text.encode())
        assert streamed_check["payload"]["digests"]["request_sha256"] == sha256(raw_stream)

        unasked, _ = chat(client, {**question, "llmeu": {}})
        assert "x-llmeu-receipt" not in unasked.headers

    tampered = jose_verify(tmp_path, jwks, one_byte_changed(receipt))
    assert tampered == {"valid": False, "error": "ERR_JWS_SIGNATURE_VERIFICATION_FAILED"}

    (tmp_path / "jwks.json").write_text(json.dumps(jwks))
    (tmp_path / "body.json").write_bytes(raw)
    (tmp_path / "r.jws").write_text(receipt)
    ours = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "receipt", "verify", str(tmp_path / "r.jws"),
         "--jwks", f"{gateway.url}/.well-known/llmeu/jwks.json",
         "--request", str(tmp_path / "body.json")],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert ours.returncode == 0 and ours.stdout.startswith(f"valid: receipt of trace {trace_id}")


def test_receipts_are_tenant_isolated_like_traces(gateway: Gateway) -> None:
    with admin(gateway) as client:
        keys = [client.post("/v1/platform/keys", json={"name": n}).json()["key"] for n in "ab"]
    alice, bob = (
        httpx.Client(base_url=gateway.url, headers={"authorization": f"Bearer {k}"}, timeout=30)
        for k in keys
    )
    with alice, bob:
        response, _ = chat(alice, {"model": "fake-model",
                                   "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
        trace_id = response.json()["llmeu"]["trace_id"]
        assert alice.get(f"/v1/platform/traces/{trace_id}/receipt").status_code == 200
        refused = bob.get(f"/v1/platform/traces/{trace_id}/receipt")
        assert refused.status_code == 404
        assert refused.json()["error"]["code"] == "trace_not_found"
        assert httpx.get(f"{gateway.url}/v1/platform/traces/{trace_id}/receipt").status_code == 401


def test_receipts_signed_before_and_after_a_rotation_verify_against_the_jwks(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    data_dir = tmp_path / "data"
    question = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}],
                "llmeu": {"receipt": True}}  # fmt: skip
    first = gateway_factory(config=config, data_dir=data_dir)
    key_files = list((data_dir / "signing-keys").glob("*.key"))
    assert len(key_files) == 1 and stat.S_IMODE(key_files[0].stat().st_mode) == 0o600
    with admin(first) as client:
        before = chat(client, question)[0].headers["x-llmeu-receipt"]
    first.stop()

    rotated = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "keys", "rotate-signing",
         "--data-dir", str(data_dir), "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert rotated.returncode == 0, rotated.stderr
    assert len(json.loads(rotated.stdout)["published"]) == 2
    assert len(list((data_dir / "signing-keys").glob("*.key"))) == 1  # the old private key: gone

    second = gateway_factory(config=config, data_dir=data_dir)
    with admin(second) as client:
        after = chat(client, question)[0].headers["x-llmeu-receipt"]
    jwks = httpx.get(f"{second.url}/.well-known/llmeu/jwks.json").json()
    assert len(jwks["keys"]) == 2 and jwks["keys"][0]["kid"] == json.loads(rotated.stdout)["active"]
    kids = {jose_verify(tmp_path, jwks, r)["kid"] for r in (before, after)}
    assert kids == {k["kid"] for k in jwks["keys"]}


def test_a_signing_key_from_the_environment_is_used_and_never_written(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    key = SigningKey.generate()
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    gateway = gateway_factory(
        config=config, data_dir=tmp_path / "data",
        env={"LLMEU_SIGNING_KEY": key.private_pem().decode()},
    )  # fmt: skip
    jwks = httpx.get(f"{gateway.url}/.well-known/llmeu/jwks.json").json()
    assert [k["kid"] for k in jwks["keys"]] == [key.kid]
    assert not (tmp_path / "data/signing-keys").exists()
    refused = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "keys", "rotate-signing",
         "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
        env={**os.environ, "LLMEU_SIGNING_KEY": key.private_pem().decode()},
    )  # fmt: skip
    assert refused.returncode == 1 and "$LLMEU_SIGNING_KEY" in refused.stderr


def console_check(gateway: Gateway, trace: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(JOSE / "console_check.mjs"), gateway.url, gateway.admin_key,
         json.dumps(trace)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_consoles_receipt_check_tells_valid_from_another_calls(gateway: Gateway) -> None:
    with admin(gateway) as client:
        response, _ = chat(client, {"model": "fake-model",
                                    "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
        trace = client.get(f"/v1/platform/traces/{response.json()['llmeu']['trace_id']}").json()
    jwks = httpx.get(f"{gateway.url}/.well-known/llmeu/jwks.json").json()
    checked = console_check(gateway, {"id": trace["id"], "status": trace["status"]})
    assert checked == {"state": "valid", "reason": f"signed by key {jwks['keys'][0]['kid']}",
                       "kid": jwks["keys"][0]["kid"]}  # fmt: skip
    other = console_check(gateway, {"id": trace["id"], "status": "failed"})
    assert other["state"] == "invalid" and other["reason"] == "the receipt speaks of another call"
