"""Object-storage servers on loopback for the remote tests: a GCS emulator and moto's S3 server, each a subprocess
on a free port, with the environment that points gcsfs/s3fs (and datatrove's worker processes) at them."""

from __future__ import annotations

import os

# gcsfs probes for zonal/HNS buckets over gRPC unless told not to: against an emulator every call would wait ~60 s
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import fsspec  # noqa: E402
import fsspec.config  # noqa: E402
import pytest  # noqa: E402

BUCKET = "bucket"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server at {url} did not answer within {timeout} s: {log.read_text()[-2000:]}")


@contextmanager
def _server(cmd: list[str], url: str, log: Path) -> Iterator[subprocess.Popen]:
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _wait_http(url, proc, log)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _restart_forkserver() -> None:
    """datatrove's local executor forks its workers from a forkserver that keeps the environment it started with:
    stop it so that the next build starts one that sees the current variables."""
    from multiprocess import forkserver

    forkserver._forkserver._stop()


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """Set variables for this process and every worker it starts; re-read fsspec's FSSPEC_* config."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    fsspec.config.set_conf_env(fsspec.config.conf)
    _restart_forkserver()
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for k in values:
            if k.startswith("FSSPEC_"):
                proto = k[len("FSSPEC_"):].split("_", 1)[0].lower()
                fsspec.config.conf.pop(proto, None)
        fsspec.config.set_conf_env(fsspec.config.conf)
        _restart_forkserver()


@dataclass
class Remote:
    """A running object store: `url(rel)` gives `<protocol>://bucket/rel`; `fs` is a fresh filesystem on it."""

    protocol: str
    bucket: str
    endpoint: str

    def url(self, rel: str = "") -> str:
        return f"{self.protocol}://{self.bucket}/{rel}".rstrip("/")

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        fs = fsspec.filesystem(self.protocol)
        fs.invalidate_cache()
        return fs


def gcs_env(endpoint: str) -> dict[str, str]:
    return {"STORAGE_EMULATOR_HOST": endpoint, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
            "FSSPEC_GS_TOKEN": "anon"}


def s3_env(endpoint: str) -> dict[str, str]:
    return {"FSSPEC_S3_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": endpoint}


@pytest.fixture(scope="session")
def gcs(tmp_path_factory) -> Iterator[Remote]:
    """The PyPI GCS emulator (JSON API, in memory) with bucket `bucket`; gs:// URLs resolve to it."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("gcs") / "emulator.log"
    cmd = [sys.executable, str(Path(__file__).with_name("gcs_emulator.py")), "127.0.0.1", str(port), BUCKET]
    with _server(cmd, f"{endpoint}/storage/v1/b", log), _environ(gcs_env(endpoint)):
        yield Remote("gs", BUCKET, endpoint)


@pytest.fixture(scope="session")
def s3(tmp_path_factory) -> Iterator[Remote]:
    """moto's S3 server with bucket `bucket`; s3:// URLs resolve to it (endpoint and keys from the environment)."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("s3") / "moto.log"
    cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    with _server(cmd, f"{endpoint}/moto-api/", log), _environ(s3_env(endpoint)):
        remote = Remote("s3", BUCKET, endpoint)
        remote.fs.mkdir(BUCKET)
        yield remote


def upload(local: Path, fs: fsspec.AbstractFileSystem, url: str) -> None:
    """Copy a local folder to `url` (protocol included), file by file."""
    files = [p for p in sorted(local.rglob("*")) if p.is_file()]
    fs.put([str(p) for p in files], [f"{url}/{p.relative_to(local).as_posix()}" for p in files])
    fs.invalidate_cache()
