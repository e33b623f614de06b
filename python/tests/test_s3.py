"""The S3 gateway (``weft serve --s3-listen``) driven by real S3 clients: boto3, the aws
CLI, rclone and s3fs (pandas), and by hand-signed requests for what clients never send
(bad signatures, skewed clocks, short bodies). Every refusal is checked for its S3 error
code and for having changed nothing."""

from __future__ import annotations

import datetime
import hashlib
import http.client
import os
import pathlib
import re
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.auth
import pytest
import test_web
from boto3.s3.transfer import TransferConfig
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from s3_helpers import (
    AWS,
    REGION,
    Key,
    MiB,
    S3Zone,
    b64,
    client,
    data_bytes,
    error_of,
    file_md5,
    listing,
    md5_hex,
    missing,
    multipart_etag,
    payload,
    run,
    send,
    signed_headers,
    tool_env,
    tree,
    xml_code,
)
from selenium.webdriver.remote.webdriver import WebDriver
from zonelib import TOOLS_BIN, Minio

ZONE = "s3z"
HOME = "home-admin"
PUBLIC = "pub-data"
SHARED = "shared-data"


@dataclass
class Gateway:
    zone: S3Zone
    admin: Key
    alice: Key
    bob: Key

    @property
    def url(self) -> str:
        return self.zone.s3_url


@pytest.fixture(scope="module")
def aws_isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The S3 SDKs in this process read none of the user's AWS settings."""
    d = tmp_path_factory.mktemp("aws-config")
    with pytest.MonkeyPatch.context() as mp:
        for k in list(os.environ):
            if k.startswith("AWS_"):
                mp.delenv(k)
        mp.setenv("AWS_CONFIG_FILE", str(d / "config"))
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(d / "credentials"))
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        yield


@pytest.fixture(scope="module")
def gw(zone_root: pathlib.Path, isolated_config: pathlib.Path, aws_isolated: None) -> Iterator[Gateway]:
    """One zone serving S3, with an admin key, users alice and bob with a key each, a
    public-read bucket and a private declared one."""
    z = S3Zone.start(ZONE, zone_root)
    try:
        admin = Key(z.json("s3", "key", "create"))
        for user in ("alice", "bob"):
            z.ok("user", "add", user)
        alice = Key(z.json("s3", "key", "create", "--user", "alice"))
        bob = Key(z.json("s3", "key", "create", "--user", "bob"))
        z.ok("mkdir", "-p", f"/{ZONE}/pub/data", f"/{ZONE}/projects/shared")
        z.ok("s3", "bucket", "add", PUBLIC, f"/{ZONE}/pub/data", "--public-read")
        z.ok("s3", "bucket", "add", SHARED, f"/{ZONE}/projects/shared")
        yield Gateway(z, admin, alice, bob)
    finally:
        z.stop()


@pytest.fixture(scope="module")
def s3(gw: Gateway) -> Any:
    """boto3 as the administrator."""
    return client(gw.url, gw.admin)


@pytest.fixture
def p(request: pytest.FixtureRequest) -> str:
    """A key prefix of this test's own."""
    return re.sub("[^a-z0-9]+", "-", request.node.name.lower()).strip("-") + "/"


def home_path(key: str, user: str = "admin") -> str:
    return f"/{ZONE}/home/{user}/{key}"


# -- boto3: buckets -------------------------------------------------------------------------


def test_buckets_listed_headed_and_located(gw: Gateway, s3: Any) -> None:
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    # An administrator sees every declared bucket and its own home, in name order.
    assert names == sorted([HOME, PUBLIC, SHARED])
    bob_names = [b["Name"] for b in client(gw.url, gw.bob).list_buckets()["Buckets"]]
    # bob sees his home, not alice's or the private bucket (the public one: see below).
    assert "home-bob" in bob_names and "home-alice" not in bob_names and SHARED not in bob_names
    listed = gw.zone.json("s3", "bucket", "ls")
    assert {b["name"] for b in listed} == {HOME, PUBLIC, SHARED}
    assert {b["name"]: b["public_read"] for b in listed}[PUBLIC] is True

    assert s3.head_bucket(Bucket=HOME)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.head_bucket(Bucket=SHARED)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_bucket_location(Bucket=HOME).get("LocationConstraint") is None
    assert error_of(s3.head_bucket, Bucket="no-such-bucket") == (404, "404")
    assert error_of(s3.list_objects_v2, Bucket="no-such-bucket") == (404, "NoSuchBucket")
    assert error_of(s3.get_object, Bucket="no-such-bucket", Key="x") == (404, "NoSuchBucket")
    # What is not implemented says so.
    assert error_of(s3.get_bucket_versioning, Bucket=HOME) == (501, "NotImplemented")


# -- boto3: objects -------------------------------------------------------------------------


def test_put_get_head_etag_content_type_and_metadata(gw: Gateway, s3: Any, p: str) -> None:
    data = payload(300_000, 1)
    r = s3.put_object(
        Bucket=HOME,
        Key=f"{p}obj.bin",
        Body=data,
        ContentType="application/x-weft-test",
        Metadata={"Project": "climate", "run-id": "42"},
    )
    assert r["ETag"] == f'"{md5_hex(data)}"'

    h = s3.head_object(Bucket=HOME, Key=f"{p}obj.bin")
    assert h["ContentLength"] == len(data)
    assert h["ETag"] == f'"{md5_hex(data)}"'
    assert h["ContentType"] == "application/x-weft-test"
    assert h["Metadata"] == {"project": "climate", "run-id": "42"}
    assert h["AcceptRanges"] == "bytes"

    g = s3.get_object(Bucket=HOME, Key=f"{p}obj.bin")
    assert g["Body"].read() == data
    assert g["ETag"] == h["ETag"] and g["ContentType"] == "application/x-weft-test"
    assert g["Metadata"] == {"project": "climate", "run-id": "42"}
    assert g["LastModified"] == h["LastModified"]

    # x-amz-meta-* are AVUs, and AVUs are x-amz-meta-*.
    avus = {(a["attr"], a["value"]) for a in gw.zone.json("meta", "ls", home_path(f"{p}obj.bin"))}
    assert avus == {("project", "climate"), ("run-id", "42")}
    gw.zone.ok("meta", "add", home_path(f"{p}obj.bin"), "colour", "blue")
    assert s3.head_object(Bucket=HOME, Key=f"{p}obj.bin")["Metadata"] == {
        "project": "climate",
        "run-id": "42",
        "colour": "blue",
    }

    # No content type given: S3's default; an empty object has the MD5 of nothing.
    s3.put_object(Bucket=HOME, Key=f"{p}plain", Body=b"")
    h = s3.head_object(Bucket=HOME, Key=f"{p}plain")
    assert h["ContentType"] == "binary/octet-stream"
    assert h["ContentLength"] == 0 and h["ETag"] == f'"{md5_hex(b"")}"'
    assert h.get("Metadata") == {}
    assert s3.get_object(Bucket=HOME, Key=f"{p}plain")["Body"].read() == b""
    assert error_of(s3.get_object, Bucket=HOME, Key=f"{p}nothing") == (404, "NoSuchKey")
    assert error_of(s3.head_object, Bucket=HOME, Key=f"{p}nothing") == (404, "404")


def test_overwrite_replaces_bytes_type_and_metadata(s3: Any, p: str) -> None:
    key = f"{p}doc"
    s3.put_object(Bucket=HOME, Key=key, Body=b"one", ContentType="text/plain", Metadata={"old": "1"})
    s3.put_object(Bucket=HOME, Key=key, Body=b"second", Metadata={"new": "2"})
    h = s3.head_object(Bucket=HOME, Key=key)
    assert h["ContentLength"] == 6 and h["ETag"] == f'"{md5_hex(b"second")}"'
    assert h["ContentType"] == "binary/octet-stream"
    # A PUT replaces the whole object, its metadata included (as on S3).
    assert h["Metadata"] == {"new": "2"}
    assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == b"second"


def test_checksums_the_client_sends_are_answered(s3: Any, p: str) -> None:
    data = payload(70_000, 2)
    r = s3.put_object(Bucket=HOME, Key=f"{p}sha", Body=data, ChecksumAlgorithm="SHA256")
    assert r["ChecksumSHA256"] == b64(hashlib.sha256(data).digest())
    r = s3.put_object(Bucket=HOME, Key=f"{p}crc", Body=data, ChecksumAlgorithm="CRC32")
    assert r["ChecksumCRC32"] == b64(zlib.crc32(data).to_bytes(4, "big"))
    r = s3.put_object(Bucket=HOME, Key=f"{p}md5", Body=data, ContentMD5=b64(hashlib.md5(data).digest()))
    assert r["ETag"] == f'"{md5_hex(data)}"'
    for k in ("sha", "crc", "md5"):
        assert s3.get_object(Bucket=HOME, Key=f"{p}{k}")["Body"].read() == data


def test_ranges(s3: Any, p: str) -> None:
    data = payload(100, 3)
    key = f"{p}r.bin"
    s3.put_object(Bucket=HOME, Key=key, Body=data)

    def ranged(spec: str) -> tuple[bytes, str, int]:
        g = s3.get_object(Bucket=HOME, Key=key, Range=spec)
        return g["Body"].read(), g["ContentRange"], g["ResponseMetadata"]["HTTPStatusCode"]

    assert ranged("bytes=10-19") == (data[10:20], "bytes 10-19/100", 206)
    assert ranged("bytes=-5") == (data[-5:], "bytes 95-99/100", 206)
    assert ranged("bytes=95-") == (data[95:], "bytes 95-99/100", 206)
    assert ranged("bytes=90-500") == (data[90:], "bytes 90-99/100", 206)
    assert ranged("bytes=0-0") == (data[:1], "bytes 0-0/100", 206)
    h = s3.head_object(Bucket=HOME, Key=key, Range="bytes=10-19")
    assert h["ContentLength"] == 10 and h["ContentRange"] == "bytes 10-19/100"
    assert error_of(s3.get_object, Bucket=HOME, Key=key, Range="bytes=100-") == (416, "InvalidRange")
    assert error_of(s3.get_object, Bucket=HOME, Key=key, Range="bytes=500-600") == (416, "InvalidRange")


def test_conditional_requests(s3: Any, p: str) -> None:
    key = f"{p}c.txt"
    etag = s3.put_object(Bucket=HOME, Key=key, Body=b"conditions")["ETag"]
    modified = s3.head_object(Bucket=HOME, Key=key)["LastModified"]
    before, after = modified - datetime.timedelta(days=1), modified + datetime.timedelta(hours=1)

    def status(**cond: Any) -> int:
        try:
            g = s3.get_object(Bucket=HOME, Key=key, **cond)
        except ClientError as e:
            return int(e.response["ResponseMetadata"]["HTTPStatusCode"])
        assert g["Body"].read() == b"conditions"
        return int(g["ResponseMetadata"]["HTTPStatusCode"])

    assert status(IfMatch=etag) == 200
    assert status(IfMatch='"0123456789abcdef0123456789abcdef"') == 412
    assert status(IfNoneMatch=etag) == 304
    assert status(IfNoneMatch="*") == 304
    assert status(IfNoneMatch='"0123456789abcdef0123456789abcdef"') == 200
    assert status(IfModifiedSince=after) == 304
    assert status(IfModifiedSince=modified) == 304
    assert status(IfModifiedSince=before) == 200
    assert status(IfUnmodifiedSince=before) == 412
    assert status(IfUnmodifiedSince=after) == 200
    # If-Match wins over If-Unmodified-Since, If-None-Match over If-Modified-Since.
    assert status(IfMatch=etag, IfUnmodifiedSince=before) == 200
    assert status(IfNoneMatch='"0123456789abcdef0123456789abcdef"', IfModifiedSince=after) == 200
    assert error_of(s3.get_object, Bucket=HOME, Key=key, IfMatch='"nope"') == (412, "PreconditionFailed")
    assert error_of(s3.head_object, Bucket=HOME, Key=key, IfNoneMatch=etag) == (304, "304")
    assert error_of(s3.head_object, Bucket=HOME, Key=key, IfMatch='"nope"') == (412, "412")
    assert error_of(s3.get_object, Bucket=HOME, Key=key, IfMatch=etag, Range="bytes=50-60") == (416, "InvalidRange")


# -- boto3: listings ------------------------------------------------------------------------

LIST_KEYS = [
    "a.txt",
    "b/1.txt",
    "b/2.txt",
    "c d.txt",
    "c+e/x%y.txt",
    "d",
    "e/f/g.txt",
    "e/f/h i.txt",
]


def put_tree(s3: Any, prefix: str, keys: list[str]) -> None:
    for i, k in enumerate(keys):
        s3.put_object(Bucket=HOME, Key=prefix + k, Body=f"{i}".encode() * (i + 1))


