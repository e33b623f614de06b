"""Metadata extractors against real files made by each format's own library (mrcfile,
tifffile, astropy, netCDF4, h5py through the documented plugin), on a zone whose resource
is a MinIO bucket, so every header is read with ranged GETs; and against truncated and
hostile headers, which must fail with a clear error and change nothing."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import mrcfile
import netCDF4
import numpy as np
import pytest
import tifffile
from astropy.io import fits
from zonelib import Minio, Zone

REPO = pathlib.Path(__file__).resolve().parents[2]
PLUGIN = REPO / "docs" / "extract" / "h5meta.py"
KEY, SECRET = "weft-extract", "weft-extract-secret"


class ExtractZone(Zone):
    def ok(self, *args: str) -> str:
        r = self.weft(*args)
        assert r.returncode == 0, f"weft {' '.join(args)}: {r.stderr}"
        return r.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))

    def meta(self, path: str) -> dict[str, tuple[str, str]]:
        """The object's metadata: attribute → (value, unit) (one value per attribute)."""
        return {a["attr"]: (a["value"], a["unit"]) for a in self.json("meta", "ls", path)}

    def read_bytes(self) -> float:
        """Bytes the zone has read from its resources, from its metrics."""
        req = urllib.request.Request(f"{self.url}/metrics", headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req) as r:
            text = r.read().decode()
        return sum(float(m) for m in re.findall(r"^weft_resource_read_bytes_total\{[^}]*\} (\S+)$", text, re.M))


@pytest.fixture(scope="module")
def xz(zone_root: pathlib.Path, isolated_config: pathlib.Path) -> Iterator[ExtractZone]:
    """A zone storing in MinIO, with the documented h5py plugin named in its configuration."""
    minio = Minio(zone_root / "extract-minio", KEY, SECRET)
    s3 = boto3.session.Session().client(
        "s3", endpoint_url=minio.url, region_name="us-east-1", aws_access_key_id=KEY, aws_secret_access_key=SECRET
    )
    s3.create_bucket(Bucket="objects")
    config = zone_root / "extract.toml"
    config.write_text(
        minio.resource_toml("objects")
        + f"""
[[extract.plugins]]
name = "hdf5"
formats = ["hdf5"]
command = [{json.dumps(sys.executable)}, {json.dumps(str(PLUGIN))}]
timeout = 60
"""
    )
    z = ExtractZone("x", zone_root / "x-data", args=["--config", str(config)])
    z.run()
    yield z
    z.stop()
    minio.stop()


_n = iter(range(1000))


@pytest.fixture
def coll(xz: ExtractZone) -> str:
    path = f"/x/home/admin/e{next(_n)}"
    xz.ok("mkdir", "-p", path)
    return path


