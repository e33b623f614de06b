"""weft.Client against a real zone: data, namespace, metadata, access, transfers, replicas,
PIDs, QoS, policies, DataCite and the settings it shares with the CLI."""

from __future__ import annotations

import hashlib
import os
import subprocess
from typing import Any

import pytest

import weft
from weft import _weft


def payload(n: int, seed: int = 0) -> bytes:
    """``n`` pseudo-random bytes (not compressible, different per seed)."""
    out = bytearray()
    block = hashlib.sha256(seed.to_bytes(8, "little")).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:n])


def test_every_stable_code_has_its_exception_class() -> None:
    for code in _weft.ERROR_CODES:
        cls = weft.BY_CODE[code]
        assert cls.code == code, code
        assert issubclass(cls, weft.Error)
        e = weft.from_native(code, "m", 404)
        assert isinstance(e, cls) and e.code == code and e.message == "m" and e.status == 404
    assert issubclass(weft.NotFound, FileNotFoundError)
    assert issubclass(weft.Forbidden, PermissionError)
    assert issubclass(weft.AlreadyExists, FileExistsError)
    assert issubclass(weft.IsACollection, IsADirectoryError)
    assert issubclass(weft.Unavailable, ConnectionError)
    assert issubclass(weft.InvalidPath, ValueError)
    assert str(weft.NotFound("gone", code="not_found")) == "gone"


def test_files_large_and_small_round_trip_verified(client, home, tmp_path) -> None:
    big = payload(40 << 20, 1)  # over one 32 MiB piece: parallel pieces, hashed
    (tmp_path / "big.bin").write_bytes(big)
    (tmp_path / "small.txt").write_bytes(b"small\n")
    node = client.put(tmp_path / "big.bin", f"{home}/big.bin")
    assert node.size == len(big) and node.checksum.startswith("blake3:")
    assert not node.is_collection
    client.put(str(tmp_path / "small.txt"), f"{home}/small.txt")

    moved = client.get(f"{home}/big.bin", tmp_path / "back.bin")
    assert moved.files == 1 and moved.bytes == len(big)
    assert (tmp_path / "back.bin").read_bytes() == big
    # An existing directory receives the object under its name, as with cp.
    out = tmp_path / "out"
    out.mkdir()
    client.get(f"{home}/small.txt", out)
    assert (out / "small.txt").read_bytes() == b"small\n"
    assert client.read_bytes(f"{home}/big.bin", 1000, 1010) == big[1000:1010]
    assert client.read_bytes(f"{home}/big.bin", -5) == big[-5:]
    assert client.checksum(f"{home}/big.bin") == node.checksum
    assert client.checksum(f"{home}/big.bin", verify=True) == node.checksum

    # Replacing needs overwrite=True.
    with pytest.raises(weft.AlreadyExists, match="exists"):
        client.put(b"other", f"{home}/small.txt")
    client.put(b"other", f"{home}/small.txt", overwrite=True)
    assert client.read_bytes(f"{home}/small.txt") == b"other"


