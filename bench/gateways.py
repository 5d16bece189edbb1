"""Start each proxy under test in front of the fake upstream, pinned to the gateway core.

Each `start_*` function writes the proxy's configuration into `workdir`, starts
it under the supervisor (which stops it by PID), waits until it answers, and
returns the `Target` the load generator drives. Every gateway checks a Bearer
key, so the comparison includes authentication everywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import procs
from loadgen import Target

MODEL = "bench-model"
UPSTREAM_KEY = "sk-bench-upstream"
BENCH_DIR = Path(__file__).resolve().parent
GATEWAY_CORE = 0
CLIENT_CORE = 1
LITELLM_VENV = BENCH_DIR / ".venvs" / "litellm"
TARGETS = ("direct", "nginx", "llmeu", "llmeu-pg", "llmeu-pg-async", "litellm", "llmeu-w2")
LITELLM_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
    "LITELLM_MODE": "PRODUCTION",
    "LITELLM_LOG": "ERROR",
    "LITELLM_TELEMETRY": "False",
}


@dataclass(frozen=True)
class Placement:
    """What every gateway start needs: where it runs and what it proxies to."""

    supervisor: procs.Supervisor
    workdir: Path
    upstream_port: int
    upstream_pid: int
    api_key: str
    core: int | None

    @property
    def upstream_base_url(self) -> str:
        return f"http://127.0.0.1:{self.upstream_port}/v1"

    def target(self, name: str, base_url: str, pid: int | None) -> Target:
        return Target(name, base_url, self.api_key, MODEL, pid, self.upstream_pid, self.core)


def nginx_binary() -> str:
    """Debian's nginx, installed with apt-get when missing and we are root."""
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None
    )
    if found:
        return found
    if os.geteuid() != 0:
        raise RuntimeError("nginx is not installed: apt-get install -y nginx")
    subprocess.run(["apt-get", "install", "-y", "-q", "nginx"], check=True)
    return "/usr/sbin/nginx"


