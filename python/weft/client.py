"""The SDK's client of one zone: namespace, data, metadata, access, transfers, PIDs, QoS and
policies, through the zone's REST API and weft's Rust data path (``weft._weft``)."""

from __future__ import annotations

import json
import os
import pathlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Union

from . import _weft
from ._progress import Bar
from .errors import InvalidPath, IsACollection, NotFound, from_native

PathLike = Union[str, "os.PathLike[str]"]

#: States of a managed transfer after which nothing changes any more.
FINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class Node:
    """A collection or data object, as ``stat``, ``ls`` and ``find`` return it."""

    path: str
    name: str
    kind: str
    """``"collection"`` or ``"object"``."""
    size: int
    checksum: str | None
    """``blake3:<hex>`` of a data object's bytes."""
    owner: str
    created: int
    """Milliseconds since the epoch."""
    modified: int
    """Milliseconds since the epoch."""
    replicas: list[dict[str, Any]] = field(default_factory=list)
    """Each copy: zone, resource, state and last verification."""
    pid: str | None = None

    @property
    def is_collection(self) -> bool:
        """Whether this is a collection."""
        return self.kind == "collection"

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Node:
        """Builds a Node from the REST API's ``NodeStat``."""
        return cls(
            path=d["path"],
            name=d["name"],
            kind=d["kind"],
            size=d["size"],
            checksum=d.get("checksum"),
            owner=d.get("owner", ""),
            created=d["created"],
            modified=d["modified"],
            replicas=d.get("replicas", []),
            pid=d.get("pid"),
        )


@dataclass(frozen=True)
class Moved:
    """What a put or get of several files did."""

    files: int
    bytes: int
    skipped: list[tuple[str, str]]
    """Local entries left out of a tree (links to directories, sockets) and why."""


