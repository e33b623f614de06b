"""What the S3 gateway's tests share: a zone serving S3 next to its API, clients of both
kinds (real S3 SDKs and hand-signed raw requests) and the checks the tests repeat."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import pathlib
import random
import subprocess
import sys
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from typing import Any

import boto3
import pytest
from botocore import UNSIGNED
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from zonelib import Zone, clean_env

MiB = 1 << 20
REGION = "us-east-1"
# The aws CLI lives next to the test interpreter (rclone in zonelib.TOOLS_BIN).
AWS = str(pathlib.Path(sys.executable).parent / "aws")


class S3Zone(Zone):
    """``weft serve`` with the S3 gateway on a second free port (``--s3-listen``)."""

    def __init__(self, name: str, data_dir: pathlib.Path, **kwargs: Any) -> None:
        super().__init__(name, data_dir, s3=True, **kwargs)

    def ok(self, *args: str, token: str | None = None) -> str:
        """``weft ARGS``, which must succeed; its standard output."""
        r = self.weft(*args, token=token)
        assert r.returncode == 0, f"weft {' '.join(args)}: {r.stderr}"
        return r.stdout

    def json(self, *args: str, token: str | None = None) -> Any:
        return json.loads(self.ok(*args, "--json", token=token))


class Key:
    """An access key pair as ``weft s3 key create --json`` prints it."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.access_key: str = d["access_key"]
        self.secret_key: str = d["secret_key"]
        self.user: str = d["user"]
        self.home_bucket: str = d["home_bucket"]


def client(url: str, key: Key | None, secret: str | None = None, **config: Any) -> Any:
    """A boto3 S3 client of the gateway, signing with ``key`` (``secret`` overrides its
    secret), or unsigned when ``key`` is None. It retries as SDKs do by default (3 attempts:
    connection errors, 5xx, throttling), never a 4xx."""
    cfg = Config(
        retries={"mode": "standard", "total_max_attempts": 3},
        connect_timeout=10,
        read_timeout=120,
        **({"signature_version": UNSIGNED} if key is None else {}),
        **config,
    )
    session = boto3.session.Session()
    return session.client(
        "s3",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id=None if key is None else key.access_key,
        aws_secret_access_key=None if key is None else (secret or key.secret_key),
        config=cfg,
    )


def error_of(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int, str]:
    """The HTTP status and S3 error code ``call`` fails with (it must fail)."""
    with pytest.raises(ClientError) as info:
        call(*args, **kwargs)
    r = info.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def missing(s3: Any, bucket: str, key: str) -> bool:
    """Whether ``key`` is not there (HEAD answers 404)."""
    try:
        s3.head_object(Bucket=bucket, Key=key)
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
        return True
    return False


def listing(s3: Any, bucket: str, prefix: str = "") -> dict[str, tuple[str, int]]:
    """Every key below ``prefix`` with its ETag and size, all pages."""
    out: dict[str, tuple[str, int]] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            out[o["Key"]] = (o["ETag"], o["Size"])
    return out


def payload(n: int, seed: int = 0) -> bytes:
    """``n`` pseudo-random bytes, different per seed."""
    return random.Random(seed).randbytes(n)


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def multipart_etag(parts: Iterable[bytes]) -> str:
    """S3's ETag of a multipart object: the MD5 of the parts' MD5s, a dash, their count."""
    digests = [hashlib.md5(p).digest() for p in parts]
    return f'"{hashlib.md5(b"".join(digests)).hexdigest()}-{len(digests)}"'


def file_md5(path: pathlib.Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(8 * MiB):
            h.update(chunk)
    return h.hexdigest()


def xml_code(body: bytes) -> str:
    """The ``<Code>`` of an S3 error document."""
    root = ET.fromstring(body)
    code = root.find("Code")
    assert code is not None and code.text, body
    return code.text


def signed_headers(
    url: str,
    method: str,
    key: Key,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    unsigned_payload: bool = False,
) -> dict[str, str]:
    """The headers of a SigV4-signed request: ``x-amz-content-sha256`` is the body's hash,
    or ``UNSIGNED-PAYLOAD``."""
    req = AWSRequest(method=method, url=url, headers=dict(headers or {}), data=body)
    if unsigned_payload:
        req.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    S3SigV4Auth(Credentials(key.access_key, key.secret_key), "s3", REGION).add_auth(req)
    return {k: v for k, v in req.headers.items()}


def send(method: str, url: str, headers: dict[str, str] | None = None, body: bytes | None = None) -> tuple[int, bytes]:
    """One plain HTTP request: its status and body."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request(method, u.path + (f"?{u.query}" if u.query else ""), body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def tool_env(home: pathlib.Path, **extra: str) -> dict[str, str]:
    """An environment for aws/rclone that reads none of the user's settings: no AWS_* or
    RCLONE_* of the caller, a HOME of its own."""
    env = {k: v for k, v in clean_env().items() if not k.startswith(("AWS_", "RCLONE_"))}
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    env.update(extra)
    return env


def run(
    args: list[str], env: dict[str, str], cwd: pathlib.Path, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def tree(root: pathlib.Path) -> dict[str, bytes]:
    """Every file below ``root`` by its relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def data_bytes(root: pathlib.Path) -> int:
    """What the files below ``root`` take."""
    total = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except FileNotFoundError:
                pass
    return total