def make_files(d: pathlib.Path) -> dict[str, pathlib.Path]:
    """One real file per format, as instruments and their software write them."""
    d.mkdir(parents=True, exist_ok=True)
    files = {}
    # A 20-frame movie of 512 × 384 float32 (15 MiB), 0.83 Å pixels, an FEI1 extended
    # header, as EPU writes them.
    files["mrc"] = d / "movie_0001.mrcs"
    with mrcfile.new(files["mrc"], overwrite=True) as m:
        m.set_data(np.zeros((20, 384, 512), dtype=np.float32))
        m.set_image_stack()
        m.voxel_size = 0.83
        m.set_extended_header(np.zeros(16, dtype=np.int32))
        m.header.exttyp = b"FEI1"
        m.header.label[0] = b"Krios G4 EPU"
        m.header.nlabl = 1
    files["tiff"] = d / "frame_0001.tif"
    pages = np.zeros((4, 256, 320), dtype=np.uint16)
    tifffile.imwrite(
        files["tiff"], pages, description="SerialEM frame stack", resolution=(2.5, 2.5), photometric="minisblack"
    )
    files["fits"] = d / "m31.fits"
    hdu = fits.PrimaryHDU(np.zeros((30, 40), dtype=np.int16))
    hdu.header["EXPTIME"] = (120.5, "[s] exposure time")
    hdu.header["OBJECT"] = "M31"
    hdu.header["TELESCOP"] = "OHP 1.2m"
    hdu.writeto(files["fits"], overwrite=True)
    files["netcdf"] = d / "era5.nc"
    with netCDF4.Dataset(files["netcdf"], "w", format="NETCDF3_64BIT_OFFSET") as nc:
        nc.title = "2 m temperature"
        nc.createDimension("time", None)
        nc.createDimension("lat", 3)
        t = nc.createVariable("t2m", "f4", ("time", "lat"))
        t.units = "K"
        t[0:2, :] = np.full((2, 3), 280.0)
    files["mdoc"] = d / "frame_0001.tif.mdoc"
    files["mdoc"].write_text(
        "PixelSpacing = 0.83\nVoltage = 300\nImageFile = frame_0001.tif\n\n"
        "[T = SerialEM: Digitized on Krios]\n\n[FrameSet = 0]\nTiltAngle = -0.5\nExposureTime = 2.5\n"
    )
    files["hdf5"] = d / "run7.h5"
    import h5py

    with h5py.File(files["hdf5"], "w") as f:
        f.attrs["title"] = "run 7"
        f.attrs["temperature"] = 4.2
        ds = f.create_dataset("detector/counts", data=np.zeros((10, 20), dtype="u2"))
        ds.attrs["units"] = "counts"
    return files


def test_each_format_from_its_own_library(xz: ExtractZone, coll: str, tmp_path: pathlib.Path) -> None:
    files = make_files(tmp_path / "src")
    xz.ok("put", *map(str, files.values()), coll + "/")
    got = {}
    before = xz.read_bytes()
    for fmt, f in files.items():
        x = xz.json("extract", f"{coll}/{f.name}")
        assert x["path"] == f"{coll}/{f.name}" and x["source"] == fmt
        got[fmt] = {a["attr"]: (a["value"], a["unit"]) for a in x["avus"]}
        # What extract answered is what the object now holds.
        assert xz.meta(f"{coll}/{f.name}") == got[fmt]
    # Headers come from ranged reads: a few dozen KiB of the 15 MiB movie and the rest.
    read = xz.read_bytes() - before
    assert read < 1 << 20, f"{read} bytes read to extract {len(files)} headers"
    with mrcfile.open(files["mrc"], header_only=True) as m:
        h = m.header
        assert got["mrc"]["mrc.nx"] == (str(int(h.nx)), "px")
        assert got["mrc"]["mrc.nz"] == ("20", "")
        assert got["mrc"]["mrc.dtype"] == ("float32", "")
        assert got["mrc"]["mrc.pixel_size_x"] == ("0.83", "Å")
        assert float(got["mrc"]["mrc.pixel_size_y"][0]) == pytest.approx(float(m.voxel_size.y), rel=1e-6)
        assert got["mrc"]["mrc.exttyp"] == ("FEI1", "")
        assert got["mrc"]["mrc.nsymbt"] == ("64", "B")
        assert got["mrc"]["mrc.ispg"] == ("0", "")
        assert got["mrc"]["mrc.label"] == ("Krios G4 EPU", "")
    with tifffile.TiffFile(files["tiff"]) as t:
        p = t.pages[0]
        assert got["tiff"]["tiff.width"] == (str(p.imagewidth), "px")
        assert got["tiff"]["tiff.height"] == (str(p.imagelength), "px")
        assert got["tiff"]["tiff.bits"] == (str(p.bitspersample), "")
        assert got["tiff"]["tiff.pages"] == (str(len(t.pages)), "")
        assert got["tiff"]["tiff.sample_format"] == ("uint", "")
        assert got["tiff"]["tiff.x_resolution"] == ("2.5", "px/in")
    assert "SerialEM frame stack" in got["tiff"]["tiff.description"][0]
    assert got["fits"]["fits.exptime"] == ("120.5", "s")
    assert got["fits"]["fits.object"] == ("M31", "")
    assert got["fits"]["fits.naxis1"] == ("40", "")
    assert got["fits"]["fits.bitpix"] == ("16", "")
    assert got["netcdf"]["netcdf.format"] == ("64-bit offset", "")
    assert got["netcdf"]["netcdf.dim.time"] == ("2", "unlimited")
    assert got["netcdf"]["netcdf.attr.title"] == ("2 m temperature", "")
    assert got["netcdf"]["netcdf.var.t2m"] == ("float(time, lat)", "K")
    assert got["mdoc"]["mdoc.pixelspacing"] == ("0.83", "Å")
    assert got["mdoc"]["mdoc.tiltangle"] == ("-0.5", "°")
    assert got["hdf5"]["hdf5.attr.title"] == ("run 7", "")
    assert got["hdf5"]["hdf5.attr.temperature"] == ("4.2", "")
    assert got["hdf5"]["hdf5.var.detector/counts"] == ("uint16[10, 20]", "counts")
    # Searchable by value and by number.
    found = xz.ok("find", coll, "--meta", "mrc.pixel_size_x<0.9", "--meta", "mrc.nz>=20").split()
    assert found == [f"{coll}/{files['mrc'].name}"]
    assert xz.ok("find", coll, "--meta", "fits.exptime>100").split() == [f"{coll}/m31.fits"]
    # Extracting again replaces the values: none doubles.
    again = xz.json("extract", f"{coll}/{files['mrc'].name}")
    assert {a["attr"]: (a["value"], a["unit"]) for a in again["avus"]} == got["mrc"]
    assert len(xz.json("meta", "ls", f"{coll}/{files['mrc'].name}")) == len(got["mrc"])