def test_list_v2_pages_with_delimiter_and_max_keys(s3: Any, p: str) -> None:
    put_tree(s3, p, LIST_KEYS)

    def pages(**kw: Any) -> list[tuple[list[str], list[str], bool, int]]:
        out = []
        token: dict[str, str] = {}
        while True:
            r = s3.list_objects_v2(Bucket=HOME, Prefix=p, MaxKeys=2, **kw, **token)
            keys = [o["Key"][len(p) :] for o in r.get("Contents", [])]
            prefixes = [c["Prefix"][len(p) :] for c in r.get("CommonPrefixes", [])]
            out.append((keys, prefixes, r["IsTruncated"], r["KeyCount"]))
            assert r["MaxKeys"] == 2 and r["Prefix"] == p
            if not r["IsTruncated"]:
                assert "NextContinuationToken" not in r
                return out
            token = {"ContinuationToken": r["NextContinuationToken"]}
            assert len(out) < 20, "the listing does not end"

    flat = pages()
    assert [k for keys, _, _, _ in flat for k in keys] == LIST_KEYS
    assert [len(keys) for keys, _, _, _ in flat] == [2, 2, 2, 2]
    assert [t for _, _, t, _ in flat] == [True, True, True, False]
    assert all(count == len(keys) for keys, _, _, count in flat)

    rolled = pages(Delimiter="/")
    entries = [e for keys, prefixes, _, _ in rolled for e in sorted(keys + prefixes)]
    assert entries == ["a.txt", "b/", "c d.txt", "c+e/", "d", "e/"]
    assert [count for _, _, _, count in rolled] == [2, 2, 2]
    assert [t for _, _, t, _ in rolled] == [True, True, False]

    # Below a prefix, and after a key.
    r = s3.list_objects_v2(Bucket=HOME, Prefix=f"{p}e/", Delimiter="/")
    assert [c["Prefix"] for c in r["CommonPrefixes"]] == [f"{p}e/f/"] and "Contents" not in r
    r = s3.list_objects_v2(Bucket=HOME, Prefix=p, StartAfter=f"{p}c d.txt")
    assert [o["Key"][len(p) :] for o in r["Contents"]] == LIST_KEYS[4:]
    r = s3.list_objects_v2(Bucket=HOME, Prefix=f"{p}c")
    assert [o["Key"][len(p) :] for o in r["Contents"]] == ["c d.txt", "c+e/x%y.txt"]
    # boto3's own paginator agrees.
    paginated = [
        o["Key"][len(p) :]
        for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=HOME, Prefix=p, PaginationConfig={"PageSize": 3}
        )
        for o in page.get("Contents", [])
    ]
    assert paginated == LIST_KEYS
    listed = s3.list_objects_v2(Bucket=HOME, Prefix=p)["Contents"]
    assert [o["Size"] for o in listed] == [i + 1 for i in range(len(LIST_KEYS))]
    assert all(o["ETag"] == f'"{md5_hex(f"{i}".encode() * (i + 1))}"' for i, o in enumerate(listed))
    assert error_of(s3.list_objects_v2, Bucket=HOME, ContinuationToken="!!") == (400, "InvalidArgument")


def test_list_v1_pages_with_delimiter_and_max_keys(s3: Any, p: str) -> None:
    put_tree(s3, p, LIST_KEYS)

    def pages(**kw: Any) -> list[list[str]]:
        out: list[list[str]] = []
        marker: dict[str, str] = {}
        while True:
            r = s3.list_objects(Bucket=HOME, Prefix=p, MaxKeys=2, **kw, **marker)
            keys = [o["Key"] for o in r.get("Contents", [])]
            prefixes = [c["Prefix"] for c in r.get("CommonPrefixes", [])]
            out.append(sorted(k[len(p) :] for k in keys + prefixes))
            if not r["IsTruncated"]:
                return out
            # Version 1 clients go on from NextMarker, else from the last key.
            marker = {"Marker": r.get("NextMarker") or keys[-1]}
            assert len(out) < 20, "the listing does not end"

    assert pages() == [LIST_KEYS[0:2], LIST_KEYS[2:4], LIST_KEYS[4:6], LIST_KEYS[6:8]]
    assert pages(Delimiter="/") == [["a.txt", "b/"], ["c d.txt", "c+e/"], ["d", "e/"]]
    r = s3.list_objects(Bucket=HOME, Prefix=p, Delimiter="/", MaxKeys=2)
    assert r["NextMarker"] == f"{p}b/"
    r = s3.list_objects(Bucket=HOME, Prefix=p, Marker=f"{p}c+e/x%y.txt")
    assert [o["Key"][len(p) :] for o in r["Contents"]] == LIST_KEYS[5:]


SPECIAL_KEYS = [
    "with space.txt",
    "plus+sign.txt",
    "per%25cent%.txt",
    "ümlaut/straße.txt",
    "q?uery&x=y#frag.txt",
    "tilde~star*(paren)'.txt",
]


def test_keys_with_spaces_plus_and_percent_round_trip(gw: Gateway, s3: Any, p: str) -> None:
    for k in SPECIAL_KEYS:
        s3.put_object(Bucket=HOME, Key=p + k, Body=k.encode())
    for k in SPECIAL_KEYS:
        assert s3.get_object(Bucket=HOME, Key=p + k)["Body"].read() == k.encode()
        assert s3.head_object(Bucket=HOME, Key=p + k)["ContentLength"] == len(k.encode())
    expected = sorted(p + k for k in SPECIAL_KEYS)  # S3 order: by UTF-8 bytes
    # boto3 asks for encoding-type=url and decodes what comes back.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=HOME, Prefix=p)["Contents"]] == expected
    assert [o["Key"] for o in s3.list_objects(Bucket=HOME, Prefix=p)["Contents"]] == expected
    # Asked for explicitly, the keys come encoded as botocore's unquote_plus decodes them.
    r = s3.list_objects_v2(Bucket=HOME, Prefix=p, EncodingType="url")
    assert r["EncodingType"] == "url"
    raw = [o["Key"] for o in r["Contents"]]
    assert all(" " not in k and "+" not in k for k in raw), raw
    assert [urllib.parse.unquote_plus(k) for k in raw] == expected
    # Delimited, the common prefix with a non-ASCII name decodes too.
    r = s3.list_objects_v2(Bucket=HOME, Prefix=p, Delimiter="/")
    assert [c["Prefix"] for c in r["CommonPrefixes"]] == [f"{p}ümlaut/"]
    # In weft they are the same names.
    names = {e["name"] for e in gw.zone.json("ls", home_path(p.rstrip("/")))}
    assert names == {k.split("/")[0] for k in SPECIAL_KEYS}


def test_folder_keys_are_collections(gw: Gateway, s3: Any, p: str) -> None:
    r = s3.put_object(Bucket=HOME, Key=f"{p}folder/", Body=b"")
    assert r["ETag"] == f'"{md5_hex(b"")}"'
    st = gw.zone.json("stat", home_path(f"{p}folder"))
    assert st["kind"] == "collection"
    assert error_of(s3.put_object, Bucket=HOME, Key=f"{p}full/", Body=b"x") == (400, "InvalidArgument")
    assert gw.zone.weft("stat", home_path(f"{p}full")).returncode != 0
    # Deleting the folder key removes the (empty) collection.
    s3.delete_object(Bucket=HOME, Key=f"{p}folder/")
    assert gw.zone.weft("stat", home_path(f"{p}folder")).returncode != 0


def test_concurrent_puts_into_a_new_folder(s3: Any, p: str) -> None:
    # Each finds the folder missing; all of them make it (once) and land in it.
    keys = [f"{p}new/deep/k{i}" for i in range(24)]
    with ThreadPoolExecutor(8) as pool:
        etags = list(pool.map(lambda k: s3.put_object(Bucket=HOME, Key=k, Body=k.encode())["ETag"], keys))
    assert etags == [f'"{md5_hex(k.encode())}"' for k in keys]
    for k in keys:
        assert s3.get_object(Bucket=HOME, Key=k)["Body"].read() == k.encode()


def test_a_listing_ends_whatever_the_keys(s3: Any, p: str) -> None:
    # U+10FFFF sorts after every other character: a listing that seeks past a common
    # prefix must still skip a key that starts with the prefix and then that character.
    for k in (f"{p}loop/\U0010ffffx", f"{p}loop/a", f"{p}loop\U0010ffff", f"{p}z"):
        s3.put_object(Bucket=HOME, Key=k, Body=b"k")
    got = s3.list_objects_v2(Bucket=HOME, Prefix=p, Delimiter="/")
    assert [c["Prefix"] for c in got["CommonPrefixes"]] == [f"{p}loop/"]
    assert [o["Key"] for o in got["Contents"]] == [f"{p}loop\U0010ffff", f"{p}z"]
    assert not got["IsTruncated"]
    seen, token = [], None
    for _ in range(10):
        kw = {"ContinuationToken": token} if token else {}
        page = s3.list_objects_v2(Bucket=HOME, Prefix=p, Delimiter="/", MaxKeys=1, **kw)
        seen += [c["Prefix"] for c in page.get("CommonPrefixes", [])] + [o["Key"] for o in page.get("Contents", [])]
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    assert seen == [f"{p}loop/", f"{p}loop\U0010ffff", f"{p}z"]
    empty = s3.list_objects_v2(Bucket=HOME, Prefix=p, MaxKeys=0)
    assert (empty["KeyCount"], empty["IsTruncated"]) == (0, False)


def test_folders_are_listed_in_key_order(gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path) -> None:
    # A folder made through S3 (as Cyberduck and consoles make them) is listed as its key
    # `dir/`, where S3 sorts it: after `dir.txt` and `dir-a/x` ('-' and '.' sort before
    # '/'), though weft's path `dir` sorts before them. A collection made otherwise has no
    # key of its own, as on S3: `weft mkdir`, or a put below it.
    s3.put_object(Bucket=HOME, Key=f"{p}dir/", Body=b"")
    gw.zone.ok("mkdir", "-p", home_path(f"{p}made"))
    for k in (f"{p}dir.txt", f"{p}dir-a/x", f"{p}e"):
        s3.put_object(Bucket=HOME, Key=k, Body=b"k")
    flat = [f"{p}dir-a/x", f"{p}dir.txt", f"{p}dir/", f"{p}e"]
    rolled = [f"{p}dir-a/", f"{p}dir.txt", f"{p}dir/", f"{p}e"]
    got = s3.list_objects_v2(Bucket=HOME, Prefix=p)
    assert [o["Key"] for o in got["Contents"]] == flat
    folder = next(o for o in got["Contents"] if o["Key"] == f"{p}dir/")
    assert (folder["Size"], folder["ETag"]) == (0, f'"{md5_hex(b"")}"')
    got = s3.list_objects_v2(Bucket=HOME, Prefix=p, Delimiter="/")
    assert [c["Prefix"] for c in got["CommonPrefixes"]] == [f"{p}dir-a/", f"{p}dir/"]
    assert [o["Key"] for o in got["Contents"]] == [f"{p}dir.txt", f"{p}e"]

    def pages(delimiter: str) -> tuple[list[str], list[str]]:
        """Every entry, one page of one entry at a time (V2) and two at a time (V1)."""
        v2, token = [], None
        for _ in range(20):
            kw = {"ContinuationToken": token} if token else {}
            page = s3.list_objects_v2(Bucket=HOME, Prefix=p, Delimiter=delimiter, MaxKeys=1, **kw)
            v2 += [c["Prefix"] for c in page.get("CommonPrefixes", [])] + [o["Key"] for o in page.get("Contents", [])]
            if not page["IsTruncated"]:
                break
            token = page["NextContinuationToken"]
        v1, marker = [], ""
        for _ in range(20):
            page = s3.list_objects(Bucket=HOME, Prefix=p, Delimiter=delimiter, MaxKeys=2, Marker=marker)
            shown = [c["Prefix"] for c in page.get("CommonPrefixes", [])] + [o["Key"] for o in page.get("Contents", [])]
            v1 += sorted(shown)
            if not page["IsTruncated"]:
                break
            marker = page.get("NextMarker") or max(shown)
        return v2, v1

    # A folder that waited past the end of a page (behind `dir.txt`) is on the next, once.
    assert pages("") == (flat, flat)
    assert pages("/") == (rolled, rolled)

    # A client's marker may be anything: one of many spaces (each a place where a folder
    # could have waited) and longer than any key still finds the folder behind it.
    long = f"{p}dir" + " " * 5000
    got = s3.list_objects_v2(Bucket=HOME, Prefix=p, StartAfter=long)
    assert [o["Key"] for o in got["Contents"]] == [f"{p}dir-a/x", f"{p}dir.txt", f"{p}dir/", f"{p}e"]
    got = s3.list_objects_v2(Bucket=HOME, Prefix=p, StartAfter=f"{p}dir ")
    assert [o["Key"] for o in got["Contents"]] == [f"{p}dir-a/x", f"{p}dir.txt", f"{p}dir/", f"{p}e"]

    # rclone sees the folder as a directory, not as a file.
    out = rclone(gw, tmp_path, "lsf", f"weft:{HOME}/{p}")
    assert sorted(out.split()) == ["dir-a/", "dir.txt", "dir/", "e"], out

    # With something in it the folder keeps its key, as on S3; deleting the key then leaves
    # what is in it (and the collection); deleting it once empty removes the collection.
    s3.put_object(Bucket=HOME, Key=f"{p}dir/in", Body=b"i")
    flat = [f"{p}dir-a/x", f"{p}dir.txt", f"{p}dir/", f"{p}dir/in", f"{p}e"]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=HOME, Prefix=p)["Contents"]] == flat
    assert pages("")[0] == flat
    s3.delete_object(Bucket=HOME, Key=f"{p}dir/")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=HOME, Prefix=p)["Contents"]] == [
        f"{p}dir-a/x",
        f"{p}dir.txt",
        f"{p}dir/in",
        f"{p}e",
    ]
    s3.delete_object(Bucket=HOME, Key=f"{p}dir/in")
    assert gw.zone.json("stat", home_path(f"{p}dir"))["kind"] == "collection"
    s3.put_object(Bucket=HOME, Key=f"{p}dir/", Body=b"")
    s3.delete_object(Bucket=HOME, Key=f"{p}dir/")
    assert gw.zone.weft("stat", home_path(f"{p}dir")).returncode != 0

    # Someone else's folders are no more listed than their objects, nor made or removed.
    bob = client(gw.url, gw.bob)
    assert error_of(bob.list_objects_v2, Bucket=HOME, Prefix=p) == (403, "AccessDenied")
    assert error_of(bob.put_object, Bucket=HOME, Key=f"{p}bobs/", Body=b"") == (403, "AccessDenied")
    s3.put_object(Bucket=HOME, Key=f"{p}kept/", Body=b"")
    assert error_of(bob.delete_object, Bucket=HOME, Key=f"{p}kept/") == (403, "AccessDenied")
    assert f"{p}kept/" in [o["Key"] for o in s3.list_objects_v2(Bucket=HOME, Prefix=p)["Contents"]]


def test_folder_keys_are_not_objects(s3: Any, p: str) -> None:
    s3.put_object(Bucket=HOME, Key=f"{p}f", Body=b"file")
    # What tools probe to tell a folder from a file: no object `f/`, and none is made.
    assert error_of(s3.head_object, Bucket=HOME, Key=f"{p}f/") == (404, "404")
    assert error_of(s3.get_object, Bucket=HOME, Key=f"{p}f/") == (404, "NoSuchKey")
    assert error_of(s3.copy_object, Bucket=HOME, Key=f"{p}f/", CopySource={"Bucket": HOME, "Key": f"{p}f"}) == (
        400,
        "InvalidArgument",
    )
    assert s3.get_object(Bucket=HOME, Key=f"{p}f")["Body"].read() == b"file"


