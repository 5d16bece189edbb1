"""Build the Containerfile's images on a machine that reaches no container registry.

The base image is made here, from Debian's own packages: `debootstrap` writes a minimal
bookworm with python3 into a directory and `podman import` turns it into an image. The
Containerfile then builds on it (`--build-arg BASE_IMAGE=…`) with `podman build
--isolation chroot`, which needs no container runtime. tools/image_test.py runs what
comes out.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASE_IMAGE = "localhost/llmeu-test-base:bookworm"
MIRROR = "http://deb.debian.org/debian"
# python3 and its venv module: what the Containerfile asks of a base, and nothing more
# (the build stage installs its compiler, the runtime stage libgomp, as on any base).
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
# Kept between runs (the .deb cache, the pip cache seed); root only runs this.
WORK = Path("/var/tmp/llmeu-image-test")  # noqa: S108
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


class ImageTestError(Exception):
    """A step of the image test failed; the message says which and why."""


@dataclass(frozen=True)
class Built:
    name: str
    seconds: float
    size_mb: float


def run(argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), text=True, capture_output=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise ImageTestError(f"{' '.join(argv[:3])} … exited {done.returncode}:\n{tail}")
    return done  # type: ignore[no-any-return]


def require_tools() -> None:
    missing = [t for t in ("podman", "debootstrap", "unshare", "nsenter", "chroot", "ip")
               if shutil.which(t) is None]  # fmt: skip
    if missing:
        raise ImageTestError(
            f"missing {', '.join(missing)}: apt-get install -y podman debootstrap iproute2"
        )


def image_exists(name: str) -> bool:
    return subprocess.run(["podman", "image", "exists", name], check=False).returncode == 0


def ensure_base_image(fresh: bool) -> float:
    """The debootstrapped base, made once and kept; seconds spent making it (0 if kept)."""
    if image_exists(BASE_IMAGE) and not fresh:
        return 0.0
    started = time.monotonic()
    (WORK / "debs").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WORK) as rootfs:
        run(["debootstrap", "--variant=minbase", f"--cache-dir={WORK / 'debs'}",
             f"--include={','.join(BASE_PACKAGES)}", "bookworm", rootfs, MIRROR])  # fmt: skip
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in Path(rootfs, leftover).glob("*.deb"):
                path.unlink()
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        run(["podman", "import", "--change", "CMD [\"/bin/bash\"]", "-", BASE_IMAGE],
            stdin=tar.stdout)  # fmt: skip
        if tar.wait() != 0:
            raise ImageTestError("tar of the debootstrapped root failed")
    return time.monotonic() - started


def pip_cache_seed() -> Path | None:
    """A copy of this machine's pip cache for the build stage, when it holds wheels.

    pip reuses a wheel it compiled from the very sdist the lock pins (llama-cpp-python)
    for the same Python minor version: with the copy, the image builds in minutes
    instead of compiling llama.cpp again. A copy, because the build writes into it.
    """
    cache = Path.home() / ".cache" / "pip" / "wheels"
    if not cache.is_dir() or not any(cache.rglob("*.whl")):
        return None
    seed = WORK / "pip-cache"
    shutil.rmtree(seed, ignore_errors=True)
    shutil.copytree(cache, seed / "wheels")
    return seed


def commit() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)  # fmt: skip
    return done.stdout.strip()


def build(name: str, target: str, cache: Path | None) -> Built:
    argv = ["podman", "build", "--isolation", "chroot", "--format", "docker",
            "--pull=never", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}",
            "--build-arg", f"LLMEU_BUILD_COMMIT={commit()}", "--target", target,
            "--file", str(REPO / "Containerfile"), "--tag", name]  # fmt: skip
    if cache is not None:
        argv += ["--volume", f"{cache}:/root/.cache/pip"]
    if HOST_CA_BUNDLE.is_file():  # the CAs this machine's own pip trusts, for PyPI
        argv += ["--volume", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro"]
    started = time.monotonic()
    run([*argv, str(REPO)])
    seconds = time.monotonic() - started
    size = run(["podman", "image", "inspect", "--format", "{{.Size}}", name]).stdout
    return Built(name, seconds, int(size.strip()) / 1e6)