def test_trees_round_trip_with_empty_directories(client, home, tmp_path) -> None:
    src = tmp_path / "tree"
    (src / "a" / "b").mkdir(parents=True)
    (src / "empty").mkdir()
    for i in range(120):
        (src / "a" / f"f{i}.dat").write_bytes(payload(1000 + i, i))
    (src / "a" / "b" / "deep.txt").write_bytes(b"deep")
    (src / "zero").write_bytes(b"")
    (src / "zero2").write_bytes(b"")
    client.mkdir(f"{home}/into")
    node = client.put(src, f"{home}/into", recursive=True)
    # An existing collection receives the tree under its name.
    assert node.path == f"{home}/into/tree" and node.is_collection
    names = sorted(n.name for n in client.ls(node.path))
    assert names == ["a", "empty", "zero", "zero2"]

    with pytest.raises(weft.IsACollection, match="recursive=True"):
        client.put(src, f"{home}/again")
    with pytest.raises(weft.IsACollection, match="recursive=True"):
        client.get(node.path, tmp_path / "x")

    moved = client.get(node.path, tmp_path / "back", recursive=True)
    assert moved.files == 123
    back = tmp_path / "back"
    for p in src.rglob("*"):
        q = back / p.relative_to(src)
        assert q.exists(), q
        if p.is_file():
            assert q.read_bytes() == p.read_bytes(), q

    moved = client.put_many([(src / "a" / "f1.dat", f"{home}/p1"), (src / "a" / "f2.dat", f"{home}/p2")])
    assert moved.files == 2
    moved = client.get_many([(f"{home}/p1", tmp_path / "q1"), (f"{home}/p2", tmp_path / "q2")])
    assert (tmp_path / "q2").read_bytes() == (src / "a" / "f2.dat").read_bytes()
    got = client.read_many([f"{home}/p1", f"{home}/nope", f"{home}/p2"])
    assert got[0] == (src / "a" / "f1.dat").read_bytes()
    assert isinstance(got[1], weft.NotFound)
    assert got[2] == (src / "a" / "f2.dat").read_bytes()


def test_namespace_and_find(client, home) -> None:
    client.mkdir(f"{home}/runs/2026", parents=True)
    with pytest.raises(weft.NotFound):
        client.mkdir(f"{home}/x/y", parents=False)
    client.put(b"1", f"{home}/runs/2026/a.nc")
    client.put(b"22", f"{home}/runs/2026/b.csv")
    client.meta_set(f"{home}/runs/2026/a.nc", "experiment", "krios")
    client.meta_add(f"{home}/runs/2026/a.nc", "temperature", 4, "K")
    found = client.find(home, name="*.nc")
    assert [n.path for n in found] == [f"{home}/runs/2026/a.nc"]
    found = client.find(home, meta=["experiment=krios", "temperature<10"])
    assert [n.name for n in found] == ["a.nc"]
    assert {n.name for n in client.find(home, kind="collection")} >= {"runs", "2026"}

    st = client.stat(f"{home}/runs/2026/b.csv")
    assert (st.size, st.kind, st.owner) == (2, "object", "admin")
    assert client.exists(st.path) and not client.exists(f"{home}/nope")
    client.mv(st.path, f"{home}/b.csv")
    assert not client.exists(st.path)
    client.cp(f"{home}/b.csv", f"{home}/c.csv")
    assert client.read_bytes(f"{home}/c.csv") == b"22"
    with pytest.raises(weft.CollectionNotEmpty):
        client.rm(f"{home}/runs")
    client.rm(f"{home}/runs", recursive=True)
    assert not client.exists(f"{home}/runs")

    # Relative paths are below the home collection, as in the CLI.
    rel = home.removeprefix(client.home + "/")
    assert client.stat(f"{rel}/c.csv").path == f"{home}/c.csv"
    assert client.path(f"{rel}/../{rel}/./c.csv") == f"{home}/c.csv"


def test_metadata_acls_users_groups_tokens(client, zone, home) -> None:
    p = f"{home}/shared.txt"
    client.put(b"data", p)
    client.meta_update(p, {"a": 1, "b": "two"})
    client.meta_rm(p, "a")
    assert [(m["attr"], m["value"]) for m in client.meta(p)] == [("b", "two")]

    name = f"bob{os.getpid()}{abs(hash(home)) % 10000}"
    client.admin.add_user(name)
    assert name in [u["name"] for u in client.admin.users()]
    group = f"g{name}"
    client.admin.add_group(group)
    client.admin.add_member(group, name)
    assert [m["name"] for m in client.admin.members(group)] == [name]
    token = client.admin.create_token(user=name, label="sdk test")
    bob = weft.Client(zone.url, token, progress=False)
    assert bob.whoami()["user"] == name

    with pytest.raises(weft.Forbidden):
        bob.read_bytes(p)
    with pytest.raises(weft.Forbidden):
        bob.admin.add_user(f"x{name}")
    client.set_acl(p, group, "read")
    assert bob.read_bytes(p) == b"data"
    assert any(a["principal"] == group for a in client.acl(p))
    with pytest.raises(weft.Forbidden):
        bob.put(b"x", p, overwrite=True)
    client.admin.rm_member(group, name)
    with pytest.raises(weft.Forbidden):
        bob.read_bytes(p)
    client.admin.rm_group(group)