def test_a_completion_asked_again_gets_the_same_answer(s3: Any, p: str) -> None:
    # A client that lost the answer completes again: as on AWS, it learns the outcome.
    key = f"{p}again.bin"
    up = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
    data = payload(MiB, 31)
    etag = s3.upload_part(Bucket=HOME, Key=key, UploadId=up, PartNumber=1, Body=data)["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
    first = s3.complete_multipart_upload(Bucket=HOME, Key=key, UploadId=up, MultipartUpload=parts)["ETag"]
    again = s3.complete_multipart_upload(Bucket=HOME, Key=key, UploadId=up, MultipartUpload=parts)["ETag"]
    assert first == again == multipart_etag([data])
    # Not for another key, and the upload takes nothing more.
    err = error_of(s3.complete_multipart_upload, Bucket=HOME, Key=f"{p}other", UploadId=up, MultipartUpload=parts)
    assert err == (404, "NoSuchUpload"), err
    err = error_of(s3.upload_part, Bucket=HOME, Key=key, UploadId=up, PartNumber=2, Body=b"x")
    assert err == (404, "NoSuchUpload"), err
    assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == data


def test_a_completion_that_fails_leaves_the_upload_open(gw: Gateway, s3: Any, p: str) -> None:
    key = f"{p}dir/obj.bin"
    up = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
    data = payload(3 * MiB, 11)
    etag = s3.upload_part(Bucket=HOME, Key=key, UploadId=up, PartNumber=1, Body=data)["ETag"]
    # An object where the folder of the key should be: the completion cannot make it.
    s3.put_object(Bucket=HOME, Key=f"{p}dir", Body=b"in the way")
    parts = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
    err = error_of(s3.complete_multipart_upload, Bucket=HOME, Key=key, UploadId=up, MultipartUpload=parts)
    assert err == (400, "XMinioParentIsObject"), err
    assert [x["PartNumber"] for x in s3.list_parts(Bucket=HOME, Key=key, UploadId=up)["Parts"]] == [1]
    # Out of the way, the same completion succeeds.
    s3.delete_object(Bucket=HOME, Key=f"{p}dir")
    s3.complete_multipart_upload(Bucket=HOME, Key=key, UploadId=up, MultipartUpload=parts)
    assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == data


def test_copy_keeps_metadata_set_in_weft_with_the_source(gw: Gateway, s3: Any, p: str) -> None:
    src = f"{p}src.bin"
    s3.put_object(Bucket=HOME, Key=src, Body=b"x", Metadata={"station": "lrz"})
    gw.zone.ok("meta", "add", home_path(src), "datacite.title", "A dataset")
    gw.zone.ok("meta", "add", home_path(src), "note", "kept here")
    s3.copy_object(Bucket=HOME, Key=f"{p}dst.bin", CopySource={"Bucket": HOME, "Key": src})
    assert s3.head_object(Bucket=HOME, Key=f"{p}dst.bin")["Metadata"] == {"station": "lrz"}
    assert s3.head_object(Bucket=HOME, Key=src)["Metadata"]["note"] == "kept here"


def test_copy_object(gw: Gateway, s3: Any, p: str) -> None:
    data = payload(50_000, 4)
    src = f"{p}src.bin"
    etag = s3.put_object(Bucket=HOME, Key=src, Body=data, ContentType="text/csv", Metadata={"a": "1"})["ETag"]

    r = s3.copy_object(Bucket=HOME, Key=f"{p}copy/kept.bin", CopySource={"Bucket": HOME, "Key": src})
    assert r["CopyObjectResult"]["ETag"] == etag
    h = s3.head_object(Bucket=HOME, Key=f"{p}copy/kept.bin")
    assert (h["ETag"], h["ContentType"], h["Metadata"]) == (etag, "text/csv", {"a": "1"})
    assert s3.get_object(Bucket=HOME, Key=f"{p}copy/kept.bin")["Body"].read() == data

    s3.copy_object(
        Bucket=HOME,
        Key=f"{p}replaced.bin",
        CopySource=f"{HOME}/{src}",
        MetadataDirective="REPLACE",
        ContentType="application/json",
        Metadata={"b": "2"},
    )
    h = s3.head_object(Bucket=HOME, Key=f"{p}replaced.bin")
    assert (h["ETag"], h["ContentType"], h["Metadata"]) == (etag, "application/json", {"b": "2"})

    # To another bucket, and with the source's conditions.
    s3.copy_object(Bucket=SHARED, Key=f"{p}x.bin", CopySource={"Bucket": HOME, "Key": src}, CopySourceIfMatch=etag)
    assert s3.get_object(Bucket=SHARED, Key=f"{p}x.bin")["Body"].read() == data
    for cond in (
        {"CopySourceIfMatch": '"0123456789abcdef0123456789abcdef"'},
        {"CopySourceIfNoneMatch": etag},
        {"CopySourceIfUnmodifiedSince": datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)},
    ):
        assert error_of(
            s3.copy_object, Bucket=HOME, Key=f"{p}cond.bin", CopySource={"Bucket": HOME, "Key": src}, **cond
        ) == (412, "PreconditionFailed"), cond
        assert missing(s3, HOME, f"{p}cond.bin")
    assert error_of(s3.copy_object, Bucket=HOME, Key=f"{p}c2", CopySource={"Bucket": HOME, "Key": f"{p}none"}) == (
        404,
        "NoSuchKey",
    )

    # Onto itself: only to change its metadata, which REPLACE then replaces.
    assert error_of(s3.copy_object, Bucket=HOME, Key=src, CopySource={"Bucket": HOME, "Key": src}) == (
        400,
        "InvalidRequest",
    )
    s3.copy_object(
        Bucket=HOME,
        Key=src,
        CopySource={"Bucket": HOME, "Key": src},
        MetadataDirective="REPLACE",
        ContentType="text/plain",
        Metadata={"c": "3"},
    )
    h = s3.head_object(Bucket=HOME, Key=src)
    assert (h["ETag"], h["ContentType"], h["Metadata"]) == (etag, "text/plain", {"c": "3"})
    assert s3.get_object(Bucket=HOME, Key=src)["Body"].read() == data


