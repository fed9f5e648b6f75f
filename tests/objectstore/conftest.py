"""Fixtures of the object-store tests: a real S3 server (MinIO, dev/objectstore) and the fault- and latency-injecting
proxy in front of it (s3proxy.py). No Spark session here.

- s3_server (session): the server of target/objectstore/env.json if one is running, else one started with
  `dev/objectstore start` for the session and stopped after it. A dict: endpoint, access_key, secret_key, region,
  bucket, index_bucket, pid.
- s3_proxy (per test): a handle of the session's proxy in front of s3_server (.endpoint, .port, .stats(),
  .configure(**settings), .reset()), with the default settings (no latency, no faults) and zeroed counters at the
  start of every test, and the default settings again after it. _s3_proxy_process is the same proxy without the
  resets, for session-scoped users.
- s3_client: a factory of boto3 clients, s3_client() for the server, s3_client(s3_proxy.endpoint) through the proxy;
  path-style addressing, region us-east-1.

SPARKBLOOM_OBJECTSTORE=0 skips every test of this directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ENV_JSON = ROOT / "target" / "objectstore" / "env.json"
DEV_OBJECTSTORE = ROOT / "dev" / "objectstore"

sys.path.insert(0, str(HERE))
from s3proxy import DEFAULTS, ProxyHandle, start_proxy  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("SPARKBLOOM_OBJECTSTORE") != "0":
        return
    skip = pytest.mark.skip(reason="SPARKBLOOM_OBJECTSTORE=0: the object-store tests (MinIO, dev/objectstore) are off")
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)


def _running_server() -> dict[str, str] | None:
    """target/objectstore/env.json's values if its server answers its health check."""
    try:
        env: dict[str, str] = json.loads(ENV_JSON.read_text())
        url = env["SPARKBLOOM_S3_ENDPOINT"] + "/minio/health/live"
        with urllib.request.urlopen(url, timeout=5) as resp:
            return env if resp.status == 200 else None
    except (OSError, ValueError, KeyError):
        return None


@pytest.fixture(scope="session")
def s3_server() -> Iterator[dict[str, Any]]:
    env = _running_server()
    started = env is None
    if started:
        proc = subprocess.run(
            [str(DEV_OBJECTSTORE), "start"], cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False
        )
        env = _running_server()
        if proc.returncode != 0 or env is None:
            raise RuntimeError(f"dev/objectstore start failed ({proc.returncode}):\n{proc.stdout}{proc.stderr[-4000:]}")
    assert env is not None
    yield {
        "endpoint": env["SPARKBLOOM_S3_ENDPOINT"],
        "access_key": env["SPARKBLOOM_S3_ACCESS_KEY"],
        "secret_key": env["SPARKBLOOM_S3_SECRET_KEY"],
        "region": env.get("SPARKBLOOM_S3_REGION", "us-east-1"),
        "bucket": env.get("SPARKBLOOM_S3_BUCKET", "sparkbloom"),
        "index_bucket": env.get("SPARKBLOOM_S3_INDEX_BUCKET", "sparkbloom-index"),
        "pid": int(env["SPARKBLOOM_S3_PID"]),
    }
    if started:
        subprocess.run([str(DEV_OBJECTSTORE), "stop"], cwd=ROOT, capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="session")
def _s3_proxy_process(s3_server: dict[str, Any]) -> Iterator[ProxyHandle]:
    proxy = start_proxy(s3_server["endpoint"], index_bucket=s3_server["index_bucket"])
    yield proxy
    proxy.stop()


@pytest.fixture
def s3_proxy(_s3_proxy_process: ProxyHandle, s3_server: dict[str, Any]) -> Iterator[ProxyHandle]:
    defaults = {**DEFAULTS, "index_bucket": s3_server["index_bucket"]}
    _s3_proxy_process.configure(**defaults)
    _s3_proxy_process.reset()
    yield _s3_proxy_process
    # No delays or faults left for whatever goes through the session's proxy next (e.g. a session-wide Spark).
    if _s3_proxy_process.process.poll() is None:
        _s3_proxy_process.configure(**defaults)


@pytest.fixture
def s3_client(s3_server: dict[str, Any]) -> Callable[..., Any]:
    """s3_client(endpoint=None, max_attempts=1, **config): a boto3 S3 client for the server, or for another endpoint
    (the proxy's) with the server's credentials. One attempt by default: a test sees every error, and counts are
    exact; botocore.config.Config arguments (read_timeout=..., retries=...) are passed on."""
    import boto3
    from botocore.config import Config

    def make(endpoint: str | None = None, max_attempts: int = 1, **config: Any) -> Any:
        options: dict[str, Any] = {
            "s3": {"addressing_style": "path"},
            "retries": {"mode": "standard", "total_max_attempts": max_attempts},
            "connect_timeout": 10,
            "read_timeout": 60,
        }
        options.update(config)
        return boto3.client(
            "s3",
            endpoint_url=endpoint or s3_server["endpoint"],
            aws_access_key_id=s3_server["access_key"],
            aws_secret_access_key=s3_server["secret_key"],
            region_name=s3_server["region"],
            config=Config(**options),
        )

    return make


from spark_fixtures import spark  # noqa: E402, F401  (Spark, for the suites that need it)
