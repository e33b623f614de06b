"""What fsspec's users rely on beyond the abstract suite: listings and globs, cached
metadata invalidated on writes, ranged and batched reads, server-side copy and move,
checksums, and the file system found by protocol and storage_options."""

from __future__ import annotations

import fsspec
import pytest

import weft
from weft.fs import WeftFileSystem


@pytest.fixture
def fs(zone) -> WeftFileSystem:  # type: ignore[no-untyped-def]
    return WeftFileSystem(zone.url, zone.token, skip_instance_cache=True)


class Counting:
    """The native client, counting the calls made through it."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        self.calls.append(name)
        return getattr(self.inner, name)


def test_found_by_protocol_with_storage_options(zone, home) -> None:
    fs = fsspec.filesystem("weft", endpoint_url=zone.url, token=zone.token)
    assert isinstance(fs, WeftFileSystem)
    url = f"weft://t{home.removeprefix('/t')}/x.txt"
    with fsspec.open(url, "wt", endpoint_url=zone.url, token=zone.token) as f:
        f.write("hello")
    with fsspec.open(url, "rt", endpoint_url=zone.url, token=zone.token) as f:
        assert f.read() == "hello"
    assert WeftFileSystem._strip_protocol(url) == f"{home}/x.txt"
    assert fs.unstrip_protocol(f"{home}/x.txt") == url


def test_listing_glob_walk_find_and_info(fs, home) -> None:
    for p in ["a/1.csv", "a/2.csv", "a/b/3.csv", "a/b/4.nc", "c.txt"]:
        fs.pipe(f"{home}/{p}", p.encode())
    fs.mkdir(f"{home}/empty")
    assert fs.ls(home, detail=False) == [f"{home}/a", f"{home}/c.txt", f"{home}/empty"]
    entry = fs.ls(home)[1]
    assert entry["type"] == "file" and entry["size"] == 5 and entry["checksum"].startswith("blake3:")
    assert fs.glob(f"{home}/a/*.csv") == [f"{home}/a/1.csv", f"{home}/a/2.csv"]
    assert fs.glob(f"{home}/**/*.csv") == [f"{home}/a/1.csv", f"{home}/a/2.csv", f"{home}/a/b/3.csv"]
    assert fs.find(f"{home}/a") == [f"{home}/a/1.csv", f"{home}/a/2.csv", f"{home}/a/b/3.csv", f"{home}/a/b/4.nc"]
    walked = {root: (sorted(dirs), sorted(files)) for root, dirs, files in fs.walk(f"{home}/a")}
    assert walked == {f"{home}/a": (["b"], ["1.csv", "2.csv"]), f"{home}/a/b": ([], ["3.csv", "4.nc"])}
    assert fs.info(f"{home}/a")["type"] == "directory"
    assert fs.isfile(f"{home}/c.txt") and fs.isdir(f"{home}/empty")
    assert fs.du(f"{home}/a") == sum(len(p) for p in ["a/1.csv", "a/2.csv", "a/b/3.csv", "a/b/4.nc"])
    with pytest.raises(FileNotFoundError):
        fs.info(f"{home}/nope")
    assert fs.exists(f"{home}/c.txt") and not fs.exists(f"{home}/nope")
    assert fs.modified(f"{home}/c.txt").year >= 2026


def test_listings_are_cached_and_writes_through_the_instance_invalidate_them(fs, client, home) -> None:
    fs.pipe(f"{home}/one", b"1")
    assert fs.ls(home, detail=False) == [f"{home}/one"]
    # A write by someone else is seen after refresh (or invalidate_cache), not before.
    client.put(b"2", f"{home}/two")
    assert fs.ls(home, detail=False) == [f"{home}/one"]
    assert fs.ls(home, detail=False, refresh=True) == [f"{home}/one", f"{home}/two"]
    counting = Counting(fs._native)
    fs._native = counting
    fs.client._native = counting
    for _ in range(5):
        fs.ls(home)
        fs.info(f"{home}/one")
    assert counting.calls == [], "listing and info came from the cache"
    # Writes through this instance are seen at once.
    fs.pipe(f"{home}/three", b"3")
    fs.mv(f"{home}/one", f"{home}/uno")
    fs.rm(f"{home}/two")
    assert fs.ls(home, detail=False) == [f"{home}/three", f"{home}/uno"]
    fs.invalidate_cache()
    assert fs.ls(home, detail=False) == [f"{home}/three", f"{home}/uno"]


def test_ranges_and_many_paths_in_one_batch(fs, home) -> None:
    data = bytes(range(256)) * 4096
    fs.pipe(f"{home}/big", data)
    assert fs.cat_file(f"{home}/big", 1000, 1010) == data[1000:1010]
    assert fs.cat_file(f"{home}/big", -10) == data[-10:]
    assert fs.cat_file(f"{home}/big", 5, 5) == b""
    # Past the end (up to 1 TiB): what there is, never an error or a flood of requests.
    assert fs.cat_file(f"{home}/big", len(data) - 3, 1 << 40) == data[-3:]
    assert fs.cat_file(f"{home}/big", 1 << 40, (1 << 40) + 5) == b""
    assert fs.read_block(f"{home}/big", 100, 50) == data[100:150]
    paths = [f"{home}/small/f{i}" for i in range(200)]
    fs.pipe({p: p.encode() for p in paths})
    fs.invalidate_cache()
    counting = Counting(fs._native)
    fs._native = counting
    fs.client._native = counting
    got = fs.cat(paths)
    assert got == {p: p.encode() for p in paths}
    # One batch: no listing, no stat per path.
    assert counting.calls == ["read_many"], counting.calls
    # Missing ones: raised, left out, or returned as the exception.
    with pytest.raises(weft.NotFound):
        fs.cat([paths[0], f"{home}/missing"])
    assert fs.cat([paths[0], f"{home}/missing"], on_error="omit") == {paths[0]: paths[0].encode()}
    both = fs.cat([paths[0], f"{home}/missing"], on_error="return")
    assert isinstance(both[f"{home}/missing"], FileNotFoundError)
    assert fs.cat(f"{home}/small/f1*") == {p: p.encode() for p in paths if p.startswith(f"{home}/small/f1")}


def test_server_side_copy_and_move_and_checksums(fs, client, home) -> None:
    fs.pipe(f"{home}/src", b"payload")
    counting = Counting(fs._native)
    fs._native = counting
    fs.client._native = counting
    fs.copy(f"{home}/src", f"{home}/dst")
    fs.mv(f"{home}/dst", f"{home}/moved")
    # No bytes came through here: only catalog calls, no reads or writes of data.
    assert set(counting.calls) == {"call"}, counting.calls
    assert client.read_bytes(f"{home}/moved") == b"payload"
    assert fs.ukey(f"{home}/moved") == fs.ukey(f"{home}/src") == client.checksum(f"{home}/src").split(":")[1]
    assert fs.checksum(f"{home}/src") == int(fs.ukey(f"{home}/src")[:16], 16)
    fs.pipe(f"{home}/src", b"changed")
    assert fs.ukey(f"{home}/src") != fs.ukey(f"{home}/moved")
    with pytest.raises(IsADirectoryError):
        fs.ukey(home)
    fs.mkdir(f"{home}/tree/sub")
    fs.pipe(f"{home}/tree/sub/f", b"f")
    fs.mv(f"{home}/tree", f"{home}/tree2", recursive=True)
    assert fs.cat(f"{home}/tree2/sub/f") == b"f" and not fs.exists(f"{home}/tree")
    fs.rm(f"{home}/tree2", recursive=True)
    assert not fs.exists(f"{home}/tree2")


def test_moves_replace_exclusive_creates_do_not_and_reads_see_the_latest(fs, zone, home) -> None:
    fs.pipe(f"{home}/a", b"new")
    fs.pipe(f"{home}/b", b"old")
    fs.mv(f"{home}/a", f"{home}/b")
    assert fs.cat(f"{home}/b") == b"new" and not fs.exists(f"{home}/a")
    with fs.open(f"{home}/x", "xb") as f:
        f.write(b"1")
    with pytest.raises(FileExistsError):
        fs.open(f"{home}/x", "xb")
    with pytest.raises(FileExistsError):
        fs.pipe_file(f"{home}/x", b"2", mode="create")
    assert fs.cat(f"{home}/x") == b"1"
    # A listing cached here, then the object rewritten by someone else: a read opened
    # afterwards gets all of the new bytes, not as many as the cached size says.
    assert fs.ls(home, detail=True)[0]["size"] == 3
    other = WeftFileSystem(zone.url, zone.token, skip_instance_cache=True)
    other.pipe(f"{home}/b", b"a longer value")
    with fs.open(f"{home}/b", "rb") as f:
        assert f.read() == b"a longer value"
    assert fs.cat_file(f"{home}/b", -5) == b"value"


@pytest.mark.parametrize("bad", ["weft://t/home/../etc/x", "weft://t/home/a\x00b"])
def test_hostile_urls_are_refused(fs, bad: str) -> None:
    with pytest.raises(ValueError):
        fs.cat_file(bad)
    with pytest.raises(ValueError):
        fs.pipe_file(bad, b"x")


def test_a_transaction_makes_its_files_visible_together_or_not_at_all(fs, home) -> None:
    with fs.transaction:
        fs.pipe(f"{home}/t1", b"1")  # pipe is immediate, as in fsspec
        with fs.open(f"{home}/t2", "wb") as f:
            f.write(b"2" * (40 << 20))  # past the memory buffer: spooled
        with fs.open(f"{home}/t3", "wb") as f:
            f.write(b"3")
        assert not fs.exists(f"{home}/t2") and not fs.exists(f"{home}/t3")
    assert fs.cat(f"{home}/t3") == b"3" and fs.info(f"{home}/t2")["size"] == 40 << 20
    with pytest.raises(RuntimeError):
        with fs.transaction:
            with fs.open(f"{home}/t4", "wb") as f:
                f.write(b"4")
            raise RuntimeError("abandon")
    assert not fs.exists(f"{home}/t4")
