"""`llmeu receipt verify`: one line, exit 0 for a valid receipt and 1 otherwise."""

from __future__ import annotations

import http.server
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmeu.cli.main import main
from llmeu.evidence import KeyRing, SigningKey, build_receipt, sha256_hex
from tests.evidence.factories import trace_view

REQUEST = b'{"model":"mistral-small","messages":[{"role":"user","content":"Salut"}]}'
CONTENT = b"Salut !"


@pytest.fixture(scope="module")
def ring() -> KeyRing:
    return KeyRing(SigningKey.generate())


@pytest.fixture
def files(tmp_path: Path, ring: KeyRing) -> dict[str, Path]:
    receipt = build_receipt(
        trace_view(),
        ring.active,
        policy_sha256=None,
        request_sha256=sha256_hex(REQUEST),
        content_sha256=sha256_hex(CONTENT),
    )
    paths = {
        "receipt": tmp_path / "receipt.jws",
        "jwks": tmp_path / "jwks.json",
        "request": tmp_path / "request.json",
        "content": tmp_path / "content.txt",
    }
    paths["receipt"].write_text(receipt + "\n")
    paths["jwks"].write_text(json.dumps(ring.jwks()))
    paths["request"].write_bytes(REQUEST)
    paths["content"].write_bytes(CONTENT)
    return paths


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["receipt", "verify", *args])
    return status, capsys.readouterr().out


def test_a_valid_receipt_with_its_files(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(
        capsys,
        str(files["receipt"]),
        "--jwks", str(files["jwks"]),
        "--request", str(files["request"]),
        "--content", str(files["content"]),
    )  # fmt: skip
    assert status == 0
    assert out.startswith("valid: receipt of trace trc_0192f3a4b5c6d7e8f9a0b1c2d3e4 (completed)")
    assert out.rstrip().endswith(
        f"request and content digests match (receipt from file {files['receipt']})"
    )
    assert out.count("\n") == 1


def test_another_content_is_invalid(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    files["content"].write_bytes(CONTENT + b"!")
    status, out = run(
        capsys,
        str(files["receipt"]),
        "--jwks",
        str(files["jwks"]),
        "--content",
        str(files["content"]),
    )
    assert status == 1
    assert out.startswith("invalid: content digest differs")


def test_the_receipt_inline_or_on_stdin_says_where_it_was_read(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    receipt = files["receipt"].read_text().strip()
    status, out = run(capsys, receipt, "--jwks", str(files["jwks"]))
    assert status == 0 and out.rstrip().endswith(" (receipt given inline)"), out
    monkeypatch.setattr("sys.stdin", io.StringIO(receipt + "\n"))
    status, out = run(capsys, "-", "--jwks", str(files["jwks"]))
    assert status == 0 and out.rstrip().endswith(" (receipt from standard input)"), out
    status, out = run(capsys, str(files["receipt"]), "--jwks", str(files["jwks"]))
    assert status == 0 and out.rstrip().endswith(f" (receipt from file {files['receipt']})")


def tampered(receipt: str, kind: str) -> str:
    header, payload, signature = receipt.split(".")
    flipped = "B" if payload[5] == "A" else "A"
    return {
        "payload-changed": f"{header}.{payload[:5]}{flipped}{payload[6:]}.{signature}",
        "base64-not-url": f"{header}.{payload}.{signature[:-1]}+",
        "a-fourth-part": f"{header}.{payload}.{signature}.extra",
        "whitespace-around": f"  {receipt}\n",
    }[kind]


@pytest.mark.parametrize(
    "kind", ["payload-changed", "base64-not-url", "a-fourth-part", "whitespace-around"]
)
def test_a_receipt_given_inline_is_checked_as_one_never_taken_for_a_file_name(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    receipt = tampered(files["receipt"].read_text().strip(), kind)
    status, out = run(capsys, receipt, "--jwks", str(files["jwks"]))
    assert "File name too long" not in out and out.count("\n") == 1, out
    if kind == "whitespace-around":
        assert status == 0 and out.rstrip().endswith("(receipt given inline)"), out
    elif kind == "a-fourth-part":
        assert status == 1 and "is neither a file nor a receipt given inline" in out, out
    else:
        assert status == 1 and out.startswith("invalid: "), out
        assert out.rstrip().endswith("(receipt given inline, there being no file of that name)")


@pytest.mark.parametrize(
    "argument", ["missing-receipt.jws", "x" * 5000, "/no/such/dir/receipt.jws", "a.b.c/d.e"]
)
def test_neither_a_file_nor_a_receipt_says_both_were_tried(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], argument: str
) -> None:
    status, out = run(capsys, argument, "--jwks", str(files["jwks"]))
    assert status == 1 and out.count("\n") == 1, out
    assert (
        out.startswith("invalid: RECEIPT ")
        and "is neither a file nor a receipt given inline" in out
    )
    assert "File name too long" not in out and len(out) < 300, out


def test_json_output_carries_the_payload(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, str(files["receipt"]), "--jwks", str(files["jwks"]), "--json")
    result = json.loads(out)
    assert (status, result["valid"]) == (0, True)
    assert result["payload"]["routing"]["sovereignty_class"] == "eu_sovereign"


def test_unreadable_inputs_are_one_invalid_line(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, str(files["receipt"]), "--jwks", str(tmp_path / "absent.json"))
    assert status == 1
    assert out.startswith("invalid: ") and out.count("\n") == 1
    (tmp_path / "bad.json").write_text("<html>")
    status, out = run(capsys, str(files["receipt"]), "--jwks", str(tmp_path / "bad.json"))
    assert (status, out.strip()) == (
        1,
        f"invalid: the JWKS at {tmp_path / 'bad.json'} is not JSON "
        f"(receipt from file {files['receipt']})",
    )


@pytest.fixture
def jwks_url(ring: KeyRing) -> Iterator[str]:
    body = json.dumps(ring.jwks()).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/.well-known/llmeu/jwks.json" else 404)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/llmeu/jwks.json"
    server.shutdown()
    server.server_close()
    thread.join()


def test_the_jwks_from_a_gateway_url(
    files: dict[str, Path], jwks_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, str(files["receipt"]), "--jwks", jwks_url)[0] == 0
    status, out = run(capsys, str(files["receipt"]), "--jwks", jwks_url.replace("jwks", "nope"))
    assert status == 1 and out.startswith("invalid: Client error '404")
