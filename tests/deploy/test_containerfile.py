"""The Containerfile's promises that can be read without building it (`make image-test`
builds and runs both images)."""

from __future__ import annotations

import json
import re

from tests.deploy.manifests import REPO, serve_args

TEXT = (REPO / "Containerfile").read_text()


def stage(name: str) -> str:
    """The instructions of one stage, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", TEXT)
    match = re.search(rf"^FROM \S+ AS {name}\n(.*?)(?=^FROM |\Z)", joined, re.M | re.S)
    assert match, name
    return match.group(1)


def instruction(name: str, keyword: str) -> str:
    lines = [line for line in stage(name).splitlines() if line.startswith(keyword + " ")]
    assert lines, (name, keyword)
    return lines[-1].removeprefix(keyword + " ")


def test_the_base_image_is_a_build_argument() -> None:
    assert re.search(r"^ARG BASE_IMAGE=\S*python:3\.11-slim", TEXT, re.M)
    assert re.findall(r"^FROM (\S+) AS", TEXT, re.M).count("${BASE_IMAGE}") == 2


def test_llama_cpp_is_built_in_one_stage_from_the_hash_locked_requirements() -> None:
    assert "requirements/local.txt" in stage("build-local")
    assert "requirements/runtime.txt" in stage("build-slim")
    joined = re.sub(r"\\\n\s*", " ", TEXT)
    installs = re.findall(r"pip install --require-hashes --no-deps --no-build-isolation\s+-r (\S+)",
                          joined)  # fmt: skip
    assert installs == ["requirements/build.txt", "requirements/runtime.txt",
                        "requirements/local.txt"]  # fmt: skip
    assert len(re.findall(r" -r ", joined)) == 3  # nothing installed from outside the lock
    for runtime in ("slim", "local"):
        assert "pip install" not in stage(runtime)
        assert "g++" not in stage(runtime)


def test_the_runtime_stages_run_the_gateway_as_a_numeric_non_root_user() -> None:
    assert instruction("slim", "USER") == "10001:10001"
    assert instruction("local", "USER") == "10001:10001"
    assert 'VOLUME ["/data"]' in stage("runtime-base")
    assert "LLMEU_DATA_DIR=/data" in stage("runtime-base")
    assert "/healthz" in instruction("runtime-base", "HEALTHCHECK")


def test_each_image_starts_the_gateway_with_its_own_arguments() -> None:
    slim = serve_args(json.loads(instruction("slim", "CMD")))
    local = serve_args(json.loads(instruction("local", "CMD")))
    assert slim.no_local and not local.no_local
    assert (slim.host, slim.port) == (local.host, local.port) == ("0.0.0.0", 8080)
    assert TEXT.splitlines()[-1].startswith("CMD") and "AS local" in TEXT.rsplit("FROM", 1)[1]
