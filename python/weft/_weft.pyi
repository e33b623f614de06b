"""Type stubs of the native module (crates/weft-py)."""

from collections.abc import Callable, Sequence
from os import PathLike

ERROR_CODES: tuple[str, ...]

_Progress = Callable[[int], None] | None
_Local = str | PathLike[str]

class Native:
    def __init__(self, url: str | None = None, token: str | None = None, ca_file: str | None = None) -> None: ...
    @property
    def url(self) -> str: ...
    @property
    def has_token(self) -> bool: ...
    def call(self, op: str, args: str) -> str: ...
    def put_files(
        self,
        pairs: Sequence[tuple[_Local, str]],
        overwrite: bool = False,
        resource: str | None = None,
        streams: int | None = None,
        concurrency: int = 8,
        progress: _Progress = None,
    ) -> str: ...
    def put_tree(
        self,
        local: _Local,
        remote: str,
        overwrite: bool = False,
        resource: str | None = None,
        streams: int | None = None,
        concurrency: int = 8,
        progress: _Progress = None,
    ) -> str: ...
    def get_files(
        self,
        pairs: Sequence[tuple[str, _Local]],
        verify: bool = True,
        streams: int | None = None,
        concurrency: int = 8,
        progress: _Progress = None,
    ) -> str: ...
    def get_tree(
        self,
        remote: str,
        local: _Local,
        verify: bool = True,
        streams: int | None = None,
        concurrency: int = 8,
        progress: _Progress = None,
    ) -> str: ...
    def put_bytes(self, data: bytes, remote: str, overwrite: bool = False, resource: str | None = None) -> str: ...
    def read_range(self, remote: str, start: int, end: int) -> bytes: ...
    def read_many(self, paths: Sequence[str], in_flight: int = 64) -> list[bytes | Exception]: ...
