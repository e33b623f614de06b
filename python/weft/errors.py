"""Exceptions of the SDK, one per stable error code of the zone (and of the client).

Every exception is a :class:`weft.Error` carrying ``code`` (the stable code, as in the REST
API's error bodies and the CLI's ``--json`` output), ``message`` and, when the zone
answered, its HTTP ``status``. Where Python has a built-in exception of the same meaning,
the class derives from it too, so ``except FileNotFoundError`` works as with local files.
"""

from __future__ import annotations


class Error(Exception):
    """Any failure reported by weft: ``code`` says which, ``message`` says what to do."""

    code: str = "internal"

    def __init__(self, message: str, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status

    def __str__(self) -> str:
        return self.message


class InvalidArgument(Error, ValueError):
    """The request was malformed: a bad path, name, argument or JSON body."""

    code = "invalid_argument"


class InvalidPath(InvalidArgument):
    """A logical path that weft refuses (``..``, NUL, not absolute, ...)."""

    code = "invalid_path"


class InvalidName(InvalidArgument):
    """A name (of a user, group, resource, ...) that weft refuses."""

    code = "invalid_name"


class InvalidJson(InvalidArgument):
    """A request body that is not the JSON the route expects."""

    code = "invalid_json"


class InvalidPolicy(InvalidArgument):
    """Policy rules that do not parse or check."""

    code = "invalid_policy"


class PathTooLong(InvalidArgument):
    """A logical path over the zone's length limit."""

    code = "path_too_long"


class NameTooLong(InvalidArgument):
    """A path component over the zone's length limit."""

    code = "name_too_long"


class UnknownZone(InvalidArgument):
    """A path or target names a zone this zone does not federate with."""

    code = "unknown_zone"


class UnknownResource(InvalidArgument):
    """A resource name the zone does not have."""

    code = "unknown_resource"


class NotFound(Error, FileNotFoundError):
    """The collection, data object, user, transfer, ... does not exist."""

    code = "not_found"


class AlreadyExists(Error, FileExistsError):
    """Something of that name exists (pass ``overwrite=True`` to replace a data object)."""

    code = "already_exists"


class NotACollection(Error, NotADirectoryError):
    """A collection was needed and the path is a data object."""

    code = "not_a_collection"


class IsACollection(Error, IsADirectoryError):
    """A data object was needed and the path is a collection."""

    code = "is_a_collection"


class CollectionNotEmpty(Error, OSError):
    """The collection has children (pass ``recursive=True``)."""

    code = "collection_not_empty"


class ChecksumMismatch(Error):
    """Bytes did not hash to the checksum they should have: nothing was kept."""

    code = "checksum_mismatch"


class SizeMismatch(Error):
    """A body of another length than announced: nothing was kept."""

    code = "size_mismatch"


class IncompleteBody(Error):
    """The connection ended before the whole body arrived: nothing was kept."""

    code = "incomplete_body"


class LengthRequired(Error):
    """The zone needs to know a body's length before it arrives."""

    code = "length_required"


class RangeNotSatisfiable(Error, ValueError):
    """A byte range outside the data object."""

    code = "range_not_satisfiable"


class Unauthenticated(Error, PermissionError):
    """No token, or one the zone does not know: log in with ``weft login`` or pass ``token=``."""

    code = "unauthenticated"


class TokenExpired(Unauthenticated):
    """The token has expired: make a new one (``weft token create``)."""

    code = "token_expired"


class NoZone(Unauthenticated):
    """No zone configured: pass ``url=``, set ``WEFT_URL``, or run ``weft login``."""

    code = "no_zone"


class Forbidden(Error, PermissionError):
    """The caller lacks the permission (an ACL, or administrator rights)."""

    code = "forbidden"


class CsrfRejected(Forbidden):
    """A web session's change without its CSRF token, or from another site: nothing changed."""

    code = "csrf_rejected"


class Conflict(Error):
    """The request conflicts with the current state (a transfer that already ended, ...)."""

    code = "conflict"


class LimitExceeded(Conflict):
    """A bound on what may be open at once was reached: try again once some has ended."""

    code = "limit_exceeded"


class QuotaExceeded(Error, OSError):
    """A quota of the user or one of its groups would be exceeded: nothing was stored."""

    code = "quota_exceeded"


class UnsupportedFormat(Error):
    """No metadata extractor of the zone reads the file: nothing was changed."""

    code = "unsupported_format"


class ExtractFailed(Error):
    """The file's header is corrupt or truncated, or the plugin reading it failed."""

    code = "extract_failed"


class Unavailable(Error, ConnectionError):
    """The zone, a storage resource or a service it calls cannot be reached now."""

    code = "unavailable"


class StorageUnavailable(Unavailable):
    """A storage resource of the zone is unreachable; retrying later may succeed."""

    code = "storage_unavailable"


class ZoneUnreachable(Unavailable):
    """A zone (this one or a federated peer) could not be reached."""

    code = "zone_unreachable"


class ServiceUnavailable(Unavailable):
    """An outside service the zone calls (PID registry, webhook receiver) failed."""

    code = "service_unavailable"


class Unreachable(Unavailable):
    """No connection to the zone's URL could be made: wrong URL, or the zone is down."""

    code = "unreachable"


class TransportError(Unavailable):
    """A connection to the zone broke or timed out while talking."""

    code = "transport"


class TlsError(Unavailable):
    """TLS with the zone failed, most often an untrusted certificate (see ``ca_file``)."""

    code = "tls"


class StorageError(Error, OSError):
    """A storage resource of the zone failed the operation."""

    code = "storage_error"


class CatalogError(Error):
    """The zone's catalog failed the operation."""

    code = "catalog_error"


class Internal(Error):
    """A bug in the zone or the client; the message and the zone's log say more."""

    code = "internal"


class LocalError(Error, OSError):
    """A local file or directory could not be read or written (the message names it)."""

    code = "local_io"


class ProtocolError(Error):
    """The zone answered something this client does not understand (versions differ?)."""

    code = "protocol"


class ConfigError(Error):
    """The configuration file ``weft login`` writes cannot be read."""

    code = "config"


def _classes() -> dict[str, type[Error]]:
    out: dict[str, type[Error]] = {}
    todo: list[type[Error]] = [Error]
    while todo:
        cls = todo.pop()
        out.setdefault(cls.code, cls)
        todo.extend(cls.__subclasses__())
    out["internal"] = Internal
    return out


BY_CODE: dict[str, type[Error]] = _classes()
"""The exception class of each stable code."""


def from_native(code: str, message: str, status: int | None = None) -> Error:
    """The exception for ``code`` (used by the native module; unknown codes give ``Error``)."""
    cls = BY_CODE.get(code, Error)
    return cls(message, code=code, status=status)