def nginx_config(workdir: Path, port: int, upstream_port: int, api_key: str) -> str:
    temp = {
        name: workdir / f"nginx-{name}" for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")
    }
    for path in temp.values():
        path.mkdir(exist_ok=True)
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""
{user}
worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    client_body_temp_path {temp["body"]};
    proxy_temp_path {temp["proxy"]};
    fastcgi_temp_path {temp["fastcgi"]};
    uwsgi_temp_path {temp["uwsgi"]};
    scgi_temp_path {temp["scgi"]};
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    map $http_authorization $bench_authorized {{
        "Bearer {api_key}" 1;
        default 0;
    }}
    upstream fake_openai {{
        server 127.0.0.1:{upstream_port};
        keepalive 512;
        keepalive_requests 1000000;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            if ($bench_authorized = 0) {{ return 401; }}
            proxy_pass http://fake_openai;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "Bearer {UPSTREAM_KEY}";
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_cache off;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


async def start_nginx(place: Placement) -> Target:
    port = procs.free_port()
    config = place.workdir / "nginx.conf"
    config.write_text(nginx_config(place.workdir, port, place.upstream_port, place.api_key))
    child = place.supervisor.start(
        "nginx", [nginx_binary(), "-c", str(config), "-p", str(place.workdir)], place.core
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    await procs.wait_ready(child, f"{base_url}/models", 15, _bearer(place.api_key))
    return Target(
        "nginx", base_url, place.api_key, MODEL, child.pid, place.upstream_pid, place.core
    )


def litellm_venv(venv: Path) -> Path:
    """The `litellm` CLI of a throwaway venv, created with `pip install 'litellm[proxy]'`."""
    binary = venv / "bin" / "litellm"
    if binary.exists():
        return binary
    print(f"installing litellm[proxy] into {venv} (once) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "litellm[proxy]"], check=True)
    return binary


def litellm_config(upstream_base_url: str, api_key: str) -> str:
    return f"""
model_list:
  - model_name: {MODEL}
    litellm_params:
      model: openai/{MODEL}
      api_base: {upstream_base_url}
      api_key: {UPSTREAM_KEY}
litellm_settings:
  callbacks: []
  success_callback: []
  failure_callback: []
general_settings:
  master_key: {api_key}
"""


async def start_litellm(place: Placement, venv: Path) -> Target:
    binary = litellm_venv(venv)
    port = procs.free_port()
    config = place.workdir / "litellm.yaml"
    config.write_text(litellm_config(place.upstream_base_url, place.api_key))
    argv = [str(binary), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    env = {**LITELLM_ENV, "LITELLM_MASTER_KEY": place.api_key}
    env.pop("DATABASE_URL", None)
    child = place.supervisor.start(
        "litellm", [*argv, "--num_workers", "1"], place.core, env, place.workdir
    )
    base = f"http://127.0.0.1:{port}"
    await procs.wait_ready(child, f"{base}/health/liveliness", 180)
    return Target(
        "litellm", f"{base}/v1", place.api_key, MODEL, child.pid, place.upstream_pid, place.core
    )


def llmeu_config(upstream_base_url: str) -> str:
    return f"""
endpoints:
  - endpoint_id: bench-upstream
    provider: bench
    kind: openai
    base_url: {upstream_base_url}
    api_key_env: LLMEU_BENCH_UPSTREAM_KEY
    model: {MODEL}
    model_version: "1"
    aliases: [{MODEL}]
    inference_region: local
    country: DE
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {{input: 0.1, output: 0.2}}
    priority: 10
    capabilities: [chat, embeddings]
policies:
  - policy_id: bench
    allow_classes: [on_premise]
    allow_countries: []
    allow_providers: []
    max_retention: P0D
    store_content: P0D
    fallback: true
default_policy: bench
"""


def llmeu_binary() -> Path:
    return Path(sys.executable).parent / "llmeu"


REDIS_URL = "redis://127.0.0.1:6379/15"


async def start_llmeu(
    place: Placement, database_url: str | None, name: str = "llmeu", workers: int = 1
) -> Target:
    """llmeu pinned to the gateway core; with `workers` above 1, on every core (the workers
    need them), sharing limits and health through Redis."""
    port = procs.free_port()
    config = place.workdir / f"{name}.yaml"
    config.write_text(llmeu_config(place.upstream_base_url))
    data_dir = place.workdir / f"{name}-data"
    data_dir.mkdir(exist_ok=True)
    argv = [str(llmeu_binary()), "serve", "--config", str(config), "--port", str(port)]
    argv += ["--host", "127.0.0.1", "--data-dir", str(data_dir), "--no-local"]
    # Every load generator connects from 127.0.0.1, as clients behind a load balancer do:
    # no cap per client address (the default 256 refused most of bench/streams.py's 1,000).
    argv += ["--log-level", "warning", "--max-connections-per-client", "0"]
    if database_url:
        argv += ["--database-url", database_url]
    core = place.core
    if workers > 1:
        argv += ["--workers", str(workers), "--redis-url", REDIS_URL]
        core = None
    env = {"LLMEU_ADMIN_KEY": place.api_key, "LLMEU_BENCH_UPSTREAM_KEY": UPSTREAM_KEY}
    child = place.supervisor.start(name, argv, core, env, place.workdir)
    base = f"http://127.0.0.1:{port}"
    await procs.wait_ready(child, f"{base}/healthz", 60)
    return Target(name, f"{base}/v1", place.api_key, MODEL, child.pid, place.upstream_pid, core)


async def start_upstream(
    supervisor: procs.Supervisor, workdir: Path, api_key: str, chunks: int = 64
) -> Placement:
    """Start the fake upstream on the client core; gateways then go on the gateway core."""
    port = procs.free_port()
    argv = [sys.executable, str(BENCH_DIR / "upstream.py"), "--port", str(port)]
    child = supervisor.start("upstream", [*argv, "--chunks", str(chunks)], CLIENT_CORE)
    await procs.wait_ready(child, f"http://127.0.0.1:{port}/healthz", 15)
    return Placement(supervisor, workdir, port, child.pid, api_key, GATEWAY_CORE)


async def start_target(name: str, place: Placement, database_url: str | None = None) -> Target:
    """Start the named proxy (or, for `direct`, nothing) in front of the upstream."""
    if name == "direct":
        return place.target("direct", place.upstream_base_url, None)
    if name == "nginx":
        return await start_nginx(place)
    if name == "litellm":
        return await start_litellm(place, LITELLM_VENV)
    if name == "llmeu":
        return await start_llmeu(place, None)
    if name.startswith("llmeu-w"):  # llmeu-w2: two worker processes
        return await start_llmeu(place, None, name, workers=int(name.removeprefix("llmeu-w")))
    if name in ("llmeu-pg", "llmeu-pg-async"):
        if database_url is None:
            raise ValueError(f"{name} needs a PostgreSQL database URL")
        if name == "llmeu-pg-async":  # the documented opt-in: commits skip the WAL flush
            database_url += "?synchronous_commit=off"
        return await start_llmeu(place, database_url, name)
    raise ValueError(f"unknown target {name}")


def _bearer(api_key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"}