def test_import_in_place_registers_files_where_they_are(client, zone, home) -> None:
    root = zone.data_dir.parent / f"hpc-{os.getpid()}-{abs(hash(home)) % 10000}"
    res = root.name
    out = zone.weft("resource", "add", res, "--kind", "fs", "--root", str(root))
    assert out.returncode == 0, out.stderr
    run = root / "projects" / "run1"
    (run / "out").mkdir(parents=True)
    (run / "a.nc").write_bytes(payload(70_000, 1))
    (run / "out" / "b.txt").write_bytes(b"b\n")
    (run / "out" / "link").symlink_to("/etc/passwd")

    report = client.import_in_place(res, "projects/run1", f"{home}/run1")
    assert (report["registered"], report["refused"]) == (2, 1), report
    assert report["refusals"][0]["path"] == "projects/run1/out/link"
    assert "symbolic link" in report["refusals"][0]["why"]
    assert client.read_bytes(f"{home}/run1/a.nc") == payload(70_000, 1)
    assert client.stat(f"{home}/run1/out/b.txt").size == 2
    assert not client.exists(f"{home}/run1/out/link")
    again = client.import_in_place(res, "projects/run1", f"{home}/run1")
    assert (again["registered"], again["unchanged"]) == (0, 2), again
    with pytest.raises(weft.InvalidArgument, match="weft keeps its own files"):
        client.import_in_place(res, "data", f"{home}/x")
    with pytest.raises(weft.NotFound):
        client.import_in_place(res, "projects/none", f"{home}/x")


def test_managed_transfers_replicas_pids_qos_policies_datacite(client, zone, home, tmp_path) -> None:
    # A second resource to replicate to.
    root = zone.data_dir.parent / f"fast-{os.getpid()}-{abs(hash(home)) % 10000}"
    res = root.name
    out = zone.weft("resource", "add", res, "--kind", "fs", "--root", str(root), "--tier", "ssd")
    assert out.returncode == 0, out.stderr
    src = tmp_path / "t"
    src.mkdir()
    for i in range(5):
        (src / f"f{i}").write_bytes(payload(100_000, i))
    client.put(src, f"{home}/src", recursive=True)

    seen: list[str] = []
    t = client.transfers.start(f"{home}/src", f"{home}/dst", recursive=True)
    done = client.transfers.wait(t["id"], callback=lambda s: seen.append(s["state"]), poll=0.1)
    assert done["state"] == "succeeded", done
    assert done["files_done"] == 5 and done["bytes_done"] == 500_000
    assert seen[-1] == "succeeded"
    assert client.read_bytes(f"{home}/dst/f3") == payload(100_000, 3)
    assert t["id"] in [x["id"] for x in client.transfers.ls()]
    assert {f["state"] for f in client.transfers.files(t["id"])} == {"done"}
    assert client.transfers.show(t["id"])["state"] == "succeeded"
    with pytest.raises(weft.Conflict, match="already ended"):
        client.transfers.cancel(t["id"])
    with pytest.raises(weft.NotFound):
        client.transfers.show("no-such-transfer")

    r = client.replicate(f"{home}/src/f0", f"t:{res}")
    assert client.transfers.wait(r["id"], poll=0.1)["state"] == "succeeded"
    replicas = client.stat(f"{home}/src/f0").replicas
    assert sorted(x["resource"] for x in replicas) == sorted(["default", res])
    client.trim(f"{home}/src/f0", f"t:{res}")
    assert [x["resource"] for x in client.stat(f"{home}/src/f0").replicas] == ["default"]

    pid = client.pids.mint(f"{home}/src/f1")
    assert client.pids.resolve(pid["pid"])["path"] == f"{home}/src/f1"
    with pytest.raises(weft.InvalidArgument, match="datacite.title"):
        client.datacite(f"{home}/src/f1")
    client.meta_update(
        f"{home}/src/f1",
        {
            "datacite.title": "Krios run 42",
            "datacite.creator": "Doe, Jane",
            "datacite.publisher": "LRZ",
            "datacite.publicationYear": 2026,
            "datacite.resourceTypeGeneral": "Dataset",
        },
    )
    record = client.datacite(f"{home}/src/f1")
    assert record["titles"] == [{"title": "Krios run 42"}], record

    q = client.qos.add(f"{home}/src", "replicas=1")
    assert q["expression"] == "replicas = 1"
    assert [x["id"] for x in client.qos.ls(f"{home}/src/f2")] == [q["id"]]
    client.qos.rm(q["id"])
    with pytest.raises(weft.InvalidArgument):
        client.qos.add(f"{home}/src", "replicas=")

    rule = f"""
[[rule]]
name = "tag-{res}"
on = "created"
[rule.if]
path = "{home}/tagged/**"
[rule.do]
set_meta = ["tagged=yes"]
"""
    tested = client.policies.test(rule, f"{home}/src")
    assert tested[0]["rule"] == f"tag-{res}"
    client.policies.apply(rule)
    assert f"tag-{res}" in [r["name"] for r in client.policies.ls()]
    assert isinstance(client.policies.status(), list)
    client.policies.rm(f"tag-{res}")
    with pytest.raises(weft.InvalidPolicy):
        client.policies.apply("[[rule]]\nname = 1\n")