def test_delete_object_and_delete_objects_quiet(s3: Any, p: str) -> None:
    keys = [f"{p}{n}" for n in ("k1", "k2", "sub/k3", "k4", "k5")]
    for k in keys:
        s3.put_object(Bucket=HOME, Key=k, Body=k.encode())

    r = s3.delete_object(Bucket=HOME, Key=keys[0])
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert missing(s3, HOME, keys[0])
    # Deleting what is not there succeeds, as on S3.
    assert s3.delete_object(Bucket=HOME, Key=keys[0])["ResponseMetadata"]["HTTPStatusCode"] == 204

    r = s3.delete_objects(
        Bucket=HOME,
        Delete={"Objects": [{"Key": keys[1]}, {"Key": keys[2]}, {"Key": f"{p}never"}], "Quiet": True},
    )
    assert not r.get("Deleted") and not r.get("Errors"), r
    assert sorted(listing(s3, HOME, p)) == sorted([keys[3], keys[4]])

    r = s3.delete_objects(Bucket=HOME, Delete={"Objects": [{"Key": keys[3]}, {"Key": f"{p}never"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == sorted([keys[3], f"{p}never"])
    assert not r.get("Errors")
    assert list(listing(s3, HOME, p)) == [keys[4]]
    r = s3.delete_objects(Bucket=HOME, Delete={"Objects": [{"Key": f"{p}a//b"}, {"Key": keys[4]}]})
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [(f"{p}a//b", "InvalidArgument")]
    assert [d["Key"] for d in r["Deleted"]] == [keys[4]]
    assert listing(s3, HOME, p) == {}


# -- boto3 and weft's REST side -------------------------------------------------------------


def test_a_small_put_whose_bytes_cannot_be_written_fails_and_registers_nothing(
    zone_root: pathlib.Path, aws_isolated: None
) -> None:
    """The committer appends small puts to a pack; where no pack can be made (here a file
    stands where the packs' directory goes), each such put fails naming the pack, nothing
    is registered, and puts succeed again once the way is clear."""
    z = S3Zone.start("s3w", zone_root)
    try:
        s3c = client(z.s3_url, Key(z.json("s3", "key", "create")))
        packs = z.data_dir / "resources" / "default" / "packs"
        assert not packs.exists(), "no small object was written yet"
        packs.parent.mkdir(parents=True, exist_ok=True)
        packs.write_bytes(b"in the way")
        with pytest.raises(ClientError) as info:
            s3c.put_object(Bucket="home-admin", Key="new/x.bin", Body=b"x" * 1000)
        r = info.value.response
        assert r["ResponseMetadata"]["HTTPStatusCode"] >= 500, r
        assert "pack" in r["Error"]["Message"] and str(packs) in r["Error"]["Message"], r
        assert error_of(s3c.head_object, Bucket="home-admin", Key="new/x.bin") == (404, "404")
        # Its collection was made before the bytes went to the committer: it stays, empty.
        assert "x.bin" not in z.ok("ls", "/s3w/home/admin/new")
        packs.unlink()
        s3c.put_object(Bucket="home-admin", Key="new/x.bin", Body=b"y" * 1000)
        assert s3c.get_object(Bucket="home-admin", Key="new/x.bin")["Body"].read() == b"y" * 1000
    finally:
        z.stop()


def test_rest_put_is_readable_over_s3(gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path) -> None:
    data = payload(3 * MiB + 17, 5)
    (tmp_path / "rest.bin").write_bytes(data)
    gw.zone.ok("mkdir", "-p", home_path(p.rstrip("/")))
    gw.zone.ok("put", str(tmp_path / "rest.bin"), home_path(f"{p}rest.bin"))
    st = gw.zone.json("stat", home_path(f"{p}rest.bin"))
    blake3 = st["checksum"].removeprefix("blake3:")

    h = s3.head_object(Bucket=HOME, Key=f"{p}rest.bin")
    assert h["ContentLength"] == len(data)
    # Not an MD5: the BLAKE3 in 64 hex digits, so that no client takes it for one.
    assert h["ETag"] == f'"{blake3}"' and len(blake3) == 64
    assert h["ContentType"] == "binary/octet-stream"
    assert s3.get_object(Bucket=HOME, Key=f"{p}rest.bin")["Body"].read() == data
    assert listing(s3, HOME, p) == {f"{p}rest.bin": (f'"{blake3}"', len(data))}
    # Metadata set over REST shows up as x-amz-meta-*.
    gw.zone.ok("meta", "add", home_path(f"{p}rest.bin"), "instrument", "lidar")
    assert s3.head_object(Bucket=HOME, Key=f"{p}rest.bin")["Metadata"] == {"instrument": "lidar"}


def test_s3_put_is_an_object_in_weft(gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path) -> None:
    data = payload(2 * MiB + 3, 6)
    s3.put_object(Bucket=HOME, Key=f"{p}deep/er/s3.bin", Body=data, Metadata={"k": "v"})
    long = gw.zone.ok("ls", "-l", home_path(f"{p}deep/er"))
    assert "s3.bin" in long and str(len(data)) in long, long
    assert [(e["name"], e["kind"]) for e in gw.zone.json("ls", home_path(f"{p}deep"))] == [("er", "collection")]
    st = gw.zone.json("stat", home_path(f"{p}deep/er/s3.bin"))
    assert (st["kind"], st["size"], st["owner"]) == ("object", len(data), "admin")
    assert st["checksum"].startswith("blake3:")
    gw.zone.ok("get", home_path(f"{p}deep/er/s3.bin"), str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == data
    assert [(a["attr"], a["value"]) for a in gw.zone.json("meta", "ls", home_path(f"{p}deep/er/s3.bin"))] == [
        ("k", "v")
    ]
    # Removed over REST, it is gone over S3.
    gw.zone.ok("rm", home_path(f"{p}deep/er/s3.bin"))
    assert missing(s3, HOME, f"{p}deep/er/s3.bin")


def until(what: str, check: Any, timeout: float = 60) -> Any:
    """Polls `check()` until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.2)


def test_s3_objects_fire_policies_and_take_qos_replicas_and_pids(
    gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path
) -> None:
    """What the zone does with objects it is given applies to those put over S3: a small one
    (packed, registered by the committer's group commit) and one of its own file alike."""
    extra = f"s3-copies-{os.getpid()}"
    gw.zone.ok("resource", "add", extra, "--kind", "fs", "--root", str(tmp_path / extra), "--tier", "ssd")
    rule = tmp_path / "policy.toml"
    rule.write_text(
        f'[[rule]]\nname = "{extra}"\non = "created"\n[rule.if]\npath = "{home_path(p)}tagged/**"\n'
        f'[rule.do]\nset_meta = ["seen=s3"]\nmint_pid = true\nreplicate = "resource = {extra}"\n'
    )
    gw.zone.ok("policy", "apply", str(rule))
    # A requirement names a collection that exists; objects put below it later are held to it.
    gw.zone.ok("mkdir", "-p", home_path(f"{p}kept"))
    qos = gw.zone.json("qos", "add", home_path(f"{p}kept"), f"replicas=2 & (resource = default | resource = {extra})")
    try:
        sizes = {"small.bin": 64 * 1024, "own-file.bin": 2 * MiB + 1}
        for i, (name, size) in enumerate(sizes.items()):
            for where in ("tagged", "kept", "plain"):
                s3.put_object(Bucket=HOME, Key=f"{p}{where}/{name}", Body=payload(size, i))

        def placed(where: str, name: str) -> Any:
            st = gw.zone.json("stat", home_path(f"{p}{where}/{name}"))
            good = sorted(r["resource"] for r in st["replicas"] if r["state"] == "good")
            return st if good == sorted(["default", extra]) else None

        for name in sizes:
            # The rule's actions run in its order: metadata, PID, then the copy.
            st = until(f"the rule's copy of tagged/{name}", lambda n=name: placed("tagged", n))
            assert st["pid"], st
            assert gw.zone.json("pid", "show", st["pid"])["path"] == home_path(f"{p}tagged/{name}")
            meta = gw.zone.json("meta", "ls", home_path(f"{p}tagged/{name}"))
            assert ("seen", "s3") in [(a["attr"], a["value"]) for a in meta], meta
            until(f"the QoS copy of kept/{name}", lambda n=name: placed("kept", n))
            # Neither reaches what they do not cover.
            plain = gw.zone.json("stat", home_path(f"{p}plain/{name}"))
            assert [r["resource"] for r in plain["replicas"]] == ["default"] and "pid" not in plain, plain
            assert gw.zone.json("meta", "ls", home_path(f"{p}plain/{name}")) == []

        # The status is the engine's: re-evaluated at its pass after the copies land.
        def fulfilled() -> bool:
            return [q["status"] for q in gw.zone.json("qos", "ls", home_path(f"{p}kept/small.bin"))] == ["fulfilled"]

        until("the QoS requirement fulfilled", fulfilled)

        # With its first copy gone, S3 reads the one the rule made, with the same ETag.
        for i, (name, size) in enumerate(sizes.items()):
            key = f"{p}tagged/{name}"
            etag = s3.head_object(Bucket=HOME, Key=key)["ETag"]
            gw.zone.ok("trim", home_path(key), "--from", f"{ZONE}:default")
            st = gw.zone.json("stat", home_path(key))
            assert [r["resource"] for r in st["replicas"]] == [extra], st
            got = s3.get_object(Bucket=HOME, Key=key)
            assert got["Body"].read() == payload(size, i) and got["ETag"] == etag
    finally:
        gw.zone.ok("policy", "rm", extra)
        gw.zone.ok("qos", "rm", str(qos["id"]))


# -- boto3: multipart uploads ---------------------------------------------------------------


def test_multipart_upload_of_a_large_file(gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path) -> None:
    size = 105 * MiB + 12345  # 14 parts of 8 MiB, the last short
    data = payload(size, 7)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4)
    key = f"{p}big.bin"
    s3.upload_file(str(src), HOME, key, Config=cfg, ExtraArgs={"ContentType": "application/x-big"})

    parts = [data[i : i + 8 * MiB] for i in range(0, size, 8 * MiB)]
    assert len(parts) == 14
    h = s3.head_object(Bucket=HOME, Key=key)
    assert h["ETag"] == multipart_etag(parts)
    assert h["ContentLength"] == size and h["ContentType"] == "application/x-big"
    del parts

    s3.download_file(HOME, key, str(tmp_path / "down.bin"), Config=cfg)
    assert file_md5(tmp_path / "down.bin") == md5_hex(data)
    assert (tmp_path / "down.bin").read_bytes() == data
    assert gw.zone.json("stat", home_path(key))["size"] == size
    assert s3.list_multipart_uploads(Bucket=HOME, Prefix=p).get("Uploads", []) == []


def test_multipart_parts_listed_replaced_and_completed(gw: Gateway, s3: Any, p: str) -> None:
    key = f"{p}mp.bin"
    chunks = [payload(5 * MiB, 10), payload(5 * MiB, 11), payload(1000, 12)]
    up = s3.create_multipart_upload(Bucket=HOME, Key=key, ContentType="text/x-parts", Metadata={"m": "1"})
    uid = up["UploadId"]
    assert (up["Bucket"], up["Key"]) == (HOME, key)
    # In any order; a part sent again replaces the first.
    etags = {}
    for n in (3, 1, 2):
        etags[n] = s3.upload_part(Bucket=HOME, Key=key, UploadId=uid, PartNumber=n, Body=chunks[n - 1])["ETag"]
    assert s3.upload_part(Bucket=HOME, Key=key, UploadId=uid, PartNumber=2, Body=b"x" * (5 * MiB))["ETag"] == (
        f'"{md5_hex(b"x" * (5 * MiB))}"'
    )
    etags[2] = s3.upload_part(Bucket=HOME, Key=key, UploadId=uid, PartNumber=2, Body=chunks[1])["ETag"]
    assert etags == {n: f'"{md5_hex(c)}"' for n, c in enumerate(chunks, 1)}

    listed = s3.list_parts(Bucket=HOME, Key=key, UploadId=uid)
    assert [(x["PartNumber"], x["ETag"], x["Size"]) for x in listed["Parts"]] == [
        (n, etags[n], len(chunks[n - 1])) for n in (1, 2, 3)
    ]
    page = s3.list_parts(Bucket=HOME, Key=key, UploadId=uid, MaxParts=2)
    assert [x["PartNumber"] for x in page["Parts"]] == [1, 2] and page["IsTruncated"]
    page = s3.list_parts(Bucket=HOME, Key=key, UploadId=uid, PartNumberMarker=page["NextPartNumberMarker"])
    assert [x["PartNumber"] for x in page["Parts"]] == [3] and not page["IsTruncated"]

    uploads = s3.list_multipart_uploads(Bucket=HOME, Prefix=p)["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in uploads] == [(key, uid)]
    # Not an object until it is completed.
    assert missing(s3, HOME, key)

    done = s3.complete_multipart_upload(
        Bucket=HOME,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2, 3)]},
    )
    assert done["ETag"] == multipart_etag(chunks)
    h = s3.head_object(Bucket=HOME, Key=key)
    assert (h["ETag"], h["ContentLength"]) == (multipart_etag(chunks), sum(map(len, chunks)))
    assert (h["ContentType"], h["Metadata"]) == ("text/x-parts", {"m": "1"})
    assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == b"".join(chunks)
    assert s3.list_multipart_uploads(Bucket=HOME, Prefix=p).get("Uploads", []) == []
    assert error_of(s3.list_parts, Bucket=HOME, Key=key, UploadId=uid) == (404, "NoSuchUpload")
    assert gw.zone.json("stat", home_path(key))["size"] == sum(map(len, chunks))


def test_get_and_head_by_part_number(s3: Any, p: str) -> None:
    # What multipart downloaders (the AWS SDKs' transfer managers) ask: the parts of an
    # object as it was completed, with their count.
    key = f"{p}parts.bin"
    chunks = [payload(5 * MiB, 20), payload(5 * MiB + 7, 21), payload(1000, 22)]
    uid = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
    done = [
        {"PartNumber": n, "ETag": s3.upload_part(Bucket=HOME, Key=key, UploadId=uid, PartNumber=n, Body=c)["ETag"]}
        for n, c in enumerate(chunks, 1)
    ]
    s3.complete_multipart_upload(Bucket=HOME, Key=key, UploadId=uid, MultipartUpload={"Parts": done})
    total = sum(map(len, chunks))
    start = 0
    for n, c in enumerate(chunks, 1):
        got = s3.get_object(Bucket=HOME, Key=key, PartNumber=n)
        assert got["Body"].read() == c
        assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert (got["PartsCount"], got["ContentLength"]) == (3, len(c))
        assert got["ContentRange"] == f"bytes {start}-{start + len(c) - 1}/{total}"
        assert got["ETag"] == multipart_etag(chunks)
        h = s3.head_object(Bucket=HOME, Key=key, PartNumber=n)
        assert (h["PartsCount"], h["ContentLength"]) == (3, len(c))
        start += len(c)
    # A copy keeps the ETag, and so the parts it describes.
    s3.copy_object(Bucket=HOME, Key=f"{p}copy.bin", CopySource={"Bucket": HOME, "Key": key})
    got = s3.get_object(Bucket=HOME, Key=f"{p}copy.bin", PartNumber=2)
    assert (got["PartsCount"], got["Body"].read()) == (3, chunks[1])

    # An object written whole is its own part 1, an empty one too.
    s3.put_object(Bucket=HOME, Key=f"{p}whole", Body=b"whole")
    got = s3.get_object(Bucket=HOME, Key=f"{p}whole", PartNumber=1)
    assert (got["PartsCount"], got["Body"].read()) == (1, b"whole")
    s3.put_object(Bucket=HOME, Key=f"{p}empty", Body=b"")
    got = s3.get_object(Bucket=HOME, Key=f"{p}empty", PartNumber=1)
    assert (got["PartsCount"], got["ContentLength"], got["Body"].read()) == (1, 0, b"")

    # No such part; a part and a range at once.
    assert error_of(s3.get_object, Bucket=HOME, Key=key, PartNumber=4) == (416, "InvalidPartNumber")
    assert error_of(s3.get_object, Bucket=HOME, Key=key, PartNumber=10001) == (416, "InvalidPartNumber")
    assert error_of(s3.get_object, Bucket=HOME, Key=key, PartNumber=0) == (416, "InvalidPartNumber")
    assert error_of(s3.get_object, Bucket=HOME, Key=f"{p}whole", PartNumber=2) == (416, "InvalidPartNumber")
    assert error_of(s3.head_object, Bucket=HOME, Key=key, PartNumber=4)[0] == 416
    assert error_of(s3.get_object, Bucket=HOME, Key=key, PartNumber=1, Range="bytes=0-1") == (400, "InvalidRequest")

    # New content written whole replaces the parts with itself.
    s3.put_object(Bucket=HOME, Key=key, Body=b"now whole")
    got = s3.get_object(Bucket=HOME, Key=key, PartNumber=1)
    assert (got["PartsCount"], got["Body"].read()) == (1, b"now whole")


def test_multipart_bad_completion_commits_nothing(s3: Any, p: str) -> None:
    key = f"{p}bad.bin"
    uid = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
    bodies = {1: b"a" * (5 * MiB), 2: b"b" * (5 * MiB), 3: b"c" * 1000, 4: b"d" * 1000}
    e = {n: s3.upload_part(Bucket=HOME, Key=key, UploadId=uid, PartNumber=n, Body=b)["ETag"] for n, b in bodies.items()}

    def complete(*parts: tuple[int, str]) -> tuple[int, str]:
        return error_of(
            s3.complete_multipart_upload,
            Bucket=HOME,
            Key=key,
            UploadId=uid,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etag} for n, etag in parts]},
        )

    # A part's ETag that is not the part's, a part never sent, parts out of order, and a
    # part before the last under 5 MiB: each refused, and the upload is still there.
    assert complete((1, '"0123456789abcdef0123456789abcdef"')) == (400, "InvalidPart")
    assert complete((1, e[1]), (5, e[2])) == (400, "InvalidPart")
    assert complete((2, e[2]), (1, e[1])) == (400, "InvalidPartOrder")
    assert complete((1, e[1]), (3, e[3]), (4, e[4])) == (400, "EntityTooSmall")
    assert missing(s3, HOME, key)
    assert [x["PartNumber"] for x in s3.list_parts(Bucket=HOME, Key=key, UploadId=uid)["Parts"]] == [1, 2, 3, 4]
    assert error_of(s3.upload_part, Bucket=HOME, Key=key, UploadId="no-such-upload", PartNumber=1, Body=b"x") == (
        404,
        "NoSuchUpload",
    )
    # The last part may be small, and parts sent but not named are dropped.
    done = s3.complete_multipart_upload(
        Bucket=HOME,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e[n]} for n in (1, 2, 3)]},
    )
    assert done["ETag"] == multipart_etag([bodies[1], bodies[2], bodies[3]])
    assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == bodies[1] + bodies[2] + bodies[3]
    assert s3.list_multipart_uploads(Bucket=HOME, Prefix=p).get("Uploads", []) == []


def test_multipart_upload_part_copy(s3: Any, p: str) -> None:
    src = payload(6 * MiB + 100, 50)
    s3.put_object(Bucket=HOME, Key=f"{p}src.bin", Body=src)
    key = f"{p}assembled.bin"
    uid = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
    whole = s3.upload_part_copy(
        Bucket=HOME, Key=key, UploadId=uid, PartNumber=1, CopySource={"Bucket": HOME, "Key": f"{p}src.bin"}
    )
    tail = s3.upload_part_copy(
        Bucket=HOME,
        Key=key,
        UploadId=uid,
        PartNumber=2,
        CopySource={"Bucket": HOME, "Key": f"{p}src.bin"},
        CopySourceRange="bytes=100-199",
    )
    assert whole["CopyPartResult"]["ETag"] == f'"{md5_hex(src)}"'
    assert tail["CopyPartResult"]["ETag"] == f'"{md5_hex(src[100:200])}"'
    parts = [
        {"PartNumber": 1, "ETag": whole["CopyPartResult"]["ETag"]},
        {"PartNumber": 2, "ETag": tail["CopyPartResult"]["ETag"]},
    ]
    done = s3.complete_multipart_upload(Bucket=HOME, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    assert done["ETag"] == multipart_etag([src, src[100:200]])
    assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == src + src[100:200]


def staged_files(gw: Gateway) -> list[pathlib.Path]:
    """The staged files of the zone's default resource: where parts go in place."""
    tmp = gw.zone.data_dir / "resources" / "default" / ".weft-tmp"
    return sorted(tmp.glob("up-*")) if tmp.exists() else []


def completions(zone: S3Zone, uid: str) -> list[str]:
    """The zone's log lines on the completion of upload ``uid``."""
    return [line for line in zone.log.read_text().splitlines() if uid in line and "upload completed" in line]


# Part sizes and the order they are sent in. On a file-system resource parts go in place at
# (n - 1) x the stride the first part of 5 MiB or more sets; completion links that file,
# hashed from the parts' digests (a power-of-two stride) or read back once (another
# stride), after copying into place what went under a key of its own: a part sent again,
# one larger than the stride, one sent before the stride was known. Parts that do not make
# that layout (a gap) are streamed into a new file instead. Each layout must give the same
# bytes and the same BLAKE3 as a plain put of them.
LAYOUTS = {
    "power-of-two stride, in order": ([8 * MiB, 8 * MiB, 8 * MiB, 3 * MiB + 7], [1, 2, 3, 4], [1, 2, 3, 4], True),
    "the small last part first": ([8 * MiB, 8 * MiB, 1234], [3, 2, 1], [1, 2, 3], True),
    "a stride that is no power of two": ([5 * MiB, 5 * MiB, 5 * MiB, 99], [2, 4, 1, 3], [1, 2, 3, 4], True),
    "a part sent again": ([8 * MiB, 8 * MiB, 2 * MiB], [1, 2, 2, 3], [1, 2, 3], True),
    "one part": ([6 * MiB + 1], [1], [1], True),
    "a part larger than the stride": ([5 * MiB, 6 * MiB, 1 * MiB], [1, 2, 3], [1, 2, 3], False),
    "a gap": ([8 * MiB, 8 * MiB, 8 * MiB], [1, 2, 3], [1, 3], False),
}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=list(LAYOUTS))
def test_multipart_layouts_in_place_or_not(
    gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path, layout: tuple[list[int], list[int], list[int], bool]
) -> None:
    sizes, sent, chosen, in_place = layout
    chunks = {n: payload(size, 60 + n) for n, size in enumerate(sizes, 1)}
    key = f"{p}layout.bin"
    uid = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
    etags = {}
    for i, n in enumerate(sent):
        # A part's first sending differs from its second, so only the later one may count.
        body = chunks[n] if n not in sent[i + 1 :] else b"~" * len(chunks[n])
        etags[n] = s3.upload_part(Bucket=HOME, Key=key, UploadId=uid, PartNumber=n, Body=body)["ETag"]
    assert len(staged_files(gw)) == 1, "the upload's staged file"
    done = s3.complete_multipart_upload(
        Bucket=HOME,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]} for n in chosen]},
    )
    want = b"".join(chunks[n] for n in chosen)
    assert done["ETag"] == multipart_etag([chunks[n] for n in chosen])
    how = "in place" if in_place else "by copying its parts"
    assert [f"completed {how} " in line for line in completions(gw.zone, uid)] == [True]
    assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == want
    (tmp_path / "plain.bin").write_bytes(want)
    gw.zone.ok("put", str(tmp_path / "plain.bin"), home_path(f"{p}plain.bin"))
    got, plain = (gw.zone.json("stat", home_path(f"{p}{name}")) for name in ("layout.bin", "plain.bin"))
    assert (got["size"], got["checksum"]) == (plain["size"], plain["checksum"])
    # The object verifies against the checksum it was registered with.
    gw.zone.ok("checksum", "--verify", home_path(key))
    # Nothing is left of the upload: no staged file, no parts under keys of their own.
    assert staged_files(gw) == []
    assert s3.list_multipart_uploads(Bucket=HOME, Prefix=p).get("Uploads", []) == []