def truncated_and_hostile(d: pathlib.Path, files: dict[str, pathlib.Path]) -> dict[str, bytes]:
    """Broken versions of the real files: cut short, or with a header field set to what
    an attacker would."""
    out: dict[str, bytes] = {}
    for fmt in ("mrc", "tiff", "fits", "netcdf"):
        data = files[fmt].read_bytes()
        out[f"cut.{files[fmt].name}"] = data[: len(data) // 3 if fmt != "tiff" else 6]
    mrc = bytearray(files["mrc"].read_bytes())
    mrc[92:96] = (2**31 - 1).to_bytes(4, "little")  # an extended header of 2 GiB
    out["huge-ext.mrcs"] = bytes(mrc)
    tif = bytearray(files["tiff"].read_bytes())
    tif[4:8] = (len(tif) + 10_000).to_bytes(4, "little")  # the first directory past the end
    out["wild.tif"] = bytes(tif)
    nc = bytearray(files["netcdf"].read_bytes())
    nc[12:16] = (2**31).to_bytes(4, "big")  # 2^31 dimensions
    out["dims.nc"] = bytes(nc)
    out["binary.tif.mdoc"] = b"PixelSpacing = 1\n\xff\xfe\x00garbage"
    return out


def test_truncated_and_hostile_headers_fail_clearly_and_change_nothing(
    xz: ExtractZone, coll: str, tmp_path: pathlib.Path
) -> None:
    files = make_files(tmp_path / "src")
    broken = truncated_and_hostile(tmp_path, files)
    d = tmp_path / "broken"
    d.mkdir()
    for name, data in broken.items():
        (d / name).write_bytes(data)
        xz.ok("put", str(d / name), f"{coll}/{name}")
        xz.ok("meta", "set", f"{coll}/{name}", "note", "kept")
        r = xz.weft("extract", f"{coll}/{name}")
        assert r.returncode == 1, (name, r.stdout, r.stderr)
        assert "(extract_failed)" in r.stderr and f"{coll}/{name}:" in r.stderr, r.stderr
        # Nothing was added: the object has the metadata it had.
        assert xz.meta(f"{coll}/{name}") == {"note": ("kept", "")}, name
    # A file no extractor knows, and a collection, are refused with their own codes.
    (d / "notes.txt").write_text("hello")
    xz.ok("put", str(d / "notes.txt"), f"{coll}/notes.txt")
    r = xz.weft("extract", f"{coll}/notes.txt", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "unsupported_format", r
    r = xz.weft("extract", coll)
    assert r.returncode == 6 and "(is_a_collection)" in r.stderr, r
    # -r reads what it can, skips what no extractor knows, and names each failure.
    r = xz.weft("extract", "-r", coll, "--json")
    assert r.returncode == 1, r.stderr
    outcomes = {pathlib.PurePosixPath(o["path"]).name: o for o in json.loads(r.stdout)}
    assert "notes.txt" not in outcomes
    assert {n for n, o in outcomes.items() if "error" in o} == set(broken)
    assert all(o["error"]["code"] == "extract_failed" for n, o in outcomes.items() if "error" in o)


def test_a_user_without_write_permission_cannot_extract(xz: ExtractZone, coll: str, tmp_path: pathlib.Path) -> None:
    files = make_files(tmp_path / "src")
    xz.ok("put", str(files["fits"]), f"{coll}/m31.fits")
    xz.ok("user", "add", f"reader{os.getpid()}")
    token = xz.ok("token", "create", "--user", f"reader{os.getpid()}").strip()
    xz.ok("acl", "set", "-r", coll, f"reader{os.getpid()}", "read")
    assert xz.weft("stat", f"{coll}/m31.fits", token=token).returncode == 0
    r = xz.weft("extract", f"{coll}/m31.fits", token=token)
    assert r.returncode == 5 and "(forbidden)" in r.stderr, r
    assert xz.meta(f"{coll}/m31.fits") == {}


def wait_for(check: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.2)


def test_enabled_collection_extracts_what_watch_brings(xz: ExtractZone, coll: str, tmp_path: pathlib.Path) -> None:
    """The README's instrument case: `weft extract enable`, then `weft watch` ingests a
    directory and each object arrives with its header in its metadata."""
    files = make_files(tmp_path / "krios")
    (tmp_path / "krios" / "notes.txt").write_text("not a header")
    (tmp_path / "krios" / "cut.mrc").write_bytes(files["mrc"].read_bytes()[:2000])
    xz.ok("extract", "enable", coll)
    assert xz.meta(coll) == {"weft.extract": ("on", "")}
    r = subprocess.run(
        [xz.binary or os.environ["WEFT_BIN"], "watch", str(tmp_path / "krios"), coll, "--once", "--settle", "0"],
        env={**xz.client_env(), "XDG_STATE_HOME": str(tmp_path / "state")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    movie = f"{coll}/{files['mrc'].name}"
    meta = wait_for(lambda: (m := xz.meta(movie)).get("mrc.nz") and m, "MRC metadata")
    assert meta["mrc.pixel_size_x"] == ("0.83", "Å")
    wait_for(lambda: xz.meta(f"{coll}/frame_0001.tif").get("tiff.pages"), "TIFF metadata")
    wait_for(lambda: xz.meta(f"{coll}/run7.h5").get("hdf5.attr.title"), "the plugin's metadata")
    # The truncated movie has its failure recorded for its owner to find, and no values.
    err = wait_for(lambda: xz.meta(f"{coll}/cut.mrc").get("weft.extract.error"), "a recorded failure")
    assert "truncated" in err[0] and err[1] == "extract_failed"
    assert not any(a.startswith("mrc.") for a in xz.meta(f"{coll}/cut.mrc"))
    assert xz.ok("find", coll, "--meta", "weft.extract.error!=").split() == [f"{coll}/cut.mrc"]
    # What no extractor reads is left alone.
    assert xz.meta(f"{coll}/notes.txt") == {}
    # A fixed file replaces the failure with its values.
    xz.ok("put", "-f", str(files["mrc"]), f"{coll}/cut.mrc")
    fixed = wait_for(lambda: (m := xz.meta(f"{coll}/cut.mrc")).get("mrc.nx") and m, "values of the fixed file")
    assert "weft.extract.error" not in fixed
    # Off again: new objects are not read.
    xz.ok("extract", "disable", coll)
    xz.ok("put", str(files["fits"]), f"{coll}/late.fits")
    time.sleep(3)
    assert xz.meta(f"{coll}/late.fits") == {}


def test_policy_action_extract(xz: ExtractZone, coll: str, tmp_path: pathlib.Path) -> None:
    files = make_files(tmp_path / "src")
    policy = tmp_path / "policy.toml"
    policy.write_text(
        f"""
[[rule]]
name = "fits-headers"
on = "created"
[rule.if]
path = "{coll}/**"
[rule.do]
extract = true
set_meta = ["ingested=yes"]
"""
    )
    xz.ok("policy", "apply", str(policy))
    try:
        xz.ok("put", str(files["fits"]), f"{coll}/m31.fits")
        meta = wait_for(lambda: (m := xz.meta(f"{coll}/m31.fits")).get("fits.exptime") and m, "FITS metadata")
        assert meta["ingested"] == ("yes", "")
        # A rule that asks for extract fails its task on a file it cannot read, visibly.
        (tmp_path / "x.txt").write_text("x")
        xz.ok("put", str(tmp_path / "x.txt"), f"{coll}/x.txt")

        def failed() -> Any:
            rules = xz.json("policy", "status")
            rule = next(r for r in rules if r["rule"] == "fits-headers")
            return [f for f in rule["failures"] if f["path"] == f"{coll}/x.txt"]

        failure = wait_for(failed, "the failed task")[0]
        assert "unsupported_format" in failure["error"] or "no extractor reads" in failure["error"], failure
    finally:
        xz.ok("policy", "rm", "fits-headers")


def test_the_readme_extract_commands_run(zone_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The README's `weft extract` block, in one shell, as a new user would run it against
    a zone named ``weft`` holding a 40-frame movie."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Metadata from file headers: `weft extract`", 1)[1].split("\n### ", 1)[0]
    block = re.findall(r"```sh\n(.*?)```", section, re.S)[0]
    (zone_root / "readme-extract").mkdir()
    z = ExtractZone.start("weft", zone_root / "readme-extract")
    try:
        movie = tmp_path / "movie_0001.mrc"
        with mrcfile.new(movie) as m:
            m.set_data(np.zeros((40, 64, 64), dtype=np.float32))
            m.voxel_size = 0.83
        z.ok("mkdir", "-p", "/weft/home/admin/krios")
        z.ok("put", str(movie), "/weft/home/admin/krios/")
        weft_dir = os.path.dirname(z.binary or os.environ["WEFT_BIN"])
        env = {**z.client_env(), "PATH": f"{weft_dir}:{os.environ['PATH']}"}
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert re.search(r"^mrc\.pixel_size_x +0\.83 +Å$", r.stdout, re.M), r.stdout
        assert r.stdout.rstrip().endswith("/weft/home/admin/krios/movie_0001.mrc"), r.stdout
        assert z.meta("/weft/home/admin/krios") == {"weft.extract": ("on", "")}
    finally:
        z.stop()


def test_a_dataset_sidecar_describes_its_collection(xz: ExtractZone, coll: str, tmp_path: pathlib.Path) -> None:
    """dataset.yaml (or .json) beside the data: its values become `dataset.*` metadata of
    the collection, in an enabled collection as soon as it arrives, and by hand; a
    broken one changes nothing; a user who may change the file but not the collection
    may not extract it."""
    session = f"{coll}/session1"
    xz.ok("mkdir", "-p", session)
    xz.ok("extract", "enable", coll)
    (tmp_path / "dataset.yaml").write_text(
        "title: Apoferritin, 300 kV\noperator: facility\nsample:\n  name: apoferritin\n  grid: 12\n"
        "keywords: [cryo-em, benchmark]\n"
    )
    xz.ok("put", str(tmp_path / "dataset.yaml"), f"{session}/dataset.yaml")
    meta = wait_for(lambda: (m := xz.meta(session)).get("dataset.title") and m, "the sidecar's values")
    assert meta["dataset.title"] == ("Apoferritin, 300 kV", "")
    assert meta["dataset.sample.grid"] == ("12", "")
    assert {a["value"] for a in xz.json("meta", "ls", session) if a["attr"] == "dataset.keywords"} == {
        "cryo-em",
        "benchmark",
    }
    assert xz.meta(f"{session}/dataset.yaml") == {}
    found = xz.ok("find", coll, "--kind", "collection", "--meta", "dataset.sample.name=apoferritin").split()
    assert found == [session]
    # JSON by hand replaces the values: nothing of the YAML stays.
    (tmp_path / "dataset.json").write_text('{"title": "second", "sample": {"name": "x"}}')
    xz.ok("put", str(tmp_path / "dataset.json"), f"{coll}/dataset.json")
    xz.ok("extract", "disable", coll)
    x = xz.json("extract", f"{coll}/dataset.json")
    assert x["path"] == coll and x["source"] == "dataset"
    assert {k: v for k, v in xz.meta(coll).items() if k.startswith("dataset.")} == {
        "dataset.title": ("second", ""),
        "dataset.sample.name": ("x", ""),
    }
    # Broken: a list at the top, and a hostile nesting; nothing changes.
    for bad in ("- a\n- b\n", "[" * 50_000):
        (tmp_path / "dataset.json").write_text(bad)
        xz.ok("put", "-f", str(tmp_path / "dataset.json"), f"{coll}/dataset.json")
        r = xz.weft("extract", f"{coll}/dataset.json")
        assert r.returncode == 1 and "(extract_failed)" in r.stderr, r.stderr
        assert xz.meta(coll)["dataset.title"] == ("second", "")
    # Write on the sidecar alone is not enough to change its collection.
    user = f"writer{os.getpid()}"
    xz.ok("user", "add", user)
    token = xz.ok("token", "create", "--user", user).strip()
    (tmp_path / "dataset.json").write_text('{"title": "taken over"}')
    xz.ok("put", "-f", str(tmp_path / "dataset.json"), f"{coll}/dataset.json")
    xz.ok("acl", "set", f"{coll}/dataset.json", user, "write")
    r = xz.weft("extract", f"{coll}/dataset.json", token=token)
    assert r.returncode == 5 and "(forbidden)" in r.stderr, r
    assert xz.meta(coll)["dataset.title"] == ("second", "")


def test_the_python_sdk_extracts_with_the_same_errors(xz: ExtractZone, coll: str, tmp_path: pathlib.Path) -> None:
    import weft

    c = weft.Client(xz.url, xz.token, progress=False)
    files = make_files(tmp_path / "src")
    c.put(files["fits"], f"{coll}/m31.fits")
    x = c.extract(f"{coll}/m31.fits")
    assert x["source"] == "fits" and {"attr": "fits.exptime", "value": "120.5", "unit": "s"} in x["avus"]
    (tmp_path / "notes.txt").write_text("hello")
    c.put(tmp_path / "notes.txt", f"{coll}/notes.txt")
    with pytest.raises(weft.UnsupportedFormat):
        c.extract(f"{coll}/notes.txt")
    (tmp_path / "cut.fits").write_bytes(files["fits"].read_bytes()[:3000])
    c.put(tmp_path / "cut.fits", f"{coll}/cut.fits")
    with pytest.raises(weft.ExtractFailed, match="truncated"):
        c.extract(f"{coll}/cut.fits")
    assert c.meta(f"{coll}/cut.fits") == []