def test_settings_come_from_the_environment_then_weft_login(zone, isolated_config, monkeypatch) -> None:
    with pytest.raises(weft.NoZone, match="WEFT_URL"):
        weft.Client()
    monkeypatch.setenv("WEFT_URL", zone.url)
    monkeypatch.setenv("WEFT_TOKEN", zone.token)
    assert weft.Client().whoami()["user"] == "admin"
    # A URL given explicitly does not take the environment's token for another zone.
    other = zone.url.replace("127.0.0.1", "localhost")
    with pytest.raises(weft.Unauthenticated):
        weft.Client(other).whoami()
    assert weft.Client(zone.url).whoami()["user"] == "admin"
    monkeypatch.delenv("WEFT_URL")
    monkeypatch.delenv("WEFT_TOKEN")
    # One `weft login` serves the CLI and Python.
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEFT_")}
    out = subprocess.run(
        [zone_bin(), "login", zone.url, "--token", zone.token], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert (isolated_config / "weft" / "config.toml").exists()
    c = weft.Client()
    assert c.url == zone.url and c.whoami()["user"] == "admin"
    # The saved token goes to its own zone only.
    with pytest.raises(weft.Unauthenticated):
        weft.Client(zone.url.replace("127.0.0.1", "localhost")).whoami()
    (isolated_config / "weft" / "config.toml").unlink()


def zone_bin() -> str:
    from zonelib import weft_bin

    return weft_bin()


def test_progress_reaches_the_total_and_a_client_pickles(client, home, tmp_path) -> None:
    import pickle

    data = payload(3 << 20, 7)
    (tmp_path / "p.bin").write_bytes(data)
    seen: list[int] = []
    report = client._native.put_files([(tmp_path / "p.bin", f"{home}/p.bin")], False, None, None, 8, seen.append)
    assert '"failures":[]' in report
    assert seen and seen[-1] == len(data) and seen == sorted(seen)
    again = pickle.loads(pickle.dumps(client))
    assert again.read_bytes(f"{home}/p.bin") == data


def test_open_reads_ranges_and_writes_atomically(client, home) -> None:
    data = payload(20 << 20, 3)
    with client.open(f"{home}/w.bin", "wb") as f:
        for i in range(0, len(data), 1 << 20):
            f.write(data[i : i + (1 << 20)])
        assert not client.exists(f"{home}/w.bin"), "visible before close"
    assert client.read_bytes(f"{home}/w.bin") == data
    with client.open(f"{home}/w.bin", "rb") as f:
        f.seek(5 << 20)
        assert f.read(10) == data[5 << 20 : (5 << 20) + 10]
        f.seek(-3, os.SEEK_END)
        assert f.read() == data[-3:]
        assert f.tell() == len(data)
    with client.open(f"{home}/t.txt", "w") as f:
        f.write("héllo\nworld\n")
    with client.open(f"{home}/t.txt", "r") as f:
        assert f.readlines() == ["héllo\n", "world\n"]

    # Past the memory buffer the file spools locally, and is uploaded in pieces at close.
    spooled = payload(40 << 20, 5)
    with client.open(f"{home}/new/spooled.bin", "wb") as f:
        f.write(spooled)
    assert client.read_bytes(f"{home}/new/spooled.bin") == spooled

    # An exception inside `with` leaves nothing visible, in memory or spooled, binary or text.
    for name, mode, data in [("small", "wb", b"x"), ("big", "wb", payload(40 << 20, 4)), ("text", "w", "t")]:
        with pytest.raises(RuntimeError):
            with client.open(f"{home}/never-{name}", mode) as f:
                f.write(data)
                raise RuntimeError("stop")
        assert not client.exists(f"{home}/never-{name}"), name


def test_open_acts_as_its_own_client_only(client, zone, home) -> None:
    # Client.open of two users on one zone: each as itself (fsspec's instance cache
    # would have handed the second the first one's file system and token).
    client.put(b"secret", f"{home}/secret.txt")
    with client.open(f"{home}/secret.txt") as f:
        assert f.read() == b"secret"
    name = f"eve{os.getpid()}"
    client.admin.add_user(name)
    eve = weft.Client(zone.url, client.admin.create_token(user=name), progress=False)
    with pytest.raises(weft.Forbidden):
        eve.open(f"{home}/secret.txt").read()
    with eve.open(f"/t/home/{name}/mine.txt", "wb") as f:
        f.write(b"eve's")
    assert client.stat(f"/t/home/{name}/mine.txt").owner == name


def test_a_client_inherited_by_a_forked_process_works(client, home) -> None:
    import multiprocessing

    client.put(b"shared", f"{home}/f")
    client.read_bytes(f"{home}/f")  # the parent's pool holds a connection now
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    # Forked, not pickled: the children hold the parent's very client.
    children = [ctx.Process(target=_read_in_child, args=(client, f"{home}/f", results)) for _ in range(3)]
    for child in children:
        child.start()
    got = [results.get(timeout=60) for _ in children]
    for child in children:
        child.join(30)
    assert got == [b"shared"] * 3
    assert client.read_bytes(f"{home}/f") == b"shared"


def _read_in_child(c: weft.Client, path: str, results: Any) -> None:
    results.put(c.read_bytes(path))


def test_given_url_and_token_need_no_config_file(zone, isolated_config) -> None:
    broken = isolated_config / "weft" / "config.toml"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("this is [ not toml")
    try:
        assert weft.Client(zone.url, zone.token).whoami()["user"] == "admin"
        with pytest.raises(weft.ConfigError, match="config.toml"):
            weft.Client()
    finally:
        broken.unlink()


def test_paths_may_be_weft_urls(client, home) -> None:
    client.put(b"u", f"weft:/{home}/u")
    assert client.read_bytes(f"weft:/{home}/u") == b"u"
    assert client.path(f"weft:/{home}/u") == f"{home}/u"
    with pytest.raises(weft.InvalidPath):
        client.path("../../../..")