class MinioServer(Minio):
    """A MinIO of the test tools on a free loopback port: the S3 resource a zone stores in."""

    KEY, SECRET = "weft-resource", "weft-resource-secret"

    def __init__(self, root: pathlib.Path) -> None:
        super().__init__(root, self.KEY, self.SECRET)
        self.s3 = boto3.session.Session().client(
            "s3",
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id=self.KEY,
            aws_secret_access_key=self.SECRET,
        )


def test_multipart_on_an_s3_resource_keeps_parts_as_objects_and_leaves_none(
    zone_root: pathlib.Path, aws_isolated: None
) -> None:
    """A zone whose resource is a MinIO bucket: each part is an object of its own there
    (never in place), completion assembles them into one, and completed and aborted
    uploads leave no part and no multipart upload in the bucket."""
    minio = MinioServer(zone_root / "resource-minio")
    z = None
    try:
        minio.s3.create_bucket(Bucket="weft-objects")
        config = zone_root / "s3-resource.toml"
        config.write_text(minio.resource_toml("weft-objects"))
        z = S3Zone("s3r", zone_root / "s3r-data")
        z.env["WEFT_CONFIG"] = str(config)
        z.run()
        gw = client(z.s3_url, Key(z.json("s3", "key", "create")))
        bucket = "home-admin"
        parts = [payload(5 * MiB, 90), payload(5 * MiB, 91), payload(MiB + 7, 92)]
        uid = gw.create_multipart_upload(Bucket=bucket, Key="runs/big.bin")["UploadId"]
        etags = {}
        for n, body in enumerate(parts, 1):
            if n == 2:  # sent twice: the later sending counts
                gw.upload_part(Bucket=bucket, Key="runs/big.bin", UploadId=uid, PartNumber=n, Body=b"~" * len(body))
            etags[n] = gw.upload_part(Bucket=bucket, Key="runs/big.bin", UploadId=uid, PartNumber=n, Body=body)["ETag"]
        listed = gw.list_parts(Bucket=bucket, Key="runs/big.bin", UploadId=uid)["Parts"]
        assert [(q["PartNumber"], q["Size"]) for q in listed] == [(1, 5 * MiB), (2, 5 * MiB), (3, MiB + 7)]
        aborted = gw.create_multipart_upload(Bucket=bucket, Key="runs/aborted.bin")["UploadId"]
        gw.upload_part(Bucket=bucket, Key="runs/aborted.bin", UploadId=aborted, PartNumber=1, Body=parts[0])
        gw.abort_multipart_upload(Bucket=bucket, Key="runs/aborted.bin", UploadId=aborted)
        done = gw.complete_multipart_upload(
            Bucket=bucket,
            Key="runs/big.bin",
            UploadId=uid,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2, 3)]},
        )
        assert done["ETag"] == multipart_etag(parts)
        assert "by copying its parts" in "".join(completions(z, uid))
        assert gw.get_object(Bucket=bucket, Key="runs/big.bin")["Body"].read() == b"".join(parts)
        z.ok("checksum", "--verify", "/s3r/home/admin/runs/big.bin")
        assert missing(gw, bucket, "runs/aborted.bin")
        # In the resource's bucket: the one object, no part, no open upload.
        deadline = time.monotonic() + 10
        while True:
            stored = minio.s3.list_objects_v2(Bucket="weft-objects").get("Contents", [])
            if len(stored) == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert [o["Size"] for o in stored] == [len(b"".join(parts))], stored
        assert minio.s3.list_multipart_uploads(Bucket="weft-objects").get("Uploads", []) == []
    finally:
        if z is not None:
            z.stop()
        minio.stop()


def test_virtual_hosted_requests_name_the_bucket_in_the_host(zone_root: pathlib.Path, aws_isolated: None) -> None:
    """With `--s3-domain`, `BUCKET.DOMAIN` is the bucket (DuckDB's and Cyberduck's default
    style); path-style requests keep working, and no other host names a bucket."""
    z = S3Zone("vh", zone_root / "vh-data")
    z.env["WEFT_S3_DOMAIN"] = "s3.test"
    z.run()
    try:
        admin = Key(z.json("s3", "key", "create"))
        z.ok("user", "add", "bob")
        path_style = client(z.s3_url, admin)
        path_style.put_object(Bucket="home-admin", Key="vh/a.txt", Body=b"by path")
        port = int(z.s3_url.rsplit(":", 1)[1])

        def as_host(
            method: str, host: str, target: str, body: bytes | None = None, key: Key = admin
        ) -> tuple[int, bytes]:
            """A signed request for `http://HOST:PORT/TARGET`, sent to the gateway's address."""
            url = f"http://{host}:{port}{target}"
            headers = signed_headers(url, method, key, body=body)
            headers["Host"] = f"{host}:{port}"
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request(method, target, body=body, headers=headers)
                r = conn.getresponse()
                return r.status, r.read()
            finally:
                conn.close()

        assert as_host("GET", "home-admin.s3.test", "/vh/a.txt") == (200, b"by path")
        status, _ = as_host("PUT", "home-admin.s3.test", "/vh/b.txt", b"by host")
        assert status == 200
        assert path_style.get_object(Bucket="home-admin", Key="vh/b.txt")["Body"].read() == b"by host"
        status, body = as_host("GET", "home-admin.s3.test", "/?list-type=2&prefix=vh%2F")
        assert status == 200 and re.findall(rb"<Key>([^<]+)</Key>", body) == [b"vh/a.txt", b"vh/b.txt"], body
        # The domain itself and the IP address are path style.
        assert as_host("GET", "s3.test", "/home-admin/vh/a.txt") == (200, b"by path")
        # Another host names no bucket: `/vh/a.txt` is then bucket `vh`, no valid name.
        status, body = as_host("GET", "home-admin.evil.test", "/vh/a.txt")
        assert (status, xml_code(body)) == (400, "InvalidBucketName"), body
        # Someone else's bucket by host is refused as by path.
        bob = Key(z.json("s3", "key", "create", "--user", "bob"))
        status, body = as_host("GET", "home-admin.s3.test", "/vh/a.txt", key=bob)
        assert (status, xml_code(body)) == (403, "AccessDenied"), body
    finally:
        z.stop()


def test_aborted_multipart_upload_leaves_nothing(gw: Gateway, s3: Any, p: str) -> None:
    key = f"{p}sub/aborted.bin"
    before = data_bytes(gw.zone.data_dir)
    uid = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
    for n in (1, 2):
        s3.upload_part(Bucket=HOME, Key=key, UploadId=uid, PartNumber=n, Body=payload(5 * MiB, 20 + n))
    assert [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=HOME, Prefix=p).get("Uploads", [])] == [uid]

    r = s3.abort_multipart_upload(Bucket=HOME, Key=key, UploadId=uid)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert missing(s3, HOME, key)
    assert s3.list_multipart_uploads(Bucket=HOME, Prefix=p).get("Uploads", []) == []
    assert error_of(s3.list_parts, Bucket=HOME, Key=key, UploadId=uid) == (404, "NoSuchUpload")
    assert error_of(
        s3.complete_multipart_upload,
        Bucket=HOME,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"x"'}]},
    ) == (404, "NoSuchUpload")
    assert listing(s3, HOME, p) == {}
    assert staged_files(gw) == []
    # The parts' 10 MiB are not kept on disk.
    deadline = time.monotonic() + 10
    while data_bytes(gw.zone.data_dir) - before > 2 * MiB and time.monotonic() < deadline:
        time.sleep(0.2)
    assert data_bytes(gw.zone.data_dir) - before <= 2 * MiB
    # weft shows nothing of it either: no object, and no folder it would have been in.
    assert_no_collection(gw, p)


def assert_no_collection(gw: Gateway, p: str) -> None:
    """Nothing was made below the admin's home for prefix ``p``, not even a collection."""
    names = {e["name"] for e in gw.zone.json("ls", home_path("").rstrip("/"))}
    if p.rstrip("/") in names:
        left = gw.zone.ok("ls", "-l", home_path(p.rstrip("/")))
        pytest.fail(f"{home_path(p)} was made (a collection holding {left.strip()!r}); expected nothing")


# -- the aws CLI ----------------------------------------------------------------------------


