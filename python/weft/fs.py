"""``weft://`` for fsspec, and so for pandas, xarray, zarr, dask and pyarrow.

``weft://lrz/home/alice/x.csv`` is the logical path ``/lrz/home/alice/x.csv`` (the
zone's name first). The zone and token come from ``storage_options`` (``endpoint_url``,
``token``, ``ca_file``) or, as for :class:`weft.Client`, from ``WEFT_URL``/``WEFT_TOKEN`` and what
``weft login`` saved.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from fsspec.callbacks import DEFAULT_CALLBACK
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from .client import Client, _raise_failures
from .errors import AlreadyExists, Error, IsACollection, NotFound

#: Reads of a file object fetch at least this much at a time (and read ahead as much).
BLOCK_SIZE = 8 << 20

#: Bytes a file object being written keeps in memory before it spills to a local spool.
WRITE_SPOOL_AT = 32 << 20


class WeftFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """A weft zone as an fsspec file system (protocol ``weft``).

    >>> import fsspec
    >>> fs = fsspec.filesystem("weft")                            # doctest: +SKIP
    >>> fs.ls("weft://lrz/home/alice")                            # doctest: +SKIP
    """

    protocol = "weft"
    root_marker = "/"
    cachable = True

    def __init__(
        self,
        endpoint_url: str | None = None,
        token: str | None = None,
        ca_file: str | None = None,
        *,
        client: Client | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        # Not `url`: pandas passes storage_options to fsspec's url_to_fs(url, **options).
        self.client = client if client is not None else Client(endpoint_url, token, ca_file=ca_file, progress=False)
        self._native = self.client._native
        # The batch a put or get of this thread is collecting (see put below).
        self._local = threading.local()

    # -- paths ----------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = os.fspath(path)
        if path.startswith("weft://"):
            path = path[len("weft://") :]
        elif path.startswith("weft:"):
            path = path[len("weft:") :]
        path = "/" + path.lstrip("/")
        return path.rstrip("/") or "/"

    def unstrip_protocol(self, name: str) -> str:
        """``/zone/x`` as ``weft://zone/x``."""
        return "weft://" + str(self._strip_protocol(name)).lstrip("/")

    # -- metadata ---------------------------------------------------------------------------

    def _info(self, d: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": d["path"],
            "size": d["size"],
            "type": "directory" if d["kind"] == "collection" else "file",
            "checksum": d.get("checksum"),
            "owner": d.get("owner", ""),
            "created": d["created"] / 1000,
            "mtime": d["modified"] / 1000,
        }

    def ls(self, path: str, detail: bool = True, refresh: bool = False, **kwargs: Any) -> list[Any]:
        """The children of a collection, or the object itself (cached per instance)."""
        path = self._strip_protocol(path)
        entries = None if refresh else self.dircache.get(path)
        if entries is None:
            try:
                listed = self.client._call("ls", path=path)
            except Error as e:
                if e.code != "not_a_collection":
                    raise
                entries = [self.info(path)]
            else:
                entries = [self._info(d) for d in listed]
                self.dircache[path] = entries
        return entries if detail else [e["name"] for e in entries]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        """One entry: from a cached listing of its collection, else asked of the zone."""
        path = self._strip_protocol(path)
        parent = self._parent(path)
        for e in self.dircache.get(parent, ()):
            if e["name"] == path:
                return dict(e)
        return self._info(self.client._call("stat", path=path))

    def exists(self, path: str, **kwargs: Any) -> bool:
        """Whether something is at ``path``."""
        try:
            self.info(path)
            return True
        except NotFound:
            return False
        except Error as e:
            if e.code in ("invalid_path", "unknown_zone"):
                return False
            raise

    def checksum(self, path: str) -> int:
        """An integer of the object's BLAKE3 checksum: changes when the bytes do."""
        return int(self.ukey(path)[:16], 16)

    def ukey(self, path: str) -> str:
        """The object's BLAKE3 checksum in hex."""
        info = self.info(path)
        if info["type"] == "directory":
            raise IsACollection(f"{info['name']} is a collection", code="is_a_collection")
        return str(info["checksum"]).split(":", 1)[-1]

    def created(self, path: str) -> Any:
        """When the node was created (a datetime in UTC)."""
        import datetime

        return datetime.datetime.fromtimestamp(self.info(path)["created"], tz=datetime.timezone.utc)

    def modified(self, path: str) -> Any:
        """When the node last changed (a datetime in UTC)."""
        import datetime

        return datetime.datetime.fromtimestamp(self.info(path)["mtime"], tz=datetime.timezone.utc)

    # -- namespace ---------------------------------------------------------------------

    def _changed(self, *paths: str, tree: bool = False) -> None:
        """Forgets what a write through this instance made stale: the listings of the
        paths' parents, and with ``tree`` (a collection removed or moved) those below."""
        for p in paths:
            p = self._strip_protocol(p)
            if tree:
                self.invalidate_cache(p)
            else:
                self._forget(p)

    def _forget(self, path: str) -> None:
        self.dircache.pop(path, None)
        while path not in ("/", ""):
            path = self._parent(path)
            self.dircache.pop(path, None)

    def invalidate_cache(self, path: str | None = None) -> None:
        """Forgets cached listings of ``path``, of what is below it (a removed or moved
        collection takes its children along) and of its parents (all, with no path)."""
        if path is None:
            self.dircache.clear()
            return
        path = self._strip_protocol(path)
        below = path.rstrip("/") + "/"
        try:
            stale = [k for k in list(self.dircache) if k.startswith(below)]
        except RuntimeError:
            # Another thread changed the cache meanwhile: forget all of it.
            self.dircache.clear()
            return
        for cached in stale:
            self.dircache.pop(cached, None)
        self._forget(path)
        while path not in ("/", ""):
            path = self._parent(path)
            self.dircache.pop(path, None)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        """Creates a collection."""
        path = self._strip_protocol(path)
        self.client._call("mkdir", path=path, parents=create_parents)
        self._changed(path)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Creates a collection and its parents."""
        path = self._strip_protocol(path)
        if not exist_ok and self.exists(path):
            raise FileExistsError(path)
        self.mkdir(path, create_parents=True)

    def rmdir(self, path: str) -> None:
        """Removes an empty collection."""
        path = self._strip_protocol(path)
        self.client._call("rm", path=path, recursive=False)
        self._changed(path, tree=True)

    def rm_file(self, path: str) -> None:
        """Removes a data object."""
        path = self._strip_protocol(path)
        self.client._call("rm", path=path, recursive=False)
        self._changed(path)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        """Removes objects, and collections with ``recursive=True`` (each in one request)."""
        if maxdepth is not None:
            return super().rm(path, recursive=recursive, maxdepth=maxdepth)  # type: ignore[no-any-return]
        paths = self.expand_path(path, recursive=False)
        for p in sorted(paths, reverse=True):
            try:
                self.client._call("rm", path=p, recursive=recursive)
            except NotFound:
                if not recursive:
                    raise
            self._changed(p, tree=True)
        return None

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        """Copies a data object inside the zone (no bytes pass through here)."""
        p1, p2 = self._strip_protocol(path1), self._strip_protocol(path2)
        if self.isdir(p1):
            self.makedirs(p2, exist_ok=True)
            return
        self._with_parent(p2, lambda: self.client._call("cp", **{"from": p1, "to": p2, "overwrite": True}))
        self._changed(p2)

    def _with_parent(self, path: str, write: Any) -> Any:
        """Runs ``write``; if the collection ``path`` goes into is missing, makes it (as
        object stores have no directories to make first) and runs it again."""
        parent = self._parent(path)
        try:
            return write()
        except NotFound as e:
            # Only when it is the collection that is missing (not, say, a copy's source);
            # another thread may be making it too, which `mkdir -p` allows.
            missing = e.message.split(" ", 1)[0]
            if not (parent == missing or parent.startswith(missing + "/")):
                raise
            self.mkdir(parent, create_parents=True)
            return write()

    def mv(self, path1: Any, path2: Any, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any) -> None:
        """Moves by renaming in the catalog: one request whatever the size."""
        if isinstance(path1, str) and isinstance(path2, str) and maxdepth is None:
            p1, p2 = self._strip_protocol(path1), self._strip_protocol(path2)
            if not self.isdir(p1) or recursive:
                if self.isdir(p2):
                    p2 = f"{p2.rstrip('/')}/{p1.rsplit('/', 1)[-1]}"
                try:
                    self.client._call("mv", **{"from": p1, "to": p2})
                except AlreadyExists:
                    # As with local files and s3fs, an object at the target is replaced.
                    if self.isdir(p2):
                        raise
                    self.client._call("rm", path=p2, recursive=False)
                    self.client._call("mv", **{"from": p1, "to": p2})
                self._changed(p1, p2, tree=True)
                return
        super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)

    # -- bytes ---------------------------------------------------------------------------

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        """A data object's bytes, or those of ``start:end`` (negative from the end)."""
        path = self._strip_protocol(path)
        if start is None and end is None:
            got = self._native.read_many([path], 1)[0]
            if isinstance(got, BaseException):
                raise got
            return bytes(got)
        # Clamped to the size as the zone has it now (not as cached): a range past the end
        # gives what there is, as with local files, and asks nothing of the zone.
        size = self.client._call("stat", path=path)["size"]
        lo, hi = slice(start, end).indices(size)[:2]
        if hi <= lo:
            return b""
        return bytes(self._native.read_range(path, lo, hi))

    def cat(self, path: Any, recursive: bool = False, on_error: str = "raise", **kwargs: Any) -> Any:
        """Whole objects; many are read concurrently in one batch, not one at a time."""
        if isinstance(path, (list, tuple)) and not recursive and not any(self._has_magic(p) for p in path):
            # Paths given as they are: no listing, no stat, one batch.
            paths = [self._strip_protocol(p) for p in path]
        else:
            paths = self.expand_path(path, recursive=recursive)
        single = isinstance(path, str) and len(paths) == 1 and not self._has_magic(path) and not recursive
        files = paths
        results = self._native.read_many(files, 64)
        out: dict[str, Any] = {}
        for p, got in zip(files, results, strict=True):
            if isinstance(got, IsACollection) and not single:
                continue  # a collection among the paths expanded: not a file to read
            if isinstance(got, BaseException):
                if on_error == "raise":
                    raise got
                if on_error == "return":
                    out[p] = got
                continue
            out[p] = bytes(got)
        if single:
            return out[files[0]]
        return out

    @staticmethod
    def _has_magic(path: str) -> bool:
        return any(c in path for c in "*?[")

    def pipe_file(self, path: str, value: bytes, **kwargs: Any) -> None:
        """Writes ``value`` as the data object in one request; replaces an existing one
        unless ``mode="create"`` (then :class:`weft.AlreadyExists`)."""
        path = self._strip_protocol(path)
        data, resource = bytes(value), kwargs.get("resource")
        overwrite = kwargs.get("mode", "overwrite") != "create"
        self._with_parent(path, lambda: self._native.put_bytes(data, path, overwrite, resource))
        self._changed(path)

    # -- local files, in batches ------------------------------------------------------------
    #
    # fsspec's put and get work out the pairs of paths (trailing slashes, globs, recursion)
    # and call put_file/get_file per pair. Here the pairs are collected and moved as one
    # batch by the transfer engine: small files in bundles, large ones in parallel pieces.

    @contextlib.contextmanager
    def _collecting(self) -> Iterator[list[tuple[str, str]]]:
        batch: list[tuple[str, str]] = []
        self._local.batch = batch
        try:
            yield batch
        finally:
            self._local.batch = None

    def _batch(self) -> list[tuple[str, str]] | None:
        batch: list[tuple[str, str]] | None = getattr(self._local, "batch", None)
        return batch

    def put(
        self,
        lpath: Any,
        rpath: Any,
        recursive: bool = False,
        callback: Any = DEFAULT_CALLBACK,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Uploads local files (a tree with ``recursive=True``) in one batch."""
        with self._collecting() as batch:
            super().put(lpath, rpath, recursive=recursive, callback=callback, maxdepth=maxdepth, **kwargs)
        if batch:
            report = self._native.put_files(batch, True, kwargs.get("resource"))
            self._changed(*(r for _, r in batch))
            _check(report)

    def put_file(
        self, lpath: str, rpath: str, callback: Any = DEFAULT_CALLBACK, mode: str = "overwrite", **kwargs: Any
    ) -> None:
        """Uploads one local file (or makes the collection of a local directory)."""
        rpath = self._strip_protocol(rpath)
        if os.path.isdir(lpath):
            self.makedirs(rpath, exist_ok=True)
            return
        batch = self._batch()
        if batch is not None:
            batch.append((lpath, rpath))
            return
        if mode == "create" and self.exists(rpath):
            raise FileExistsError(rpath)
        report = self._native.put_files([(lpath, rpath)], True, kwargs.get("resource"))
        self._changed(rpath)
        _check(report)

    def get(
        self,
        rpath: Any,
        lpath: Any,
        recursive: bool = False,
        callback: Any = DEFAULT_CALLBACK,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Downloads data objects (a tree with ``recursive=True``) in one batch."""
        with self._collecting() as batch:
            super().get(rpath, lpath, recursive=recursive, callback=callback, maxdepth=maxdepth, **kwargs)
        if batch:
            _check(self._native.get_files(batch))

    def get_file(
        self, rpath: str, lpath: str, callback: Any = DEFAULT_CALLBACK, outfile: Any = None, **kwargs: Any
    ) -> None:
        """Downloads one data object, verified against its checksum."""
        rpath = self._strip_protocol(rpath)
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return
        if outfile is not None:
            outfile.write(self.cat_file(rpath))
            return
        batch = self._batch()
        if batch is not None:
            batch.append((rpath, os.fspath(lpath)))
            return
        _check(self._native.get_files([(rpath, os.fspath(lpath))]))

    # -- file objects -----------------------------------------------------------------------

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> WeftFile:
        if mode not in ("rb", "wb", "xb"):
            raise ValueError(
                f"mode {mode!r} is not supported by weft: use 'rb' to read or 'wb' to write a new "
                "version (data objects are replaced whole, never changed in place)"
            )
        path = self._strip_protocol(path)
        if mode == "xb" and self.exists(path):
            raise FileExistsError(path)
        if mode == "rb":
            # Asked of the zone, not the listing cache: a size another writer changed
            # since would cut the read short.
            info = self._info(self.client._call("stat", path=path))
            if info["type"] == "directory":
                raise IsACollection(f"{path} is a collection, not a data object", code="is_a_collection")
            kwargs.setdefault("size", info["size"])
        return WeftFile(
            self,
            path,
            mode="rb" if mode == "rb" else "wb",
            overwrite=mode == "wb",
            block_size=block_size or BLOCK_SIZE,
            autocommit=autocommit,
            cache_options=cache_options,
            **kwargs,
        )


def _check(report: str) -> None:
    _raise_failures(json.loads(report))


class WeftFile(AbstractBufferedFile):  # type: ignore[misc]
    """A data object as a file. Reading fetches ranges (read-ahead cached); writing keeps
    up to ``WRITE_SPOOL_AT`` bytes in memory, spills the rest to a nameless local spool, and
    uploads at ``close()`` through the transfer engine (pieces in parallel, hashed). The
    object becomes visible only then; an exception inside ``with``, ``discard()`` or a
    killed process leaves nothing in the zone."""

    fs: WeftFileSystem

    def __init__(self, fs: WeftFileSystem, path: str, mode: str = "rb", overwrite: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("cache_type", "readahead")
        super().__init__(fs, path, mode=mode, **kwargs)
        self._overwrite = overwrite
        self._spool: Any = None
        self._memory = io.BytesIO()

    def _fetch_range(self, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        return bytes(self.fs._native.read_range(self.path, start, end))

    def _initiate_upload(self) -> None:
        # Nothing to open yet: a small file goes in one request at close.
        pass

    def _upload_chunk(self, final: bool = False) -> bool:
        data = self.buffer.getvalue()
        if self._spool is None and self._memory.tell() + len(data) <= WRITE_SPOOL_AT:
            self._memory.write(data)
        else:
            if self._spool is None:
                # Nameless (unlinked at once): a process killed mid-write leaves no file.
                self._spool = tempfile.TemporaryFile(prefix="weft-write-")
                self._spool.write(self._memory.getvalue())
                self._memory = io.BytesIO()
            self._spool.write(data)
        if final and self.autocommit:
            self.commit()
        return True

    def commit(self) -> None:
        """Uploads what was written: the object becomes visible (at ``close()``, or at
        the end of ``fs.transaction`` when the file was opened in one)."""
        overwrite = self._overwrite
        if self._spool is None:
            data = self._memory.getvalue()
            self.fs._with_parent(self.path, lambda: self.fs._native.put_bytes(data, self.path, overwrite, None))
            self._memory = io.BytesIO()
        else:
            self._spool.flush()
            # The engine reads the nameless file through this process's descriptor.
            spool = f"/proc/self/fd/{self._spool.fileno()}"
            try:
                _check(self.fs._native.put_files([(spool, self.path)], overwrite, None))
            finally:
                self._drop_spool()
        self.fs._changed(self.path)

    def _drop_spool(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        self._memory = io.BytesIO()

    def discard(self) -> None:
        """Throws away what was written: nothing becomes visible."""
        self._drop_spool()
        if self.mode != "rb":
            self.buffer = io.BytesIO()
        self.closed = True

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None and self.mode != "rb" and not self.closed:
            self.discard()
            return
        self.close()

    def __del__(self) -> None:
        # A writer dropped without close() uploads nothing.
        if self.mode != "rb" and not self.closed:
            self.discard()


class TextFile(io.TextIOWrapper):
    """A data object opened as text (``Client.open(path, "w")``): an exception inside
    ``with`` uploads nothing, as for the binary file under it."""

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        raw = self.buffer
        if exc_type is not None and isinstance(raw, WeftFile) and raw.mode != "rb" and not raw.closed:
            raw.discard()
            return
        self.close()
