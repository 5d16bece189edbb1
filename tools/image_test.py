"""`make image-test`: build the Containerfile's two images and run each as its config says.

    python -m tools.image_test [--fresh-base] [--keep]

No container can be started on the machines this runs on, so an image is run the way a
runtime would, by hand: its filesystem (`podman image mount`) bound read-only as the
root of a new mount, PID and network namespace (`unshare`), /data a writable volume, /tmp
a tmpfs, then the image's own Env, User, WorkingDir and Cmd under `chroot`. Inside that
network namespace (only a loopback: the bundled model needs no network) it checks:

- the image's HEALTHCHECK command, run as in the image, exits 0;
- /healthz and /readyz answer 200;
- the default image answers a chat completion on the bundled model, streamed and not,
  from `on_premise`, and its ledger lands in the /data volume;
- the slim image carries no llama.cpp;
- SIGTERM drains the gateway and it exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tools.image_build import (
    WORK,
    Built,
    ImageTestError,
    build,
    commit,
    ensure_base_image,
    pip_cache_seed,
    require_tools,
    run,
)

DEFAULT_IMAGE = "localhost/llmeu:image-test"
SLIM_IMAGE = "localhost/llmeu:image-test-slim"
PORT = 8080  # the port the image's Cmd and HEALTHCHECK use
ADMIN_KEY = "sk-llmeu-admin-" + secrets.token_hex(16)

# Runs in the container's network namespace with this interpreter (not the image's):
# the test's client, not part of what is tested.
CLIENT = textwrap.dedent("""
    import json, sys, time, urllib.request, urllib.error
    base, key, what = sys.argv[1], sys.argv[2], sys.argv[3]
    def get(path):
        try:
            with urllib.request.urlopen(base + path, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)
    if what == "wait":
        deadline = time.monotonic() + float(sys.argv[4])
        while time.monotonic() < deadline:
            status, body = get("/readyz")
            if status == 200:
                print(json.dumps({"status": status, "body": body})); sys.exit(0)
            time.sleep(0.5)
        print(json.dumps({"status": status, "body": body})); sys.exit(1)
    if what == "get":
        status, body = get(sys.argv[4])
        print(json.dumps({"status": status, "body": body})); sys.exit(0)
    body = json.dumps({"model": "smollm2", "max_tokens": 16, "stream": what == "stream",
                       "messages": [{"role": "user", "content": "Say hello in French."}]})
    request = urllib.request.Request(base + "/v1/chat/completions", data=body.encode(),
        headers={"authorization": "Bearer " + key, "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as r:
        print(json.dumps({"status": r.status, "type": r.headers["content-type"],
                          "body": r.read().decode()}))
""")


@dataclass(frozen=True)
class ImageConfig:
    user: str
    env: tuple[str, ...]
    cmd: tuple[str, ...]
    workdir: str
    healthcheck: tuple[str, ...]
    volumes: tuple[str, ...]

    @classmethod
    def inspect(cls, image: str) -> ImageConfig:
        data = json.loads(run(["podman", "image", "inspect", image]).stdout)[0]
        config = data["Config"]
        health = data.get("Healthcheck") or config.get("Healthcheck") or {}
        test = tuple(health.get("Test") or ())
        return cls(
            user=config.get("User", ""),
            env=tuple(config.get("Env") or ()),
            cmd=tuple(config.get("Cmd") or ()),
            workdir=config.get("WorkingDir") or "/",
            healthcheck=test,
            volumes=tuple(config.get("Volumes") or {}),
        )

    def check_hardening(self) -> None:
        if not self.user or self.user.split(":")[0] in ("0", "root"):
            raise ImageTestError(f"the image runs as root (User {self.user!r})")
        if self.healthcheck[:1] != ("CMD",):
            raise ImageTestError(f"no HEALTHCHECK in exec form: {self.healthcheck!r}")
        if "/data" not in self.volumes:
            raise ImageTestError(f"/data is not a volume: {self.volumes!r}")


@contextmanager
def image_root(image: str) -> Iterator[Path]:
    """The image's filesystem, as `podman image mount` gives it."""
    path = Path(run(["podman", "image", "mount", image]).stdout.strip())
    try:
        yield path
    finally:
        subprocess.run(["podman", "image", "unmount", image], capture_output=True, check=False)


# The container, by hand: the image root bound read-only, the volume and a tmpfs on it.
BOX = textwrap.dedent("""
    set -eu
    image="$1" new="$2" data="$3" user="$4" workdir="$5"; shift 5
    mount --make-rprivate /
    mount --bind "$image" "$new"
    mount -o remount,bind,ro "$new"
    mount --bind "$data" "$new/data"
    mount -t proc proc "$new/proc"
    mount -t tmpfs -o mode=1777 tmpfs "$new/tmp"
    mount --rbind /dev "$new/dev"
    ip link set lo up
    exec chroot --userspec="$user" "$new" /usr/bin/env -i -C "$workdir" "$@"
""")


class Box:
    """One image running in its namespaces; `inside` runs a command in its network."""

    def __init__(self, root: Path, config: ImageConfig, env: Sequence[str], log: Path):
        self.root, self.config, self.log = root, config, log
        self.data = Path(tempfile.mkdtemp(dir=WORK, prefix="data-"))
        os.chown(self.data, 10001, 10001)
        self.mountpoint = Path(tempfile.mkdtemp(dir=WORK, prefix="root-"))
        user = config.user if ":" in config.user else f"{config.user}:{config.user}"
        argv = ["unshare", "--mount", "--pid", "--net", "--fork", "--kill-child",
                "sh", "-c", BOX, "box", str(root), str(self.mountpoint), str(self.data),
                user, config.workdir, *config.env, *env, *config.cmd]  # fmt: skip
        self.process = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                                        start_new_session=True)  # fmt: skip
        self._await_own_network()

    def _await_own_network(self) -> None:
        """Until `unshare` has left this network namespace, entering its own enters ours."""
        ours = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.process.poll() is None:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{self.process.pid}/ns/net") != ours:
                    return
            time.sleep(0.02)
        raise ImageTestError(f"unshare did not start its namespaces:\n{self.tail()}")

    def inside(self, argv: Sequence[str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
        enter = ["nsenter", "--target", str(self.process.pid), "--net", "--mount"]
        return subprocess.run([*enter, *argv], capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip

    def client(self, *args: str, timeout: float = 180) -> dict[str, object]:
        done = self.inside([sys.executable, "-c", CLIENT, f"http://127.0.0.1:{PORT}",
                            ADMIN_KEY, *args], timeout)  # fmt: skip
        if not done.stdout.strip():
            raise ImageTestError(f"client {args[0]} failed: {done.stderr[-2000:]}\n{self.tail()}")
        result: dict[str, object] = json.loads(done.stdout)
        if args[0] == "wait" and done.returncode != 0:
            raise ImageTestError(f"not ready within {args[1]} s: {result}\n{self.tail()}")
        return result

    def healthcheck(self) -> int:
        user = self.config.user
        user = user if ":" in user else f"{user}:{user}"
        argv = ["chroot", f"--userspec={user}", str(self.mountpoint), "/usr/bin/env", "-i",
                *self.config.env, *self.config.healthcheck[1:]]  # fmt: skip
        return self.inside(argv, 30).returncode

    def in_image(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """A command of the image, as its user, in its environment."""
        chroot = ["chroot", "--userspec=10001:10001", str(self.mountpoint), "/usr/bin/env",
                  "-i", *self.config.env]  # fmt: skip
        return self.inside([*chroot, *argv], 60)

    def python_in_image(self, code: str) -> int:
        return self.in_image("python3", "-c", code).returncode

    def terminate(self, grace: float = 40) -> int | None:
        """SIGTERM to the gateway (PID 1 of the box); its exit code, None if it hung."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        pids = children.read_text().split() if children.exists() else []
        for pid in pids:
            os.kill(int(pid), signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            return None
        return self.process.returncode

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])

    def cleanup(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        shutil.rmtree(self.data, ignore_errors=True)
        shutil.rmtree(self.mountpoint, ignore_errors=True)


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise ImageTestError(what)
    print(f"  ok  {what}", flush=True)


def check_default(box: Box) -> None:
    ready = box.client("wait", "300")
    expect(ready["status"] == 200, "/readyz 200 once the bundled models are loaded")
    expect(box.client("get", "/healthz")["status"] == 200, "/healthz 200")
    expect(box.healthcheck() == 0, "the image's HEALTHCHECK command exits 0")
    answer = box.client("plain")
    body = json.loads(str(answer["body"]))
    expect(answer["status"] == 200 and bool(body["choices"][0]["message"]["content"]),
           "a chat completion on the bundled model")  # fmt: skip
    expect(body["llmeu"]["sovereignty_class"] == "on_premise", "…served on_premise")
    stream = box.client("stream")
    frames = [line for line in str(stream["body"]).split("\n") if line.startswith("data: ")]
    expect(str(stream["type"]).startswith("text/event-stream") and frames[-1] == "data: [DONE]",
           f"a streamed chat completion: {len(frames)} frames ending with [DONE]")  # fmt: skip
    expect((box.data / "llmeu.db").is_file(), "the SQLite ledger is in the /data volume")
    version = box.in_image("llmeu", "--version").stdout
    expect(f"(commit {commit()}" in version, f"llmeu --version names the commit: {version.strip()}")
    expect(box.python_in_image("open('/data/probe', 'w')") == 0, "/data is writable")
    wrote = box.python_in_image("open('/opt/llmeu/probe', 'w')")
    expect(wrote != 0, "the root filesystem is read-only to the gateway")


def check_slim(box: Box) -> None:
    expect(box.client("wait", "120")["status"] == 200, "/readyz 200")
    expect(box.healthcheck() == 0, "the image's HEALTHCHECK command exits 0")
    models = box.client("get", "/v1/models")
    expect(models["status"] == 401, "/v1/models asks for a key (the gateway answers)")
    expect(box.python_in_image("import llmeu.server") == 0, "llmeu imports in the image")
    expect(box.python_in_image("import llama_cpp") != 0, "no llama.cpp in the slim image")


def run_image(image: str, check: Callable[[Box], None], keep: bool) -> None:
    config = ImageConfig.inspect(image)
    config.check_hardening()
    print(f"{image}: User {config.user}, Cmd {' '.join(config.cmd)}", flush=True)
    log = WORK / f"{image.rsplit(':', 1)[-1]}.log"
    with image_root(image) as root:
        box = Box(root, config, [f"LLMEU_ADMIN_KEY={ADMIN_KEY}"], log)
        try:
            check(box)
            code = box.terminate()
            expect(code == 0, f"SIGTERM drains the gateway and it exits 0 (exit {code})")
        finally:
            box.cleanup()
            if not keep:
                log.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--fresh-base", action="store_true", help="debootstrap the base again")
    parser.add_argument(
        "--no-cache-seed",
        action="store_true",
        help="compile llama.cpp in the build stage even if pip has its wheel",
    )
    parser.add_argument("--keep", action="store_true", help="keep the gateways' logs")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("image-test needs root (namespaces, mounts, chroot)", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        require_tools()
        WORK.mkdir(parents=True, exist_ok=True)
        base = ensure_base_image(args.fresh_base)
        print(f"base image: made in {base:.0f} s" if base else "base image: kept from a run before")
        seed = None if args.no_cache_seed else pip_cache_seed()
        print(f"pip cache seed: {seed or 'none (llama.cpp compiles in the build stage)'}")
        built: list[Built] = []
        for name, target in ((DEFAULT_IMAGE, "local"), (SLIM_IMAGE, "slim")):
            built.append(build(name, target, seed))
            print(f"built {name} in {built[-1].seconds:.0f} s, {built[-1].size_mb:.0f} MB",
                  flush=True)  # fmt: skip
        run_image(DEFAULT_IMAGE, check_default, args.keep)
        run_image(SLIM_IMAGE, check_slim, args.keep)
    except (ImageTestError, subprocess.TimeoutExpired) as error:
        print(f"image-test FAILED: {error}", file=sys.stderr)
        return 1
    print(f"image-test passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