def aws_env(gw: Gateway, home: pathlib.Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "aws-config").write_text("")
    return tool_env(
        home,
        AWS_ACCESS_KEY_ID=gw.admin.access_key,
        AWS_SECRET_ACCESS_KEY=gw.admin.secret_key,
        AWS_DEFAULT_REGION=REGION,
        AWS_CONFIG_FILE=str(home / "aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_PAGER="",
    )


def aws(gw: Gateway, tmp: pathlib.Path, *args: str) -> str:
    r = run([AWS, "--endpoint-url", gw.url, "s3", *args], aws_env(gw, tmp / "aws-home"), cwd=tmp)
    return r.stdout


def aws_ls(out: str) -> dict[str, int | None]:
    """``aws s3 ls`` as {name: size}, a common prefix (``PRE name/``) with no size."""
    entries: dict[str, int | None] = {}
    for line in out.splitlines():
        if line.strip().startswith("PRE "):
            entries[line.strip()[4:]] = None
        else:
            _, _, size, name = line.split(None, 3)
            entries[name] = int(size)
    return entries


def sample_tree(root: pathlib.Path) -> dict[str, bytes]:
    """The sync tests' tree: a name with a space, a folder two deep, an empty file and a
    binary one."""
    files = {
        "a.txt": b"alpha\n",
        "with space.txt": b"spaced\n",
        "sub/b.bin": payload(200_000, 30),
        "sub/deep/c.txt": b"gamma\n" * 100,
        "sub/empty": b"",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def test_a_multipart_upload_survives_a_killed_zone(zone_root: pathlib.Path, aws_isolated: None) -> None:
    # Parts acknowledged are durable and recorded: after SIGKILL and a restart on the same
    # data, the upload lists them, takes the rest and completes with the right bytes.
    z = S3Zone("s3crash", zone_root / "s3crash")
    z.run()
    try:
        s3 = client(z.s3_url, Key(z.json("s3", "key", "create")))
        key = "crash/big.bin"
        up = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
        one, two = payload(6 * MiB, 21), payload(MiB + 17, 22)
        e1 = s3.upload_part(Bucket=HOME, Key=key, UploadId=up, PartNumber=1, Body=one)["ETag"]
        z.restart(signal.SIGKILL)
        s3 = client(z.s3_url, Key(z.json("s3", "key", "create")))
        listed = s3.list_parts(Bucket=HOME, Key=key, UploadId=up)["Parts"]
        assert [(x["PartNumber"], x["ETag"], x["Size"]) for x in listed] == [(1, e1, len(one))]
        e2 = s3.upload_part(Bucket=HOME, Key=key, UploadId=up, PartNumber=2, Body=two)["ETag"]
        parts = {"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}
        done = s3.complete_multipart_upload(Bucket=HOME, Key=key, UploadId=up, MultipartUpload=parts)
        assert done["ETag"] == multipart_etag([one, two])
        assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == one + two
        assert z.weft("checksum", "--verify", f"/s3crash/home/admin/{key}").returncode == 0
    finally:
        z.stop()


def test_a_part_written_in_place_by_a_zone_that_died_is_never_used(zone_root: pathlib.Path, aws_isolated: None) -> None:
    # The zone dies (FAILPOINTS, a test build's) after writing part 1 in place but before
    # recording it: that place stays claimed by a write that never ended. Part 1 sent
    # again goes under a key of its own, and completion copies the parts into a new file
    # rather than link a staged file a dead server might still have been writing.
    z = S3Zone("s3died", zone_root / "s3died")
    z.env = {"FAILPOINTS": "part-in-place-written=return"}
    z.run()
    try:
        s3 = client(z.s3_url, Key(z.json("s3", "key", "create")))
        key = "died/big.bin"
        up = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
        one, two = payload(6 * MiB, 31), payload(MiB + 5, 32)
        with pytest.raises((EndpointConnectionError, ConnectionClosedError)):
            s3.upload_part(Bucket=HOME, Key=key, UploadId=up, PartNumber=1, Body=b"~" * len(one))
        assert z.proc is not None and z.proc.wait(30) == -signal.SIGKILL
        z.env = {}
        z.run()
        s3 = client(z.s3_url, Key(z.json("s3", "key", "create")))
        assert s3.list_parts(Bucket=HOME, Key=key, UploadId=up).get("Parts", []) == []
        e = [
            s3.upload_part(Bucket=HOME, Key=key, UploadId=up, PartNumber=n, Body=b)["ETag"]
            for n, b in ((1, one), (2, two))
        ]
        parts = {"Parts": [{"PartNumber": n, "ETag": etag} for n, etag in enumerate(e, 1)]}
        s3.complete_multipart_upload(Bucket=HOME, Key=key, UploadId=up, MultipartUpload=parts)
        assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == one + two
        assert any("completed by copying its parts" in line for line in completions(z, up))
        assert z.weft("checksum", "--verify", f"/s3died/home/admin/{key}").returncode == 0
    finally:
        z.stop()


def test_aws_cli_cp_sync_ls_rm(gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "src"
    files = sample_tree(src)
    base = f"s3://{HOME}/{p}"

    out = aws(gw, tmp_path, "cp", str(src / "a.txt"), f"{base}single/a.txt")
    assert "upload:" in out
    assert s3.get_object(Bucket=HOME, Key=f"{p}single/a.txt")["Body"].read() == files["a.txt"]
    aws(gw, tmp_path, "cp", f"{base}single/a.txt", str(tmp_path / "a-back.txt"))
    assert (tmp_path / "a-back.txt").read_bytes() == files["a.txt"]

    out = aws(gw, tmp_path, "sync", str(src), f"{base}tree/")
    assert out.count("upload:") == len(files), out
    assert {k[len(f"{p}tree/") :]: v for k, v in listing(s3, HOME, f"{p}tree/").items()} == {
        rel: (f'"{md5_hex(data)}"', len(data)) for rel, data in files.items()
    }
    # Nothing changed: nothing to upload.
    out = aws(gw, tmp_path, "sync", str(src), f"{base}tree/")
    assert "upload:" not in out, out

    # One file changed, one gone: sync --delete sends the one and deletes the other.
    (src / "sub/deep/c.txt").write_bytes(b"changed, and longer than before\n" * 100)
    (src / "a.txt").unlink()
    out = aws(gw, tmp_path, "sync", "--delete", str(src), f"{base}tree/")
    assert out.count("upload:") == 1 and "sub/deep/c.txt" in out, out
    assert out.count("delete:") == 1 and "a.txt" in out, out
    files = tree(src)
    assert set(listing(s3, HOME, f"{p}tree/")) == {f"{p}tree/{rel}" for rel in files}

    assert aws_ls(aws(gw, tmp_path, "ls", f"{base}tree/")) == {
        "sub/": None,
        "with space.txt": len(files["with space.txt"]),
    }
    assert aws_ls(aws(gw, tmp_path, "ls", "--recursive", f"{base}tree/")) == {
        f"{p}tree/{rel}": len(data) for rel, data in files.items()
    }
    assert aws_ls(aws(gw, tmp_path, "ls", f"s3://{HOME}/{p}")) == {"tree/": None, "single/": None}
    assert HOME in aws(gw, tmp_path, "ls").split()

    aws(gw, tmp_path, "sync", f"{base}tree/", str(tmp_path / "back"))
    assert tree(tmp_path / "back") == files

    out = aws(gw, tmp_path, "rm", "--recursive", f"{base}tree/")
    assert out.count("delete:") == len(files), out
    assert listing(s3, HOME, f"{p}tree/") == {}
    aws(gw, tmp_path, "rm", f"{base}single/a.txt")
    assert listing(s3, HOME, p) == {}


def test_aws_cli_cp_large_file_multipart(gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path) -> None:
    data = payload(17 * MiB + 5, 31)  # the CLI's 8 MiB parts: 3
    (tmp_path / "big.bin").write_bytes(data)
    aws(gw, tmp_path, "cp", str(tmp_path / "big.bin"), f"s3://{HOME}/{p}big.bin")
    h = s3.head_object(Bucket=HOME, Key=f"{p}big.bin")
    assert h["ETag"] == multipart_etag([data[i : i + 8 * MiB] for i in range(0, len(data), 8 * MiB)])
    assert h["ContentLength"] == len(data)
    aws(gw, tmp_path, "cp", f"s3://{HOME}/{p}big.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == data


# -- rclone ---------------------------------------------------------------------------------


def rclone(gw: Gateway, tmp: pathlib.Path, *args: str, ok: bool = True) -> str:
    """``rclone ARGS`` with the remote ``weft:`` set up by environment only; its output
    (rclone logs to standard error). It must succeed, or with ``ok=False`` fail."""
    home = tmp / "rclone-home"
    home.mkdir(exist_ok=True)
    (home / "rclone.conf").write_text("")
    env = tool_env(
        home,
        RCLONE_CONFIG=str(home / "rclone.conf"),
        RCLONE_CONFIG_WEFT_TYPE="s3",
        RCLONE_CONFIG_WEFT_PROVIDER="Other",
        RCLONE_CONFIG_WEFT_ENDPOINT=gw.url,
        RCLONE_CONFIG_WEFT_ACCESS_KEY_ID=gw.admin.access_key,
        RCLONE_CONFIG_WEFT_SECRET_ACCESS_KEY=gw.admin.secret_key,
    )
    cmd = [str(TOOLS_BIN / "rclone"), *args, "--retries", "1", "--low-level-retries", "1"]
    if ok:
        r = run(cmd, env, cwd=tmp)
    else:
        r = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=300)
        assert r.returncode != 0, f"{cmd} succeeded:\n{r.stdout}\n{r.stderr}"
    return r.stdout + r.stderr


def test_rclone_copy_sync_check(gw: Gateway, s3: Any, p: str, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "src"
    files = sample_tree(src)
    remote = f"weft:{HOME}/{p}tree"

    rclone(gw, tmp_path, "copy", str(src), remote)
    assert {k[len(f"{p}tree/") :]: v for k, v in listing(s3, HOME, f"{p}tree/").items()} == {
        rel: (f'"{md5_hex(data)}"', len(data)) for rel, data in files.items()
    }
    # rclone keeps the modification time as x-amz-meta-mtime, an AVU in weft.
    mtime = s3.head_object(Bucket=HOME, Key=f"{p}tree/a.txt")["Metadata"].get("mtime")
    assert mtime and abs(float(mtime) - (src / "a.txt").stat().st_mtime) < 1, mtime

    def check() -> str:
        out = rclone(gw, tmp_path, "check", str(src), remote)
        n = len(tree(src))
        assert "0 differences found" in out and f"{n} matching files" in out, out
        # The hashes were compared, not only the sizes.
        assert "could not be checked" not in out and "hashes could not" not in out, out
        return out

    check()
    out = rclone(gw, tmp_path, "check", "--download", str(src), remote)
    assert "0 differences found" in out, out

    (src / "sub/deep/c.txt").write_bytes(b"different now\n")
    (src / "a.txt").unlink()
    (src / "new.txt").write_bytes(b"new\n")
    # The check sees the three differences (which shows that it can fail).
    out = rclone(gw, tmp_path, "check", str(src), remote, ok=False)
    assert "3 differences found" in out, out

    rclone(gw, tmp_path, "sync", str(src), remote)
    check()
    assert set(listing(s3, HOME, f"{p}tree/")) == {f"{p}tree/{rel}" for rel in tree(src)}
    assert s3.get_object(Bucket=HOME, Key=f"{p}tree/sub/deep/c.txt")["Body"].read() == b"different now\n"

    # Nothing to do the second time.
    out = rclone(gw, tmp_path, "sync", "-v", str(src), remote)
    assert "There was nothing to transfer" in out and "Copied" not in out, out

    rclone(gw, tmp_path, "sync", remote, str(tmp_path / "back"))
    assert tree(tmp_path / "back") == tree(src)
    out = rclone(gw, tmp_path, "lsf", "-R", remote)
    assert sorted(x for x in out.splitlines() if not x.endswith("/")) == sorted(tree(src))


# -- s3fs and pandas ------------------------------------------------------------------------


def test_pandas_parquet_and_csv_through_s3fs(gw: Gateway, s3: Any, p: str) -> None:
    import pandas as pd
    import s3fs

    opts = {
        "key": gw.admin.access_key,
        "secret": gw.admin.secret_key,
        "client_kwargs": {"endpoint_url": gw.url, "region_name": REGION},
    }
    df = pd.DataFrame(
        {
            "station": [f"st-{i % 7}" for i in range(5000)],
            "t": [float(i) / 3 for i in range(5000)],
            "ok": [i % 2 == 0 for i in range(5000)],
        }
    )
    url = f"s3://{HOME}/{p}obs.parquet"
    df.to_parquet(url, storage_options=opts)
    back = pd.read_parquet(url, storage_options=opts)
    pd.testing.assert_frame_equal(back, df)
    # What pandas wrote is an object in weft, readable over boto3 as a parquet file.
    body = s3.get_object(Bucket=HOME, Key=f"{p}obs.parquet")["Body"].read()
    assert body[:4] == b"PAR1" and body[-4:] == b"PAR1"

    df.to_csv(f"s3://{HOME}/{p}obs.csv", index=False, storage_options=opts)
    pd.testing.assert_frame_equal(pd.read_csv(f"s3://{HOME}/{p}obs.csv", storage_options=opts), df)

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **opts)
    assert sorted(fs.ls(f"{HOME}/{p}", refresh=True)) == [f"{HOME}/{p}obs.csv", f"{HOME}/{p}obs.parquet"]
    assert fs.info(f"{HOME}/{p}obs.parquet")["size"] == len(body)
    with fs.open(f"{HOME}/{p}obs.parquet", "rb") as f:
        f.seek(len(body) - 8)
        assert f.read() == body[-8:]
    # Larger than a block: s3fs (aiobotocore) sends a multipart upload.
    big = payload(12 * MiB + 1, 51)
    pieces = [big[: 5 * MiB], big[5 * MiB : 10 * MiB], big[10 * MiB :]]
    with fs.open(f"{HOME}/{p}blocks.bin", "wb", block_size=5 * MiB) as f:
        for piece in pieces:
            f.write(piece)
    assert fs.cat_file(f"{HOME}/{p}blocks.bin") == big
    assert s3.head_object(Bucket=HOME, Key=f"{p}blocks.bin")["ETag"] == multipart_etag(pieces)
    # A file uploaded over boto3 reads back through pandas too.
    s3.put_object(Bucket=HOME, Key=f"{p}up.parquet", Body=body)
    pd.testing.assert_frame_equal(pd.read_parquet(f"s3://{HOME}/{p}up.parquet", storage_options=opts), df)


# -- hostile and bad input ------------------------------------------------------------------


def test_a_users_key_cannot_touch_another_users_home(gw: Gateway, p: str) -> None:
    alice, bob = client(gw.url, gw.alice), client(gw.url, gw.bob)
    ha, hb = gw.alice.home_bucket, gw.bob.home_bucket
    assert (ha, hb) == ("home-alice", "home-bob")
    key = f"{p}secret.txt"
    etag = alice.put_object(Bucket=ha, Key=key, Body=b"alice's")["ETag"]
    bob.put_object(Bucket=hb, Key=f"{p}own.txt", Body=b"bob's")
    before_a, before_b = listing(alice, ha), listing(bob, hb)

    assert error_of(bob.get_object, Bucket=ha, Key=key) == (403, "AccessDenied")
    assert error_of(bob.head_object, Bucket=ha, Key=key) == (403, "403")
    assert error_of(bob.list_objects_v2, Bucket=ha) == (403, "AccessDenied")
    assert error_of(bob.list_objects, Bucket=ha, Prefix=p) == (403, "AccessDenied")
    assert error_of(bob.head_bucket, Bucket=ha) == (403, "403")
    assert error_of(bob.put_object, Bucket=ha, Key=f"{p}planted.txt", Body=b"bob was here") == (403, "AccessDenied")
    assert error_of(bob.put_object, Bucket=ha, Key=key, Body=b"overwritten") == (403, "AccessDenied")
    assert error_of(bob.delete_object, Bucket=ha, Key=key) == (403, "AccessDenied")
    # A home bob can reach no part of is refused whole, as one of nobody is.
    assert error_of(bob.delete_objects, Bucket=ha, Delete={"Objects": [{"Key": key}]}) == (403, "AccessDenied")
    assert error_of(bob.copy_object, Bucket=hb, Key=f"{p}stolen.txt", CopySource={"Bucket": ha, "Key": key}) == (
        403,
        "AccessDenied",
    )
    assert error_of(
        bob.copy_object, Bucket=ha, Key=f"{p}pushed.txt", CopySource={"Bucket": hb, "Key": f"{p}own.txt"}
    ) == (403, "AccessDenied")
    assert error_of(bob.get_object, Bucket=SHARED, Key="x") == (403, "AccessDenied")
    assert error_of(bob.put_object, Bucket=SHARED, Key=f"{p}x", Body=b"x") == (403, "AccessDenied")

    # Nothing changed for either of them.
    assert listing(alice, ha) == before_a and listing(bob, hb) == before_b
    g = alice.get_object(Bucket=ha, Key=key)
    assert (g["Body"].read(), g["ETag"]) == (b"alice's", etag)
    assert listing(client(gw.url, gw.admin), SHARED, p) == {}
    assert [e["name"] for e in gw.zone.json("ls", home_path(p.rstrip("/"), "alice"))] == ["secret.txt"]
    assert ha not in [b["Name"] for b in bob.list_buckets()["Buckets"]]


def test_a_collection_shared_inside_a_bucket_lists_with_its_prefix(gw: Gateway, p: str) -> None:
    alice, bob = client(gw.url, gw.alice), client(gw.url, gw.bob)
    alice.put_object(Bucket="home-alice", Key=f"{p}shared/a.txt", Body=b"for bob")
    alice.put_object(Bucket="home-alice", Key=f"{p}private.txt", Body=b"not for bob")
    gw.zone.ok("acl", "set", home_path(f"{p}shared", "alice"), "bob", "read")
    # The grant is on the collection: bob lists and reads it with its prefix, not more.
    got = bob.list_objects_v2(Bucket="home-alice", Prefix=f"{p}shared/")
    assert [o["Key"] for o in got["Contents"]] == [f"{p}shared/a.txt"]
    assert bob.get_object(Bucket="home-alice", Key=f"{p}shared/a.txt")["Body"].read() == b"for bob"
    assert error_of(bob.list_objects_v2, Bucket="home-alice", Prefix=p) == (403, "AccessDenied")
    assert error_of(bob.get_object, Bucket="home-alice", Key=f"{p}private.txt") == (403, "AccessDenied")
    assert error_of(bob.put_object, Bucket="home-alice", Key=f"{p}shared/b.txt", Body=b"x") == (403, "AccessDenied")


def test_home_buckets_of_names_that_are_not_bucket_names(gw: Gateway, p: str) -> None:
    gw.zone.ok("user", "add", "data_mgr")
    key = Key(gw.zone.json("s3", "key", "create", "--user", "data_mgr"))
    assert re.fullmatch(r"home--[0-9a-f]{16}", key.home_bucket), key.home_bucket
    mine = client(gw.url, key)
    mine.put_object(Bucket=key.home_bucket, Key=f"{p}x", Body=b"hashed home")
    assert mine.get_object(Bucket=key.home_bucket, Key=f"{p}x")["Body"].read() == b"hashed home"
    assert key.home_bucket in [b["Name"] for b in mine.list_buckets()["Buckets"]]
    assert gw.zone.weft("stat", f"/{ZONE}/home/data_mgr/{p}x").returncode == 0
    # Homes that are nobody's answer as others' do: names do not tell who has an account.
    bob = client(gw.url, gw.bob)
    for name in ("home-nobody", "home-0123456789abcdef", "home-alice"):
        assert error_of(bob.list_objects_v2, Bucket=name) == (403, "AccessDenied"), name


def test_parts_count_against_the_quota(gw: Gateway, p: str) -> None:
    gw.zone.ok("user", "add", "carol")
    gw.zone.ok("quota", "set", "carol", "--bytes", "12M")
    carol = client(gw.url, Key(gw.zone.json("s3", "key", "create", "--user", "carol")))
    key = f"{p}big.bin"
    up = carol.create_multipart_upload(Bucket="home-carol", Key=key)["UploadId"]
    for n in (1, 2):
        carol.upload_part(Bucket="home-carol", Key=key, UploadId=up, PartNumber=n, Body=payload(5 * MiB, n))
    # Parts not yet an object hold the disk all the same.
    err = error_of(carol.upload_part, Bucket="home-carol", Key=key, UploadId=up, PartNumber=3, Body=payload(5 * MiB))
    assert err == (403, "QuotaExceeded"), err
    assert [x["PartNumber"] for x in carol.list_parts(Bucket="home-carol", Key=key, UploadId=up)["Parts"]] == [1, 2]
    carol.abort_multipart_upload(Bucket="home-carol", Key=key, UploadId=up)
    carol.put_object(Bucket="home-carol", Key=f"{p}fits.bin", Body=payload(5 * MiB))


def test_copies_and_completions_count_against_the_quota(gw: Gateway, p: str) -> None:
    gw.zone.ok("user", "add", "dave")
    gw.zone.ok("quota", "set", "dave", "--bytes", "12M")
    dave = client(gw.url, Key(gw.zone.json("s3", "key", "create", "--user", "dave")))
    dave.put_object(Bucket="home-dave", Key=f"{p}a.bin", Body=payload(5 * MiB))
    source = {"Bucket": "home-dave", "Key": f"{p}a.bin"}
    dave.copy_object(Bucket="home-dave", Key=f"{p}b.bin", CopySource=source)
    # A copy stores as much again: a third would pass the quota.
    err = error_of(dave.copy_object, Bucket="home-dave", Key=f"{p}c.bin", CopySource=source)
    assert err == (403, "QuotaExceeded"), err
    assert missing(dave, "home-dave", f"{p}c.bin")
    # An upload's own parts become its object: completing it is not charged for them twice.
    key = f"{p}parts.bin"
    up = dave.create_multipart_upload(Bucket="home-dave", Key=key)["UploadId"]
    etag = dave.upload_part(Bucket="home-dave", Key=key, UploadId=up, PartNumber=1, Body=payload(MiB + MiB // 2))[
        "ETag"
    ]
    dave.complete_multipart_upload(
        Bucket="home-dave", Key=key, UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]}
    )
    assert dave.head_object(Bucket="home-dave", Key=key)["ContentLength"] == MiB + MiB // 2


def test_wrong_secret_is_signature_does_not_match(gw: Gateway, s3: Any, p: str) -> None:
    forged = client(gw.url, gw.admin, secret="x" * 40)
    assert error_of(forged.put_object, Bucket=HOME, Key=f"{p}forged", Body=b"x") == (403, "SignatureDoesNotMatch")
    assert error_of(forged.get_object, Bucket=HOME, Key=f"{p}forged") == (403, "SignatureDoesNotMatch")
    assert error_of(forged.list_buckets) == (403, "SignatureDoesNotMatch")
    s3.put_object(Bucket=HOME, Key=f"{p}kept", Body=b"kept")
    assert error_of(forged.delete_object, Bucket=HOME, Key=f"{p}kept") == (403, "SignatureDoesNotMatch")
    assert missing(s3, HOME, f"{p}forged")
    assert s3.get_object(Bucket=HOME, Key=f"{p}kept")["Body"].read() == b"kept"


def test_unknown_and_removed_access_keys(gw: Gateway, s3: Any, p: str) -> None:
    unknown = client(gw.url, Key({**vars(gw.admin), "access_key": "WEFTNOSUCHKEY0000000"}))
    assert error_of(unknown.list_buckets) == (403, "InvalidAccessKeyId")
    assert error_of(unknown.put_object, Bucket=HOME, Key=f"{p}x", Body=b"x") == (403, "InvalidAccessKeyId")
    assert missing(s3, HOME, f"{p}x")

    extra = Key(gw.zone.json("s3", "key", "create", "--user", "alice"))
    c = client(gw.url, extra)
    c.put_object(Bucket="home-alice", Key=f"{p}before-rm", Body=b"1")
    keys = gw.zone.json("s3", "key", "ls", "--user", "alice")
    assert extra.access_key in [k["access_key"] for k in keys]
    assert all("secret_key" not in k for k in keys)
    gw.zone.ok("s3", "key", "rm", extra.access_key)
    assert extra.access_key not in [k["access_key"] for k in gw.zone.json("s3", "key", "ls", "--all")]
    assert error_of(c.put_object, Bucket="home-alice", Key=f"{p}after-rm", Body=b"2") == (403, "InvalidAccessKeyId")
    assert sorted(listing(client(gw.url, gw.alice), "home-alice", p)) == [f"{p}before-rm"]


def test_presigned_urls_expire(gw: Gateway, s3: Any, p: str) -> None:
    s3.put_object(Bucket=HOME, Key=f"{p}shared.txt", Body=b"presigned")
    # boto3 presigns with SigV2 unless told otherwise (see test_sigv2_is_refused).
    signer = client(gw.url, gw.admin, signature_version="s3v4")
    ok_get = signer.generate_presigned_url(
        "get_object", Params={"Bucket": HOME, "Key": f"{p}shared.txt"}, ExpiresIn=600
    )
    assert send("GET", ok_get) == (200, b"presigned")
    ok_put = signer.generate_presigned_url("put_object", Params={"Bucket": HOME, "Key": f"{p}by-url"}, ExpiresIn=600)
    assert send("PUT", ok_put, body=b"uploaded")[0] == 200
    assert s3.get_object(Bucket=HOME, Key=f"{p}by-url")["Body"].read() == b"uploaded"

    get = signer.generate_presigned_url("get_object", Params={"Bucket": HOME, "Key": f"{p}shared.txt"}, ExpiresIn=1)
    put = signer.generate_presigned_url("put_object", Params={"Bucket": HOME, "Key": f"{p}late"}, ExpiresIn=1)
    time.sleep(2.5)
    status, body = send("GET", get)
    assert (status, xml_code(body)) == (403, "AccessDenied"), body
    status, body = send("PUT", put, body=b"too late")
    assert (status, xml_code(body)) == (403, "AccessDenied"), body
    assert missing(s3, HOME, f"{p}late")


def presign(gw: Gateway, key: str, expires: int) -> str:
    """A SigV4 presigned GET valid for ``expires`` seconds, signed as botocore signs, with
    no client-side limit on the expiry."""
    req = AWSRequest(method="GET", url=f"{gw.url}/{HOME}/{key}")
    S3SigV4QueryAuth(Credentials(gw.admin.access_key, gw.admin.secret_key), "s3", REGION, expires=expires).add_auth(req)
    return str(req.url)


def test_presigned_url_valid_over_seven_days_is_refused(gw: Gateway, s3: Any, p: str) -> None:
    s3.put_object(Bucket=HOME, Key=f"{p}long.txt", Body=b"seven days")
    week = 7 * 24 * 3600
    assert send("GET", presign(gw, f"{p}long.txt", week)) == (200, b"seven days")
    status, body = send("GET", presign(gw, f"{p}long.txt", week + 1))
    assert (status, xml_code(body)) == (400, "AuthorizationQueryParametersError"), body
    # Made longer after signing: refused all the same.
    url = presign(gw, f"{p}long.txt", week).replace(f"X-Amz-Expires={week}", f"X-Amz-Expires={week * 52}")
    status, body = send("GET", url)
    assert status in (400, 403) and xml_code(body) in ("AuthorizationQueryParametersError", "SignatureDoesNotMatch")


@pytest.mark.parametrize("minutes", [-20, 20], ids=["behind", "ahead"])
def test_skewed_clock_is_refused(gw: Gateway, s3: Any, p: str, minutes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    s3.put_object(Bucket=HOME, Key=f"{p}kept", Body=b"kept")
    real = botocore.auth.get_current_datetime

    def skewed(remove_tzinfo: bool = True) -> datetime.datetime:
        return real(remove_tzinfo) + datetime.timedelta(minutes=minutes)

    c = client(gw.url, gw.admin)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", skewed)
    assert error_of(c.put_object, Bucket=HOME, Key=f"{p}skewed", Body=b"x") == (403, "RequestTimeTooSkewed")
    assert error_of(c.get_object, Bucket=HOME, Key=f"{p}kept") == (403, "RequestTimeTooSkewed")
    assert error_of(c.delete_object, Bucket=HOME, Key=f"{p}kept") == (403, "RequestTimeTooSkewed")
    monkeypatch.setattr(botocore.auth, "get_current_datetime", real)
    assert missing(s3, HOME, f"{p}skewed")
    assert s3.get_object(Bucket=HOME, Key=f"{p}kept")["Body"].read() == b"kept"
    # Skew within the 15 minutes is fine.
    monkeypatch.setattr(
        botocore.auth,
        "get_current_datetime",
        lambda remove_tzinfo=True: real(remove_tzinfo) + datetime.timedelta(minutes=minutes // 4),
    )
    c.put_object(Bucket=HOME, Key=f"{p}skewed", Body=b"x")
    monkeypatch.setattr(botocore.auth, "get_current_datetime", real)
    assert not missing(s3, HOME, f"{p}skewed")


def test_body_shorter_than_its_content_length(gw: Gateway, s3: Any, p: str) -> None:
    for key in (f"{p}fresh/short.bin", f"{p}existing.bin"):
        if key.endswith("existing.bin"):
            s3.put_object(Bucket=HOME, Key=key, Body=b"before")
        url = f"{gw.url}/{HOME}/{key}"
        headers = signed_headers(url, "PUT", gw.admin, unsigned_payload=True)
        assert headers["X-Amz-Content-SHA256"] == "UNSIGNED-PAYLOAD"
        u = urllib.parse.urlsplit(url)
        head = [f"PUT {u.path} HTTP/1.1", f"Host: {u.netloc}", "Content-Length: 1000"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        with socket.create_connection((u.hostname, u.port), timeout=30) as sock:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + b"0123456789")
            sock.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        if answer:
            status = int(answer.split(b" ", 2)[1])
            assert status == 400 and b"<Code>IncompleteBody</Code>" in answer, answer
        if key.endswith("short.bin"):
            assert missing(s3, HOME, key)
        else:
            assert s3.get_object(Bucket=HOME, Key=key)["Body"].read() == b"before"
    assert sorted(listing(s3, HOME, p)) == [f"{p}existing.bin"]
    assert [e["name"] for e in gw.zone.json("ls", home_path(p.rstrip("/")))] == ["existing.bin"]


def test_content_md5_and_checksum_mismatches_store_nothing(gw: Gateway, s3: Any, p: str) -> None:
    s3.put_object(Bucket=HOME, Key=f"{p}existing", Body=b"original")
    before = listing(s3, HOME, p)
    wrong_md5 = b64(hashlib.md5(b"something else").digest())
    wrong_crc = b64((zlib.crc32(b"payload") ^ 1).to_bytes(4, "big"))
    wrong_sha = b64(hashlib.sha256(b"something else").digest())
    for key in (f"{p}fresh/dir/new", f"{p}existing"):
        assert error_of(s3.put_object, Bucket=HOME, Key=key, Body=b"payload", ContentMD5=wrong_md5) == (
            400,
            "BadDigest",
        )
        assert error_of(s3.put_object, Bucket=HOME, Key=key, Body=b"payload", ChecksumCRC32=wrong_crc) == (
            400,
            "BadDigest",
        )
        assert error_of(s3.put_object, Bucket=HOME, Key=key, Body=b"payload", ChecksumSHA256=wrong_sha) == (
            400,
            "BadDigest",
        )
    assert error_of(s3.put_object, Bucket=HOME, Key=f"{p}fresh/dir/new", Body=b"payload", ContentMD5="not base64!") == (
        400,
        "InvalidDigest",
    )
    assert missing(s3, HOME, f"{p}fresh/dir/new")
    assert s3.get_object(Bucket=HOME, Key=f"{p}existing")["Body"].read() == b"original"
    assert listing(s3, HOME, p) == before
    # Not even the folders the key would have been in.
    assert [e["name"] for e in gw.zone.json("ls", home_path(p.rstrip("/")))] == ["existing"]


def test_payload_hash_mismatch_stores_nothing(gw: Gateway, s3: Any, p: str) -> None:
    url = f"{gw.url}/{HOME}/{p}tampered"
    headers = signed_headers(url, "PUT", gw.admin, body=b"signed body")
    status, body = send("PUT", url, headers=headers, body=b"other body!")
    assert (status, xml_code(body)) == (400, "XAmzContentSHA256Mismatch"), body
    assert missing(s3, HOME, f"{p}tampered")


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response (with a Content-Length) read off ``sock``: status, headers
    (lower-case names) and body. A connection closed before a whole response: status 0."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return 0, {}, buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split(" ", 2)[1]), headers, body


def raw_request(
    gw: Gateway, method: str, key: str, extra: dict[str, str], body: bytes = b"", sign_body: bool = True
) -> bytes:
    url = f"{gw.url}/{HOME}/{key}"
    headers = signed_headers(url, method, gw.admin, body=body if sign_body else None, unsigned_payload=not sign_body)
    u = urllib.parse.urlsplit(url)
    lines = [
        f"{method} {u.path}{'?' + u.query if u.query else ''} HTTP/1.1",
        f"Host: {u.netloc}",
        *(f"{k}: {v}" for k, v in {**headers, **extra}.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("how", ["expect-100-body-withheld", "large-body-sent"])
def test_a_refused_upload_leaves_the_connection_in_step(gw: Gateway, s3: Any, p: str, how: str) -> None:
    """A PUT refused before its body is read (here: an invalid key) must leave the
    connection usable for the next request, or say ``Connection: close`` (RFC 9110 10.1.1,
    RFC 9112 9.6). botocore sends PUTs with ``Expect: 100-continue`` and, answered at once
    with an error, withholds the body and sends its next request on the same connection;
    other clients send the whole body. Pooled connections make either the common case."""
    s3.put_object(Bucket=HOME, Key=f"{p}there", Body=b"there")
    u = urllib.parse.urlsplit(gw.url)
    assert u.hostname and u.port
    with socket.create_connection((u.hostname, u.port), timeout=10) as sock:
        if how == "expect-100-body-withheld":
            body = b"x"  # the next request loses its first byte if the server waits for it
            sock.sendall(
                raw_request(
                    gw, "PUT", f"{p}a//b", {"Expect": "100-continue", "Content-Length": str(len(body))}, sign_body=False
                )
            )
        else:
            body = payload(300_000, 40)
            sock.sendall(raw_request(gw, "PUT", f"{p}a//b", {"Content-Length": str(len(body))}, body) + body)
        status, headers, answer = read_response(sock)
        assert status == 400 and xml_code(answer) == "InvalidArgument", (status, answer)
        if headers.get("connection", "").lower() == "close":
            return  # said so: the client opens a new connection
        time.sleep(0.2)
        try:
            sock.sendall(raw_request(gw, "GET", f"{p}there", {}))
            status, _, answer = read_response(sock)
        except OSError as e:
            status, answer = 0, repr(e).encode()
        assert (status, answer) == (200, b"there"), (
            "after its 400 (without Connection: close) the server did not answer the next request on the "
            f"connection as sent: {status} {answer[:300]!r}"
        )
    assert missing(s3, HOME, f"{p}a")


@pytest.mark.parametrize("what", ["PutObject", "UploadPart"])
def test_a_body_declared_over_5_gib_is_refused_before_it_is_read(gw: Gateway, s3: Any, p: str, what: str) -> None:
    # S3's limits (5 GiB per PUT and per part) are checked on the declared length, so a
    # client announcing 6 GiB is answered at once, with nothing read, stored or counted.
    key = f"{p}huge.bin"
    query = ""
    if what == "UploadPart":
        uid = s3.create_multipart_upload(Bucket=HOME, Key=key)["UploadId"]
        query = f"?partNumber=1&uploadId={urllib.parse.quote(uid)}"
    u = urllib.parse.urlsplit(gw.url)
    assert u.hostname and u.port
    with socket.create_connection((u.hostname, u.port), timeout=10) as sock:
        headers = {"Expect": "100-continue", "Content-Length": str(6 << 30)}
        sock.sendall(raw_request(gw, "PUT", key + query, headers, sign_body=False))
        status, _, answer = read_response(sock)
    assert (status, xml_code(answer)) == (400, "EntityTooLarge"), (status, answer)
    assert missing(s3, HOME, key)
    if what == "UploadPart":
        assert s3.list_parts(Bucket=HOME, Key=key, UploadId=uid).get("Parts", []) == []


def test_anonymous_requests_to_a_private_bucket_are_refused(gw: Gateway, s3: Any, p: str) -> None:
    anon = client(gw.url, None)
    s3.put_object(Bucket=HOME, Key=f"{p}private", Body=b"private")
    before = listing(s3, HOME, p)
    assert error_of(anon.get_object, Bucket=HOME, Key=f"{p}private") == (403, "AccessDenied")
    assert error_of(anon.head_object, Bucket=HOME, Key=f"{p}private") == (403, "403")
    assert error_of(anon.list_objects_v2, Bucket=HOME) == (403, "AccessDenied")
    assert error_of(anon.get_object, Bucket=SHARED, Key="x") == (403, "AccessDenied")
    assert error_of(anon.put_object, Bucket=HOME, Key=f"{p}planted", Body=b"x") == (403, "AccessDenied")
    assert error_of(anon.delete_object, Bucket=HOME, Key=f"{p}private") == (403, "AccessDenied")
    assert send("GET", f"{gw.url}/{HOME}/{p}private")[0] == 403
    assert listing(s3, HOME, p) == before
    assert s3.get_object(Bucket=HOME, Key=f"{p}private")["Body"].read() == b"private"


def test_public_read_bucket_reads_anonymously_but_refuses_writes(gw: Gateway, s3: Any, p: str) -> None:
    anon = client(gw.url, None)
    s3.put_object(Bucket=PUBLIC, Key=f"{p}open.txt", Body=b"for everyone", ContentType="text/plain")
    assert anon.get_object(Bucket=PUBLIC, Key=f"{p}open.txt")["Body"].read() == b"for everyone"
    assert anon.head_object(Bucket=PUBLIC, Key=f"{p}open.txt")["ContentType"] == "text/plain"
    assert [o["Key"] for o in anon.list_objects_v2(Bucket=PUBLIC, Prefix=p)["Contents"]] == [f"{p}open.txt"]
    assert send("GET", f"{gw.url}/{PUBLIC}/{p}open.txt") == (200, b"for everyone")
    before = listing(s3, PUBLIC)

    assert error_of(anon.put_object, Bucket=PUBLIC, Key=f"{p}planted", Body=b"x") == (403, "AccessDenied")
    assert error_of(anon.put_object, Bucket=PUBLIC, Key=f"{p}open.txt", Body=b"defaced") == (403, "AccessDenied")
    assert error_of(anon.delete_object, Bucket=PUBLIC, Key=f"{p}open.txt") == (403, "AccessDenied")
    status, body = send("PUT", f"{gw.url}/{PUBLIC}/{p}raw", body=b"x")
    assert (status, xml_code(body)) == (403, "AccessDenied")
    # bob may read it too (anyone may), and may not write it.
    bob = client(gw.url, gw.bob)
    assert bob.get_object(Bucket=PUBLIC, Key=f"{p}open.txt")["Body"].read() == b"for everyone"
    assert [o["Key"] for o in bob.list_objects_v2(Bucket=PUBLIC, Prefix=p)["Contents"]] == [f"{p}open.txt"]
    assert PUBLIC in [b["Name"] for b in bob.list_buckets()["Buckets"]]
    assert error_of(bob.put_object, Bucket=PUBLIC, Key=f"{p}bob", Body=b"x") == (403, "AccessDenied")
    assert listing(s3, PUBLIC) == before
    assert s3.get_object(Bucket=PUBLIC, Key=f"{p}open.txt")["Body"].read() == b"for everyone"


@pytest.mark.parametrize("bad", ["a//b", "../x", "a/../../x", "a/./b", "./x", "a/.."])
def test_keys_weft_refuses_are_invalid_argument(gw: Gateway, s3: Any, p: str, bad: str) -> None:
    s3.put_object(Bucket=HOME, Key=f"{p}present", Body=b"here")
    before = listing(s3, HOME)
    tree_before = gw.zone.json("ls", home_path("").rstrip("/"))
    key = f"{p}{bad}" if not bad.startswith(".") else bad
    assert error_of(s3.put_object, Bucket=HOME, Key=key, Body=b"x") == (400, "InvalidArgument")
    assert error_of(s3.get_object, Bucket=HOME, Key=key) == (400, "InvalidArgument")
    assert error_of(s3.copy_object, Bucket=HOME, Key=key, CopySource={"Bucket": HOME, "Key": f"{p}present"}) == (
        400,
        "InvalidArgument",
    )
    assert error_of(s3.create_multipart_upload, Bucket=HOME, Key=key) == (400, "InvalidArgument")
    assert listing(s3, HOME) == before
    assert gw.zone.json("ls", home_path("").rstrip("/")) == tree_before


def test_sigv2_is_refused(gw: Gateway, s3: Any, p: str) -> None:
    v2 = client(gw.url, gw.admin, signature_version="s3")
    assert error_of(v2.put_object, Bucket=HOME, Key=f"{p}v2", Body=b"x") == (403, "AccessDenied")
    assert error_of(v2.list_objects, Bucket=HOME) == (403, "AccessDenied")
    s3.put_object(Bucket=HOME, Key=f"{p}kept", Body=b"kept")
    assert error_of(v2.get_object, Bucket=HOME, Key=f"{p}kept") == (403, "AccessDenied")
    # boto3's presigned URLs are SigV2 by default: refused as well.
    for c in (v2, s3):
        url = c.generate_presigned_url("get_object", Params={"Bucket": HOME, "Key": f"{p}kept"}, ExpiresIn=600)
        assert "AWSAccessKeyId=" in url and "Signature=" in url
        status, body = send("GET", url)
        assert (status, xml_code(body)) == (403, "AccessDenied"), body
    assert missing(s3, HOME, f"{p}v2")


# -- browsers: a stored page on the zone's host ---------------------------------------------


def curl_head(url: str) -> tuple[int, dict[str, list[str]], bytes]:
    """``curl -si URL``: the status, every header's values (names in lower case) and the
    body, as the server sent them."""
    out = subprocess.run(["curl", "-si", "--max-time", "30", url], capture_output=True, timeout=60, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    return int(lines[0].split()[1]), headers, body


PAGE = b"<html><body><script>document.title = 'ran'</script>stored page</body></html>"


def test_a_stored_page_is_served_sandboxed_and_unsniffed(gw: Gateway, s3: Any, p: str) -> None:
    """Cookies ignore ports: a page served from the S3 port could set the web interface's
    session cookie. Whatever type an object was stored with or a presigned URL asks for,
    the browser gets ``nosniff`` and a sandbox with no script."""
    s3.put_object(Bucket=HOME, Key=f"{p}page.html", Body=PAGE, ContentType="text/html")
    s3.put_object(Bucket=HOME, Key=f"{p}page.bin", Body=PAGE)
    s3.put_object(Bucket=PUBLIC, Key=f"{p}page.html", Body=PAGE, ContentType="text/html")
    signer = client(gw.url, gw.admin, signature_version="s3v4")

    def presigned(key: str, **params: str) -> str:
        return str(
            signer.generate_presigned_url("get_object", Params={"Bucket": HOME, "Key": key, **params}, ExpiresIn=600)
        )

    for why, url, want in [
        ("stored as text/html", presigned(f"{p}page.html"), 200),
        ("stored as bytes, asked for as html", presigned(f"{p}page.bin", ResponseContentType="text/html"), 200),
        ("public, unsigned", f"{gw.url}/{PUBLIC}/{p}page.html", 200),
        ("an error", f"{gw.url}/{PUBLIC}/{p}nothing.html", 404),
    ]:
        status, headers, body = curl_head(url)
        assert status == want, (why, status, body[:300])
        assert headers.get("x-content-type-options") == ["nosniff"], (why, headers)
        assert headers.get("content-security-policy") == ["sandbox"], (why, headers)
        if want == 200:
            assert body == PAGE, why
            assert headers["content-type"] == ["text/html"], (why, headers)
    # S3 clients are unaffected: the stored type comes back as stored.
    assert s3.get_object(Bucket=HOME, Key=f"{p}page.html")["ContentType"] == "text/html"


# The browser of test_web.py (headless Chromium), one per module.
browser = test_web.browser


def test_a_stored_page_cannot_plant_a_session_cookie_for_the_web_interface(
    gw: Gateway, s3: Any, p: str, browser: WebDriver
) -> None:
    """What the sandbox is for, in a browser: a page stored over S3 and opened from the
    gateway's port runs no script, so it cannot set a cookie that the web interface's port
    of the same host would read as a session."""
    web = gw.zone.url
    planted = f"weft_session_{ZONE}=planted; path=/data"
    page = f"<script>document.cookie = {planted!r}; document.title = 'ran'</script>page".encode()
    s3.put_object(Bucket=PUBLIC, Key=f"{p}plant.html", Body=page, ContentType="text/html")
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
    browser.get(f"{gw.url}/{PUBLIC}/{p}plant.html")
    assert "page" in browser.page_source
    assert browser.title != "ran", "the stored page's script ran"
    sent = browser.execute_cdp_cmd("Network.getCookies", {"urls": [f"{web}/data/{ZONE}/home/admin"]})["cookies"]
    assert sent == [], sent