class Client:
    """A client of one weft zone.

    ``url`` and ``token`` default to ``WEFT_URL`` and ``WEFT_TOKEN``, then to what
    ``weft login`` saved (a saved token is sent only to the zone it was saved for), so one
    ``weft login`` serves the CLI and Python alike. ``ca_file`` names a PEM file of a CA
    to trust besides the system's (default ``WEFT_CA_FILE``). ``progress`` turns the
    progress bars of long transfers on or off for every call (each call can override it).

    Paths are logical paths: absolute (``/zone/home/alice/x.csv``) or relative to the
    caller's home collection (``x.csv``), as with the CLI.

    >>> import weft
    >>> c = weft.Client()                                  # doctest: +SKIP
    >>> c.put("results.csv", "results.csv")                # doctest: +SKIP
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        ca_file: str | None = None,
        progress: bool = True,
    ) -> None:
        self._native = _weft.Native(url, token, ca_file)
        self._args = (url, token, ca_file)
        self.progress = progress
        self._home: str | None = None
        self._fs: Any = None
        self.transfers = Transfers(self)
        """Managed transfers: ``start``, ``wait``, ``show``, ``ls``, ``files``, ``cancel``."""
        self.pids = Pids(self)
        """Persistent identifiers: ``mint`` and ``resolve``."""
        self.qos = Qos(self)
        """QoS requirements: ``add``, ``ls``, ``rm``."""
        self.policies = Policies(self)
        """Policy rules: ``apply``, ``ls``, ``rm``, ``status``, ``test``."""
        self.admin = Admin(self)
        """Users, groups and tokens (administrators)."""

    def __repr__(self) -> str:
        return f"weft.Client({self.url!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from the same arguments (and the same environment) in another process.
        url, token, ca_file = self._args
        return (_rebuild, (url, token, ca_file, self.progress))

    @property
    def url(self) -> str:
        """The zone's URL."""
        return str(self._native.url)

    # -- plumbing -------------------------------------------------------------------

    def _call(self, op: str, **args: Any) -> Any:
        return json.loads(self._native.call(op, json.dumps(args)))

    def path(self, path: PathLike) -> str:
        """``path`` as an absolute logical path (relative ones are below the home)."""
        p = os.fspath(path)
        if not isinstance(p, str):
            raise InvalidPath(f"{p!r}: logical paths are text")
        if "\x00" in p:
            raise InvalidPath(f"{p!r}: a logical path cannot hold NUL")
        if p.startswith("weft://"):
            # A URL as fsspec writes it: the zone's name first.
            return "/" + p[len("weft://") :].lstrip("/")
        if p.startswith("/"):
            return p
        base = self.home
        for part in p.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if base.count("/") <= 1:
                    raise InvalidPath(f"{p}: climbs above the zone root")
                base = base.rsplit("/", 1)[0]
            else:
                base = f"{base}/{part}"
        return base

    def _bar(self, desc: str, total: int | None, files: int, progress: bool | None) -> Bar:
        return Bar(desc, total, files, self.progress if progress is None else progress)

    # -- who and where ----------------------------------------------------------------

    def whoami(self) -> dict[str, Any]:
        """The caller: ``user``, ``zone``, ``admin``, ``home`` and ``groups``."""
        me: dict[str, Any] = self._call("whoami")
        self._home = me["home"]
        return me

    @property
    def home(self) -> str:
        """The caller's home collection (looked up once)."""
        if self._home is None:
            self.whoami()
        assert self._home is not None
        return self._home

    def health(self) -> dict[str, Any]:
        """The zone's health (needs no token)."""
        result: dict[str, Any] = self._call("health")
        return result

    def zones(self) -> list[dict[str, Any]]:
        """The federated zones this zone knows."""
        result: list[dict[str, Any]] = self._call("zones")
        return result

    def resources(self) -> list[dict[str, Any]]:
        """The zone's storage resources."""
        result: list[dict[str, Any]] = self._call("resources")
        return result

    def import_in_place(self, resource: str, dir: str, into: PathLike) -> dict[str, Any]:
        """Registers the files below ``dir`` (relative to the root of the file-system
        resource ``resource``) as data objects under the collection ``into``, without
        copying them (administrators only). Run again, it registers only what is new or
        changed. Returns the report: ``registered``, ``updated``, ``unchanged``, ``bytes``,
        ``refused`` and the first ``refusals`` (``{"path", "why"}``: links, special files,
        names in use), which are not imported."""
        result: dict[str, Any] = self._call("import_in_place", resource=resource, dir=dir, into=self.path(into))
        return result

    # -- namespace ---------------------------------------------------------------------

    def stat(self, path: PathLike) -> Node:
        """The collection or data object at ``path`` (raises :class:`weft.NotFound`)."""
        return Node.from_wire(self._call("stat", path=self.path(path)))

    def exists(self, path: PathLike) -> bool:
        """Whether something is at ``path``."""
        try:
            self.stat(path)
            return True
        except NotFound:
            return False

    def ls(self, path: PathLike = ".") -> list[Node]:
        """The children of a collection, by name (every page)."""
        return [Node.from_wire(d) for d in self._call("ls", path=self.path(path))]

    def find(
        self,
        path: PathLike = ".",
        name: str | None = None,
        meta: Iterable[str] = (),
        kind: str | None = None,
    ) -> list[Node]:
        """Everything below ``path`` matching all conditions, as ``weft find``.

        ``name`` is a glob over the last component (``*.csv``); each ``meta`` condition is
        ``attr=value``, ``attr!=value``, ``attr>number`` (``<``, ``>=``, ``<=``) or
        ``attr~glob``; ``kind`` is ``"object"`` or ``"collection"``.
        """
        found = self._call("find", path=self.path(path), name=name, meta=list(meta), kind=kind)
        return [Node.from_wire(d) for d in found]

    def mkdir(self, path: PathLike, parents: bool = True) -> Node:
        """Creates a collection (and its parents, unless ``parents=False``)."""
        return Node.from_wire(self._call("mkdir", path=self.path(path), parents=parents))

    def rm(self, path: PathLike, recursive: bool = False) -> None:
        """Removes a data object, or a collection (non-empty ones with ``recursive=True``)."""
        self._call("rm", path=self.path(path), recursive=recursive)

    def mv(self, src: PathLike, dst: PathLike) -> Node:
        """Renames or moves within the zone; no bytes move."""
        return Node.from_wire(self._call("mv", **{"from": self.path(src), "to": self.path(dst)}))

    def cp(self, src: PathLike, dst: PathLike, overwrite: bool = False, resource: str | None = None) -> Node:
        """Copies a data object inside the zone (server-side)."""
        args = {"from": self.path(src), "to": self.path(dst), "overwrite": overwrite, "resource": resource}
        return Node.from_wire(self._call("cp", **args))

    def checksum(self, path: PathLike, verify: bool = False) -> str:
        """The ``blake3:<hex>`` checksum; with ``verify=True`` each replica is re-read."""
        report = self._call("checksum", path=self.path(path), verify=verify)
        return str(report["checksum"])

    # -- data ----------------------------------------------------------------------------

    def put(
        self,
        src: PathLike | bytes,
        dst: PathLike,
        *,
        recursive: bool = False,
        overwrite: bool = False,
        resource: str | None = None,
        streams: int | None = None,
        concurrency: int = 8,
        progress: bool | None = None,
    ) -> Node:
        """Uploads a local file, a directory (``recursive=True``) or ``bytes``.

        As with ``cp``, an existing collection ``dst`` receives the source under its own
        name; otherwise ``dst`` is the new name. Large files go as parallel pieces, hashed
        on the way; the object becomes visible only once the zone has all of it and it
        hashes right. Returns the new node.
        """
        target = self.path(dst)
        if isinstance(src, (bytes, bytearray, memoryview)):
            stat = self._native.put_bytes(bytes(src), target, overwrite, resource)
            return Node.from_wire(json.loads(stat))
        local = pathlib.Path(os.fspath(src))
        try:
            meta = local.stat()
        except FileNotFoundError:
            raise NotFound(f"{local}: no such local file or directory", code="not_found") from None
        except OSError as e:
            raise from_native("local_io", f"{local}: {e.strerror}") from None
        target = self._into(target, local.resolve().name)
        if local.is_dir():
            if not recursive:
                raise IsACollection(f"{local} is a directory (use recursive=True)", code="is_a_collection")
            # The total is for the bar only: not walked when there is none.
            shown = self.progress if progress is None else progress
            total = sum(p.stat().st_size for p in local.rglob("*") if p.is_file()) if shown else None
            with self._bar(f"put {local.name}", total, 0, progress) as bar:
                report = self._native.put_tree(local, target, overwrite, resource, streams, concurrency, bar)
        else:
            with self._bar(f"put {local.name}", meta.st_size, 1, progress) as bar:
                report = self._native.put_files([(local, target)], overwrite, resource, streams, concurrency, bar)
        _raise_failures(json.loads(report))
        return self.stat(target)

    def put_many(
        self,
        pairs: Sequence[tuple[PathLike, PathLike]],
        *,
        overwrite: bool = False,
        resource: str | None = None,
        streams: int | None = None,
        concurrency: int = 8,
        progress: bool | None = None,
    ) -> Moved:
        """Uploads many ``(local file, logical path)`` pairs as one batch (small files go
        in bundles). If any fails, the others are still stored and an exception names how
        many failed and the first cause."""
        items = [(pathlib.Path(os.fspath(src)), self.path(dst)) for src, dst in pairs]
        total = sum(p.stat().st_size for p, _ in items if p.is_file())
        with self._bar("put", total, len(items), progress) as bar:
            report = self._native.put_files(items, overwrite, resource, streams, concurrency, progress=bar)
        return _raise_failures(json.loads(report))

    def get(
        self,
        src: PathLike,
        dst: PathLike,
        *,
        recursive: bool = False,
        verify: bool = True,
        streams: int | None = None,
        concurrency: int = 8,
        progress: bool | None = None,
    ) -> Moved:
        """Downloads a data object, or a collection with ``recursive=True``.

        As with ``cp``, an existing directory ``dst`` receives the source under its own
        name. The bytes are hashed as they arrive and compared with the zone's checksum;
        a file appears under its name only when whole and right.
        """
        source = self.path(src)
        node = self.stat(source)
        local = pathlib.Path(os.fspath(dst))
        if local.is_dir():
            local = local / node.name
        if node.is_collection:
            if not recursive:
                raise IsACollection(f"{source} is a collection (use recursive=True)", code="is_a_collection")
            with self._bar(f"get {node.name}", None, 0, progress) as bar:
                report = self._native.get_tree(source, local, verify, streams, concurrency, bar)
        else:
            with self._bar(f"get {node.name}", node.size, 1, progress) as bar:
                report = self._native.get_files([(source, local)], verify, streams, concurrency, bar)
        return _raise_failures(json.loads(report))

    def get_many(
        self,
        pairs: Sequence[tuple[PathLike, PathLike]],
        *,
        verify: bool = True,
        streams: int | None = None,
        concurrency: int = 8,
        progress: bool | None = None,
    ) -> Moved:
        """Downloads many ``(logical path, local file)`` pairs as one batch."""
        items = [(self.path(src), pathlib.Path(os.fspath(dst))) for src, dst in pairs]
        with self._bar("get", None, len(items), progress) as bar:
            report = self._native.get_files(items, verify, streams, concurrency, progress=bar)
        return _raise_failures(json.loads(report))

    def read_bytes(self, path: PathLike, start: int | None = None, end: int | None = None) -> bytes:
        """A data object's bytes, or those of ``start:end``."""
        target = self.path(path)
        if start is None and end is None:
            got = self._native.read_many([target], 1)[0]
            if isinstance(got, BaseException):
                raise got
            return bytes(got)
        size = self.stat(target).size
        lo, hi = slice(start, end).indices(size)[:2]
        return bytes(self._native.read_range(target, lo, max(lo, hi)))

    def read_many(self, paths: Sequence[PathLike], in_flight: int = 64) -> list[bytes | Exception]:
        """Many whole data objects, ``in_flight`` at a time, in order: each one's bytes, or
        the exception saying why not (returned, not raised)."""
        return list(self._native.read_many([self.path(p) for p in paths], in_flight))

    def open(self, path: PathLike, mode: str = "rb", *, block_size: int | None = None, **kwargs: Any) -> IO[Any]:
        """A file object of a data object: ``"rb"`` (seekable, with ranged read-ahead) or
        ``"wb"`` (streamed to a local spool and uploaded in pieces at ``close()``; an
        exception inside ``with`` uploads nothing). ``"r"``/``"w"`` give text."""
        from .fs import TextFile, WeftFileSystem

        if self._fs is None:
            # Never from fsspec's shared instance cache: its key would not tell this
            # client's token from another's.
            self._fs = WeftFileSystem(client=self, skip_instance_cache=True)
        if mode in ("r", "w", "x"):
            raw = self._fs.open(self.path(path), mode + "b", block_size=block_size)
            return TextFile(raw, encoding=kwargs.pop("encoding", "utf-8"), **kwargs)
        return self._fs.open(self.path(path), mode, block_size=block_size, **kwargs)  # type: ignore[no-any-return]

    def _into(self, target: str, name: str) -> str:
        """``target/name`` when ``target`` is an existing collection, else ``target``."""
        try:
            if self.stat(target).is_collection:
                return f"{target.rstrip('/')}/{name}"
        except NotFound:
            pass
        return target

    # -- metadata and access --------------------------------------------------------------

    def meta(self, path: PathLike) -> list[dict[str, str]]:
        """The metadata (attribute-value-unit triples) of a collection or data object."""
        result: list[dict[str, str]] = self._call("meta_ls", path=self.path(path))
        return result

    def extract(self, path: PathLike) -> dict[str, Any]:
        """Reads the data object's header (MRC, TIFF, FITS, NetCDF, ``.mdoc``, a dataset
        sidecar, or what a plugin of the zone reads) into its metadata, replacing what the
        same source gave before: ``{"path", "source", "avus"}``. Raises
        :class:`UnsupportedFormat` when no extractor reads it and :class:`ExtractFailed`
        when its header is corrupt or truncated; nothing is changed then."""
        result: dict[str, Any] = self._call("extract", path=self.path(path))
        return result

    def meta_add(self, path: PathLike, attr: str, value: Any, unit: str = "") -> None:
        """Adds one value of ``attr`` (an attribute may have several)."""
        self._meta(path, [{"op": "add", "attr": attr, "value": str(value), "unit": unit}])

    def meta_set(self, path: PathLike, attr: str, value: Any, unit: str = "") -> None:
        """Sets ``attr`` to this one value, replacing the others."""
        self._meta(path, [{"op": "set", "attr": attr, "value": str(value), "unit": unit}])

    def meta_rm(self, path: PathLike, attr: str, value: Any = None) -> None:
        """Removes ``attr`` (or only its ``value``)."""
        v = None if value is None else str(value)
        self._meta(path, [{"op": "rm", "attr": attr, "value": v, "unit": ""}])

    def meta_update(self, path: PathLike, values: dict[str, Any]) -> None:
        """Sets several attributes at once, all or none."""
        ops = [{"op": "set", "attr": k, "value": str(v), "unit": ""} for k, v in values.items()]
        self._meta(path, ops)

    def _meta(self, path: PathLike, ops: list[dict[str, Any]]) -> None:
        self._call("meta_edit", path=self.path(path), ops=ops)

    def acl(self, path: PathLike) -> list[dict[str, Any]]:
        """Who may do what on a collection or data object."""
        result: list[dict[str, Any]] = self._call("acl_ls", path=self.path(path))
        return result

    def set_acl(self, path: PathLike, principal: str, permission: str, recursive: bool = False) -> None:
        """Grants ``read``, ``write`` or ``own`` to a user or group (``none`` removes it)."""
        request = {"principal": principal, "permission": permission, "recursive": recursive}
        self._call("acl_set", path=self.path(path), request=request)

    # -- replicas, PIDs, export -----------------------------------------------------------

    def replicate(self, path: PathLike, target: str, recursive: bool = False) -> dict[str, Any]:
        """Copies to ``ZONE`` or ``ZONE:RESOURCE`` as a managed transfer (returned; see
        ``transfers.wait``)."""
        result: dict[str, Any] = self._call("replicate", path=self.path(path), target=target, recursive=recursive)
        return result

    def trim(self, path: PathLike, source: str) -> dict[str, Any]:
        """Removes the replica at ``source`` (``ZONE`` or ``ZONE:RESOURCE``); never the
        last good one."""
        result: dict[str, Any] = self._call("trim", path=self.path(path), **{"from": source})
        return result

    def datacite(self, path: PathLike) -> dict[str, Any]:
        """The DataCite (kernel 4) record of a collection or data object with a PID."""
        result: dict[str, Any] = self._call("datacite", path=self.path(path))
        return result

    def audit(
        self, path: PathLike | None = None, user: str | None = None, since: int | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """The newest entries of the audit log (administrators); ``since`` in ms."""
        p = None if path is None else self.path(path)
        page = self._call("audit", path=p, user=user, since=since, limit=limit)
        return list(page["items"])


def _rebuild(url: str | None, token: str | None, ca_file: str | None, progress: bool) -> Client:
    return Client(url, token, ca_file=ca_file, progress=progress)


def _raise_failures(report: dict[str, Any]) -> Moved:
    failures = report["failures"]
    if failures:
        path, code, message = failures[0]
        if len(failures) > 1:
            message = f"{len(failures)} files failed; the first, {path}: {message}"
        elif path not in message:
            message = f"{path}: {message}"
        raise from_native(code, message)
    return Moved(report["files"], report["bytes"], [tuple(s) for s in report["skipped"]])


class _Part:
    def __init__(self, client: Client) -> None:
        self._c = client


class Transfers(_Part):
    """Managed transfers: run by the zone, resumed after restarts, followed from here."""

    def start(
        self,
        sources: PathLike | Sequence[PathLike],
        destination: str,
        *,
        recursive: bool = False,
        sync: bool = False,
        verify: str | None = None,
        streams: int | None = None,
        concurrency: int | None = None,
    ) -> dict[str, Any]:
        """Starts a transfer from logical paths of any federated zone, ``file:///...`` or
        ``s3://bucket/prefix`` to ``destination``; returns it (``id``, ``state``, ...)."""
        srcs = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
        request = {
            "sources": [_endpoint(self._c, s) for s in srcs],
            "destination": _endpoint(self._c, destination),
            "recursive": recursive,
            "sync": sync,
            "verify": verify,
            "streams": streams,
            "concurrency": concurrency,
        }
        result: dict[str, Any] = self._c._call("transfer_start", request=request)
        return result

    def show(self, id: str) -> dict[str, Any]:
        """A transfer's state, counts of files and bytes, rate and ETA."""
        result: dict[str, Any] = self._c._call("transfer", id=id)
        return result

    def ls(self, limit: int = 50) -> list[dict[str, Any]]:
        """The caller's transfers (all of them for an administrator), newest first."""
        result: list[dict[str, Any]] = self._c._call("transfers", limit=limit)
        return result

    def files(self, id: str, state: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """A transfer's files with their states and causes of failure."""
        result: list[dict[str, Any]] = self._c._call("transfer_files", id=id, state=state, limit=limit)
        return result

    def cancel(self, id: str) -> None:
        """Stops a transfer; what it staged is dropped, finished files stay."""
        self._c._call("transfer_cancel", id=id)

    def wait(
        self,
        id: str,
        *,
        callback: Callable[[dict[str, Any]], None] | None = None,
        poll: float = 0.5,
        timeout: float | None = None,
        progress: bool | None = None,
    ) -> dict[str, Any]:
        """Waits until the transfer ends and returns it; ``callback`` gets each state seen.

        Raises ``TimeoutError`` after ``timeout`` seconds (the transfer runs on). The
        returned transfer may have failed: check ``state`` and ``error``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        t = self.show(id)
        with self._c._bar(f"transfer {id}", t["bytes_total"] or None, t["files_total"], progress) as bar:
            while True:
                bar(t["bytes_done"])
                if callback is not None:
                    callback(t)
                if t["state"] in FINAL_STATES:
                    return t
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"transfer {id} is still {t['state']} after {timeout} s")
                time.sleep(poll)
                t = self.show(id)


def _endpoint(c: Client, s: PathLike) -> str:
    s = os.fspath(s)
    return s if "://" in s else c.path(s)


class Pids(_Part):
    """Persistent identifiers of collections and data objects."""

    def mint(self, path: PathLike) -> dict[str, Any]:
        """The PID of ``path`` (minted on first request)."""
        result: dict[str, Any] = self._c._call("pid_mint", path=self._c.path(path))
        return result

    def resolve(self, pid: str) -> dict[str, Any]:
        """What ``PREFIX/SUFFIX`` stands for now."""
        result: dict[str, Any] = self._c._call("pid_resolve", pid=pid)
        return result


class Qos(_Part):
    """QoS requirements (``replicas >= 2 & tier = archive``, ...), kept by the zone."""

    def add(self, path: PathLike, expression: str) -> dict[str, Any]:
        """Adds a requirement on ``path`` and what is below it."""
        result: dict[str, Any] = self._c._call("qos_add", path=self._c.path(path), expression=expression)
        return result

    def ls(self, path: PathLike) -> list[dict[str, Any]]:
        """The requirements on ``path`` with their status and reason."""
        result: list[dict[str, Any]] = self._c._call("qos_ls", path=self._c.path(path))
        return result

    def rm(self, id: int) -> None:
        """Removes a requirement."""
        self._c._call("qos_rm", id=id)


class Policies(_Part):
    """The zone's policy rules (administrators)."""

    def apply(self, source: str) -> list[dict[str, Any]]:
        """Loads rules from their text, replacing those of the same names."""
        result: list[dict[str, Any]] = self._c._call("policy_apply", source=source)
        return result

    def ls(self) -> list[dict[str, Any]]:
        """The loaded rules."""
        result: list[dict[str, Any]] = self._c._call("policies")
        return result

    def rm(self, name: str) -> None:
        """Removes a rule."""
        self._c._call("policy_rm", name=name)

    def status(self) -> list[dict[str, Any]]:
        """Each rule's tasks: pending, waiting, done, failed with causes."""
        result: list[dict[str, Any]] = self._c._call("policy_status")
        return result

    def test(self, source: str, path: PathLike) -> list[dict[str, Any]]:
        """What rules would do for ``path``, without doing it."""
        result: list[dict[str, Any]] = self._c._call("policy_test", source=source, path=self._c.path(path))
        return result


class Admin(_Part):
    """Users, groups and tokens (administrators; anyone may make their own tokens)."""

    def users(self) -> list[dict[str, Any]]:
        """Every user."""
        result: list[dict[str, Any]] = self._c._call("users")
        return result

    def add_user(self, name: str, admin: bool = False) -> dict[str, Any]:
        """Creates a user (and its home collection)."""
        result: dict[str, Any] = self._c._call("user_add", name=name, admin=admin)
        return result

    def rm_user(self, name: str) -> None:
        """Removes a user."""
        self._c._call("user_rm", name=name)

    def groups(self) -> list[dict[str, Any]]:
        """Every group."""
        result: list[dict[str, Any]] = self._c._call("groups")
        return result

    def add_group(self, name: str) -> dict[str, Any]:
        """Creates a group."""
        result: dict[str, Any] = self._c._call("group_add", name=name)
        return result

    def rm_group(self, name: str) -> None:
        """Removes a group."""
        self._c._call("group_rm", name=name)

    def members(self, group: str) -> list[dict[str, Any]]:
        """The members of a group."""
        result: list[dict[str, Any]] = self._c._call("members", group=group)
        return result

    def add_member(self, group: str, user: str) -> None:
        """Adds a user to a group."""
        self._c._call("member_add", group=group, user=user)

    def rm_member(self, group: str, user: str) -> None:
        """Removes a user from a group."""
        self._c._call("member_rm", group=group, user=user)

    def create_token(self, user: str | None = None, label: str = "", ttl_seconds: int | None = None) -> str:
        """A new API token (for ``user``, default the caller), shown once."""
        request = {"user": user, "label": label, "ttl_seconds": ttl_seconds}
        created = self._c._call("token_create", request=request)
        return str(created["token"])
