"""The three native fake upstreams as real processes, and a gateway configuration that uses them.

`NativeFakes.start(tmp)` starts fake Azure OpenAI, Bedrock and Vertex (with a
freshly generated service-account key whose token URI is the fake Vertex,
which also serves Claude on Vertex for the `vertex_anthropic` kind)
and `config()` gives `llmeu serve` a configuration with, per kind, a normal
endpoint, a throttling one tried first for `<kind>-fallback`, and their
aliases; `environ()` the variables holding their credentials.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.processes import REPO, FakeUpstream, _wait_http, free_port

AWS_KEY = "AKIDNATIVETEST"
AWS_SECRET = "native-test-aws-secret-0123456789"
AZURE_KEY = "native-test-azure-key-0123456789"
SECRETS = (AWS_SECRET, AZURE_KEY)


def _start(module: str, port: int, *args: str) -> FakeUpstream:
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--port", str(port), *args],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    fake = FakeUpstream(port, proc)
    try:
        _wait_http(f"http://127.0.0.1:{port}/_stats", proc, 15, None)
    except BaseException:
        fake.stop()
        raise
    return fake


@dataclass
class NativeFakes:
    azure: FakeUpstream
    bedrock: FakeUpstream
    vertex: FakeUpstream
    key_file: Path
    private_key: str

    @classmethod
    def start(cls, tmp: Path) -> NativeFakes:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()  # fmt: skip
        public = tmp / "sa-public.pem"
        public.write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))  # fmt: skip
        vertex_port = free_port()
        key_file = tmp / "service-account.json"
        key_file.write_text(json.dumps({
            "type": "service_account", "project_id": "llmeu-test", "private_key_id": "k1",
            "private_key": private, "client_email": "llmeu@llmeu-test.iam.gserviceaccount.com",
            "client_id": "1", "token_uri": f"http://127.0.0.1:{vertex_port}/token",
        }))  # fmt: skip
        started: list[FakeUpstream] = []
        try:
            azure = _start("tests.support.fake_azure", free_port(), "--api-key", AZURE_KEY)
            started.append(azure)
            bedrock = _start("tests.support.fake_bedrock", free_port(),
                             "--access-key", AWS_KEY, "--secret", AWS_SECRET)  # fmt: skip
            started.append(bedrock)
            vertex = _start("tests.support.fake_vertex", vertex_port, "--public-key", str(public))
        except BaseException:
            for fake in started:
                fake.stop()
            raise
        return cls(azure, bedrock, vertex, key_file, private)

    def stop(self) -> None:
        for fake in (self.azure, self.bedrock, self.vertex):
            fake.stop()

    def reset(self) -> None:
        for fake in (self.azure, self.bedrock, self.vertex):
            fake.reset()

    def environ(self, aws_secret: str = AWS_SECRET) -> dict[str, str]:
        return {"AZURE_TEST_KEY": AZURE_KEY, "AWS_ACCESS_KEY_ID": AWS_KEY,
                "AWS_SECRET_ACCESS_KEY": aws_secret}  # fmt: skip

    def config(self) -> str:
        def url(fake: FakeUpstream) -> str:
            return f"http://127.0.0.1:{fake.port}"

        def endpoint(endpoint_id: str, kind: str, model: str, aliases: str, region: str,
                     extra: str, priority: int = 10) -> str:  # fmt: skip
            return (
                f"  - endpoint_id: {endpoint_id}\n    provider: {endpoint_id.split('-')[0]}\n"
                f'    kind: {kind}\n    model: "{model}"\n    model_version: "1"\n'
                f"    aliases: [{aliases}]\n    inference_region: {region}\n    country: SE\n"
                "    jurisdiction: US\n    sovereignty_class: eu_resident\n    retention: P0D\n"
                "    price_eur_per_mtok: {input: 1.0, output: 2.0}\n"
                f"    priority: {priority}\n    capabilities: [chat, tools]\n{extra}"
            )

        azure = f"    base_url: {url(self.azure)}\n    api_key_env: AZURE_TEST_KEY\n"
        bedrock = f"    base_url: {url(self.bedrock)}\n    region: eu-central-1\n"

        def google(region: str) -> str:
            return (f"    base_url: {url(self.vertex)}\n    region: {region}\n"
                    f"    project: llmeu-test\n    credentials_file: {self.key_file}\n")  # fmt: skip

        vertex = google("europe-west4")
        endpoints = [
            endpoint("azure-swedencentral-gpt", "azure_openai", "gpt-4o", "azure-model",
                     "swedencentral", azure + "    deployment: gpt-4o-eu\n"
                     "    api_version: 2024-10-21\n"),
            endpoint("azure-v1-gpt", "azure_openai", "gpt-4o-eu", "azure-v1-model",
                     "swedencentral", azure),
            endpoint("azure-throttled", "azure_openai", "fake;fault=throttle", "azure-fallback",
                     "francecentral", azure),
            endpoint("azure-spare", "azure_openai", "gpt-4o-eu", "azure-fallback",
                     "swedencentral", azure, priority=20),
            endpoint("bedrock-eu-central-1-claude", "bedrock", "eu.anthropic.claude-test-v1:0",
                     "bedrock-model", "eu-central-1", bedrock),
            endpoint("bedrock-throttled", "bedrock", "fake;fault=throttle", "bedrock-fallback",
                     "eu-west-3", bedrock),
            endpoint("bedrock-spare", "bedrock", "eu.anthropic.claude-test-v1:0",
                     "bedrock-fallback, bedrock-stream-fallback", "eu-central-1", bedrock,
                     priority=20),
            endpoint("bedrock-throttle-event", "bedrock", "fake;fault=throttle_event",
                     "bedrock-stream-fallback", "eu-north-1", bedrock),
            endpoint("bedrock-stalled", "bedrock", "fake;fault=stall", "bedrock-slow-fallback",
                     "eu-west-1", bedrock + "    timeouts: {first_token: 0.5}\n"),
            endpoint("bedrock-patient", "bedrock", "eu.anthropic.claude-test-v1:0",
                     "bedrock-slow-fallback", "eu-central-1", bedrock, priority=20),
            endpoint("vertex-europe-west4-gemini", "vertex", "gemini-test", "vertex-model",
                     "europe-west4", vertex),
            endpoint("vertex-throttled", "vertex", "fake;fault=status_429", "vertex-fallback",
                     "europe-west1", vertex),
            endpoint("vertex-spare", "vertex", "gemini-test", "vertex-fallback",
                     "europe-west4", vertex, priority=20),
            endpoint("vertex-europe-west1-claude", "vertex_anthropic", "claude-test@20250101",
                     "vertex-claude-model", "europe-west1", google("europe-west1")),
            endpoint("vertex-claude-throttled", "vertex_anthropic", "fake;fault=status_429",
                     "vertex-claude-fallback", "europe-west4", vertex),
            endpoint("vertex-claude-529", "vertex_anthropic", "fake;fault=status_529",
                     "vertex-claude-overloaded", "europe-west4", vertex),
            endpoint("vertex-claude-spare", "vertex_anthropic", "claude-test@20250101",
                     "vertex-claude-fallback, vertex-claude-overloaded", "europe-west1",
                     google("europe-west1"),
                     priority=20),
            endpoint("vertex-unreadable-key", "vertex", "gemini-test", "vertex-broken",
                     "europe-west4", f"    base_url: {url(self.vertex)}\n    region: europe-west4\n"
                     "    credentials_file: /nonexistent/sa.json\n"),
            endpoint("azure-unset-key", "azure_openai", "gpt-4o-eu", "azure-broken",
                     "swedencentral", f"    base_url: {url(self.azure)}\n"
                     "    api_key_env: AZURE_KEY_NOBODY_SET\n"),
        ]  # fmt: skip
        policy = (
            "\n  - policy_id: eu-resident\n    allow_classes: [eu_sovereign, eu_resident]\n"
            "    max_retention: P0D\n    store_content: P0D\n"
        )
        return "endpoints:\n" + "".join(endpoints) + "policies:" + policy + (
            "default_policy: eu-resident\n")  # fmt: skip
