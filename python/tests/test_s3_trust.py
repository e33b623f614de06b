"""The S3 gateway read as an attacker reads it: bucket names that must map to one user
each, homes that must not tell who has an account, and signatures and expiries that weft
must check as s3s verifies them (the decoded query, not the raw one). Raw URLs go through
curl, which sends them byte for byte (python-requests would un-escape the names)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from botocore.exceptions import ClientError
from s3_helpers import Key, MiB, S3Zone, client, error_of, missing, payload

ZONE = "s3t"


@dataclass
class Gateway:
    zone: S3Zone
    admin: Key
    bob: Key

    @property
    def url(self) -> str:
        return self.zone.s3_url


@pytest.fixture(scope="module")
def gw(zone_root: pathlib.Path, isolated_config: pathlib.Path) -> Iterator[Gateway]:
    """A zone serving S3 with an administrator's key, a user erin (who has an account and
    a home, and nothing shared) and a user bob with a key."""
    z = S3Zone.start(ZONE, zone_root)
    try:
        admin = Key(z.json("s3", "key", "create"))
        for user in ("erin", "bob"):
            z.ok("user", "add", user)
        bob = Key(z.json("s3", "key", "create", "--user", "bob"))
        yield Gateway(z, admin, bob)
    finally:
        z.stop()


def curl(*args: str) -> tuple[int, bytes]:
    """curl's status and body for a request it sends as given (``--globoff``: no brace or
    bracket expansion; no Content-Type unless asked)."""
    r = subprocess.run(
        ["curl", "-sS", "--globoff", "-o", "-", "-w", "\n%{http_code}", *args],
        capture_output=True,
        timeout=60,
        check=True,
    )
    body, _, status = r.stdout.rpartition(b"\n")
    return int(status), body


def xml_error(body: bytes) -> tuple[str, str]:
    root = ET.fromstring(body)
    return root.findtext("Code") or "", root.findtext("Message") or ""


# -- bucket names: one user each, and no account told ---------------------------------------


def hashed_home_user(gw: Gateway, base: str) -> tuple[str, Key, str]:
    """A user whose name is no bucket name (so its home bucket is hashed), chosen so that
    the 16 hex digits start with a letter: a name another user could take."""
    for i in range(40):
        name = f"{base}_{i}"
        gw.zone.ok("user", "add", name)
        key = Key(gw.zone.json("s3", "key", "create", "--user", name))
        hexdigits = key.home_bucket.removeprefix("home-").lstrip("-")
        if hexdigits[0].isalpha():
            return name, key, hexdigits
    raise AssertionError("no hash started with a letter in 40 names")


def test_a_user_named_like_a_hash_never_receives_that_users_uploads(gw: Gateway) -> None:
    jane, jane_key, hexdigits = hashed_home_user(gw, "jane_doe")
    assert re.fullmatch(r"home--[0-9a-f]{16}", jane_key.home_bucket), jane_key.home_bucket
    # The attacker takes the hash as his name (first OIDC sign-in does this without an
    # administrator) and opens his home to jane.
    gw.zone.ok("user", "add", hexdigits)
    mallory_key = Key(gw.zone.json("s3", "key", "create", "--user", hexdigits))
    assert mallory_key.home_bucket == f"home-{hexdigits}" != jane_key.home_bucket
    gw.zone.ok("acl", "set", f"/{ZONE}/home/{hexdigits}", jane, "write")

    janes = client(gw.url, jane_key)
    janes.put_object(Bucket=jane_key.home_bucket, Key="lab/result.csv", Body=b"jane's result")
    assert gw.zone.weft("stat", f"/{ZONE}/home/{jane}/lab/result.csv").returncode == 0
    assert gw.zone.weft("stat", f"/{ZONE}/home/{hexdigits}/lab/result.csv").returncode != 0
    mallory = client(gw.url, mallory_key)
    assert missing(mallory, mallory_key.home_bucket, "lab/result.csv")
    assert error_of(mallory.get_object, Bucket=jane_key.home_bucket, Key="lab/result.csv") == (403, "AccessDenied")
    assert janes.get_object(Bucket=jane_key.home_bucket, Key="lab/result.csv")["Body"].read() == b"jane's result"


def refusals(c: Any, bucket: str) -> list[tuple[str, int, str, str]]:
    """What every operation on ``bucket`` answers ``c``: its name, status, S3 code and
    message, with the bucket's name taken out of the message."""
    probes: list[tuple[str, Callable[[], Any]]] = [
        ("GetObject", lambda: c.get_object(Bucket=bucket, Key="x")),
        ("GetObject of a bad key", lambda: c.get_object(Bucket=bucket, Key="a//b")),
        ("GetObject of a folder", lambda: c.get_object(Bucket=bucket, Key="dir/")),
        ("HeadObject", lambda: c.head_object(Bucket=bucket, Key="x")),
        ("ListObjectsV2", lambda: c.list_objects_v2(Bucket=bucket)),
        ("ListObjects", lambda: c.list_objects(Bucket=bucket, Prefix="a/")),
        ("HeadBucket", lambda: c.head_bucket(Bucket=bucket)),
        ("GetBucketLocation", lambda: c.get_bucket_location(Bucket=bucket)),
        ("ListMultipartUploads", lambda: c.list_multipart_uploads(Bucket=bucket)),
        ("PutObject", lambda: c.put_object(Bucket=bucket, Key="x", Body=b"x")),
        ("PutObject of a bad key", lambda: c.put_object(Bucket=bucket, Key="../x", Body=b"x")),
        ("CreateMultipartUpload", lambda: c.create_multipart_upload(Bucket=bucket, Key="x")),
        ("UploadPart", lambda: c.upload_part(Bucket=bucket, Key="x", UploadId="s3t.0", PartNumber=1, Body=b"x")),
        ("ListParts", lambda: c.list_parts(Bucket=bucket, Key="x", UploadId="s3t.0")),
        ("DeleteObject", lambda: c.delete_object(Bucket=bucket, Key="x")),
        (
            "CopyObject out",
            lambda: c.copy_object(Bucket="home-bob", Key="x", CopySource={"Bucket": bucket, "Key": "x"}),
        ),
    ]
    out = []
    for name, call in probes:
        with pytest.raises(ClientError) as info:
            call()
        r = info.value.response
        message = r["Error"].get("Message", "").replace(bucket, "<bucket>")
        out.append((name, r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"], message))
    return out


def test_homes_answer_alike_whether_or_not_the_user_exists(gw: Gateway) -> None:
    jane, jane_key, _ = hashed_home_user(gw, "jane_roe")
    client(gw.url, jane_key).put_object(Bucket=jane_key.home_bucket, Key="x", Body=b"jane's")
    client(gw.url, gw.admin).put_object(Bucket="home-erin", Key="x", Body=b"erin's")
    for who, c in (("anonymous", client(gw.url, None)), ("bob", client(gw.url, gw.bob))):
        nobody = refusals(c, "home-nosuchuser")
        assert all(status == 403 for _, status, _, _ in nobody), nobody
        assert refusals(c, "home-erin") == nobody, who
        hashed = refusals(c, jane_key.home_bucket)
        assert hashed == refusals(c, "home--0000000000000000"), who
        assert not [r for r in hashed if jane in r[3] or "home/" in r[3]], hashed
    # Raw, unsigned: the same bytes whoever's home it is.
    for path in ("x", "", "?list-type=2"):
        erin = curl(f"{gw.url}/home-erin/{path}")
        nobody = curl(f"{gw.url}/home-nosuchuser/{path}")
        assert (erin[0], erin[1].replace(b"home-erin", b"B")) == (
            nobody[0],
            nobody[1].replace(b"home-nosuchuser", b"B"),
        )


def test_a_share_inside_a_home_still_opens_that_home(gw: Gateway) -> None:
    admin = client(gw.url, gw.admin)
    admin.put_object(Bucket="home-erin", Key="open/a.txt", Body=b"for bob")
    gw.zone.ok("acl", "set", f"/{ZONE}/home/erin/open", "bob", "read")
    bob = client(gw.url, gw.bob)
    assert bob.get_object(Bucket="home-erin", Key="open/a.txt")["Body"].read() == b"for bob"
    status, code = error_of(bob.get_object, Bucket="home-erin", Key="closed.txt")
    assert (status, code) == (403, "AccessDenied")
    gw.zone.ok("acl", "set", f"/{ZONE}/home/erin/open", "bob", "none")
    assert refusals(bob, "home-erin") == refusals(bob, "home-nosuchuser")


# -- signatures and expiries as s3s reads them -----------------------------------------------


def test_a_presigned_expiry_spelled_with_escapes_is_still_read(gw: Gateway) -> None:
    admin = client(gw.url, gw.admin)
    admin.put_object(Bucket="home-admin", Key="long.txt", Body=b"not for a century")
    signer = client(gw.url, gw.admin, signature_version="s3v4")
    century = 100 * 365 * 24 * 3600
    url = signer.generate_presigned_url(
        "get_object", Params={"Bucket": "home-admin", "Key": "long.txt"}, ExpiresIn=century
    )
    assert f"X-Amz-Expires={century}" in url
    for spelled in ("X-Amz-Expire%73=", "X-Amz-E%78pires=", "%58-Amz-Expires="):
        status, body = curl(url.replace("X-Amz-Expires=", spelled))
        assert (status, xml_error(body)[0]) == (400, "AuthorizationQueryParametersError"), (spelled, body)
    # A week, however spelled, is fine.
    week = signer.generate_presigned_url(
        "get_object", Params={"Bucket": "home-admin", "Key": "long.txt"}, ExpiresIn=7 * 86400
    )
    assert curl(week.replace("X-Amz-Expires=", "X-Amz-Expire%73=")) == (200, b"not for a century")


def test_sigv2_presigned_urls_with_escaped_names_are_refused(gw: Gateway) -> None:
    admin = client(gw.url, gw.admin)
    admin.put_object(Bucket="home-admin", Key="v2.txt", Body=b"kept")
    v2 = client(gw.url, gw.admin, signature_version="s3")
    get = v2.generate_presigned_url("get_object", Params={"Bucket": "home-admin", "Key": "v2.txt"}, ExpiresIn=3600)
    put = v2.generate_presigned_url("put_object", Params={"Bucket": "home-admin", "Key": "planted.txt"}, ExpiresIn=3600)
    assert "AWSAccessKeyId=" in get and "Signature=" in get
    for old, new in (
        ("AWSAccessKeyId=", "AWSAccessKeyI%64="),
        ("Signature=", "Signatur%65="),
        ("AWSAccessKeyId=", "AWS%41ccessKeyId="),
    ):
        status, body = curl(get.replace(old, new))
        assert (status, xml_error(body)[0]) == (403, "AccessDenied"), (new, body)
        assert b"signature version 2" in body, body
        status, body = curl("-X", "PUT", "-H", "Content-Type:", "--data-binary", "planted", put.replace(old, new))
        assert (status, xml_error(body)[0]) == (403, "AccessDenied"), (new, body)
    # The same in a header: a V2 Authorization is refused whatever else the request holds.
    status, body = curl(
        "-H", "Authorization: AWS " + gw.admin.access_key + ":c2lnbmF0dXJl", f"{gw.url}/home-admin/v2.txt"
    )
    assert (status, xml_error(body)[0]) == (403, "AccessDenied"), body
    assert missing(admin, "home-admin", "planted.txt")


def test_browser_form_uploads_are_refused_before_they_are_read(gw: Gateway, tmp_path: pathlib.Path) -> None:
    f = tmp_path / "form.bin"
    f.write_bytes(payload(MiB))
    for fields in ([], ["-F", "Signature=c2ln", "-F", "AWSAccessKeyId=" + gw.admin.access_key, "-F", "Policy=e30="]):
        status, body = curl("-F", "key=posted.bin", *fields, "-F", f"file=@{f}", f"{gw.url}/home-admin")
        assert status in (403, 501) and xml_error(body)[0] in ("AccessDenied", "NotImplemented"), body
    assert missing(client(gw.url, gw.admin), "home-admin", "posted.bin")


# -- multipart completion, checked in S3's order ----------------------------------------------


def test_parts_out_of_order_are_invalid_part_order_first(gw: Gateway) -> None:
    s3 = client(gw.url, gw.admin)
    key = "order.bin"
    up = s3.create_multipart_upload(Bucket="home-admin", Key=key)["UploadId"]
    etags = {
        n: s3.upload_part(Bucket="home-admin", Key=key, UploadId=up, PartNumber=n, Body=payload(1024, n))["ETag"]
        for n in (1, 2)
    }
    # Both parts are too small to be anything but last, and the list is out of order: S3
    # and MinIO answer the order.
    parts = [{"PartNumber": n, "ETag": etags[n]} for n in (2, 1)]
    err = error_of(
        s3.complete_multipart_upload, Bucket="home-admin", Key=key, UploadId=up, MultipartUpload={"Parts": parts}
    )
    assert err == (400, "InvalidPartOrder"), err
    parts = [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2)]
    err = error_of(
        s3.complete_multipart_upload, Bucket="home-admin", Key=key, UploadId=up, MultipartUpload={"Parts": parts}
    )
    assert err == (400, "EntityTooSmall"), err
    # A list of 10,000 parts not uploaded is answered as any other: the first is missing.
    many = [{"PartNumber": n, "ETag": '"00000000000000000000000000000000"'} for n in range(1, 10_001)]
    err = error_of(
        s3.complete_multipart_upload, Bucket="home-admin", Key=key, UploadId=up, MultipartUpload={"Parts": many}
    )
    assert err == (400, "InvalidPart"), err
    s3.abort_multipart_upload(Bucket="home-admin", Key=key, UploadId=up)
    assert missing(s3, "home-admin", key)


# -- bounds a user cannot push ----------------------------------------------------------------


def test_a_user_holds_a_bounded_number_of_access_keys(gw: Gateway) -> None:
    gw.zone.ok("user", "add", "keyhoarder")
    bound = 32
    for _ in range(bound):
        gw.zone.ok("s3", "key", "create", "--user", "keyhoarder")
    r = gw.zone.weft("s3", "key", "create", "--user", "keyhoarder")
    assert r.returncode == 1 and f"the most a user may ({bound})" in r.stderr, r.stderr
    keys = gw.zone.json("s3", "key", "ls", "--user", "keyhoarder")
    assert len(keys) == bound
    gw.zone.ok("s3", "key", "rm", keys[0]["access_key"])
    gw.zone.ok("s3", "key", "create", "--user", "keyhoarder")
