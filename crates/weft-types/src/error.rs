//! Error codes shared by every layer. The string form of a code is part of the public API
//! (`{"code": "...", "message": "..."}`) and must never change once released.

use std::fmt;
use std::sync::Arc;

/// Declares the codes once: the enum, [`ErrorCode::ALL`] and the string form of each.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $code:ident = $name:literal,)*) => {
        /// A stable error code. weft-api maps it onto an HTTP status (one table there, as
        /// the status is the wire's business); `is_temporary` tells the transfer engine (the
        /// one place that retries) whether trying again can help.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$doc])* $code,)*
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(Self::$code,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$code => $name,)*
                }
            }
        }
    };
}

error_codes! {
    InvalidPath = "invalid_path",
    InvalidName = "invalid_name",
    InvalidArgument = "invalid_argument",
    InvalidJson = "invalid_json",
    InvalidPolicy = "invalid_policy",
    PathTooLong = "path_too_long",
    NameTooLong = "name_too_long",
    UnknownZone = "unknown_zone",
    UnknownResource = "unknown_resource",
    NotFound = "not_found",
    AlreadyExists = "already_exists",
    NotACollection = "not_a_collection",
    IsACollection = "is_a_collection",
    CollectionNotEmpty = "collection_not_empty",
    ChecksumMismatch = "checksum_mismatch",
    SizeMismatch = "size_mismatch",
    IncompleteBody = "incomplete_body",
    LengthRequired = "length_required",
    RangeNotSatisfiable = "range_not_satisfiable",
    Unauthenticated = "unauthenticated",
    TokenExpired = "token_expired",
    Forbidden = "forbidden",
    /// A state-changing request of a web session without the session's CSRF token, or
    /// sent from another site (Origin/Referer): nothing was changed.
    CsrfRejected = "csrf_rejected",
    Conflict = "conflict",
    /// A bound the zone keeps on what one user or all together may hold open (upload
    /// sessions, ...): try again once some has ended.
    LimitExceeded = "limit_exceeded",
    /// A quota of the user or one of its groups would be exceeded (`weft quota`): nothing
    /// was stored.
    QuotaExceeded = "quota_exceeded",
    /// No metadata extractor reads the file (`weft extract`): nothing was changed.
    UnsupportedFormat = "unsupported_format",
    /// A file's header is corrupt, truncated or hostile, or the plugin reading it failed;
    /// the message names the file and why: nothing was changed.
    ExtractFailed = "extract_failed",
    StorageUnavailable = "storage_unavailable",
    ZoneUnreachable = "zone_unreachable",
    /// An outside service the zone calls (a PID registry, a webhook receiver) did not
    /// answer or answered with a server error.
    ServiceUnavailable = "service_unavailable",
    StorageError = "storage_error",
    CatalogError = "catalog_error",
    Internal = "internal",
}

impl ErrorCode {
    pub fn parse(s: &str) -> Option<ErrorCode> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s)
    }

    /// Whether a retry may succeed: the fault is in the environment, not in the request.
    pub fn is_temporary(self) -> bool {
        matches!(
            self,
            Self::StorageUnavailable
                | Self::ZoneUnreachable
                | Self::ServiceUnavailable
                | Self::IncompleteBody
                | Self::LimitExceeded
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What caused an [`Error`] below the domain: an I/O, database or HTTP client error.
pub type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// The one error type of the domain layers: a stable code, a message for people, and the
/// error beneath it if one was (an `io::Error`, a database's): its text is in `message`
/// already, for the wire; the error itself stays for logs and for code that must tell
/// causes apart. Two errors are equal when code and message are: a cause is context.
#[derive(Debug, Clone)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    pub source: Option<Cause>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Written by hand: a derived `source` would be the `Arc`, which no caller can downcast.
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.message == other.message
    }
}

impl Eq for Error {}

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            source: None,
        }
    }

    /// `code` for `cause`: the message is `context` followed by what `cause` and its own
    /// causes say (see [`with_causes`]), and `cause` is kept as the source.
    pub fn caused(
        code: ErrorCode,
        context: impl fmt::Display,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error {
            code,
            message: format!("{context}: {}", with_causes(&cause)),
            source: Some(Arc::new(cause)),
        }
    }

    /// This error, keeping `cause` as its source (its message says what is needed already).
    pub fn with_source(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(cause));
        self
    }

    pub fn not_found(what: impl fmt::Display) -> Self {
        Self::new(ErrorCode::NotFound, format!("{what} does not exist"))
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// An error as it was recorded with `to_string()` (`code: message`); text without a
    /// known code reads as an internal error with that text.
    pub fn parse_recorded(text: &str) -> Self {
        match text.split_once(": ") {
            Some((code, message)) => match ErrorCode::parse(code) {
                Some(code) => Self::new(code, message),
                None => Self::internal(text),
            },
            None => Self::internal(text),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `e`'s message followed by those of its causes that add to it, so that what went wrong
/// at the bottom (a certificate no trusted CA signed, a refused connection) reaches the
/// operator: an HTTP client's own message ("error sending request for url") names none
/// of it. An `io::Error` is looked into, as its `source()` skips the error it wraps.
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = cause_of(e);
    while let Some(cause) = next {
        let message = cause.to_string();
        if !out.contains(&message) {
            out.push_str(": ");
            out.push_str(&message);
        }
        next = cause_of(cause);
    }
    out
}

fn cause_of<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a (dyn std::error::Error + 'static)> {
    match e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
        Some(wrapped) => Some(wrapped),
        None => e.source(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_told_once_each_looking_into_io_errors() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("error sending request")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let inner = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let tls = std::io::Error::other(Outer(std::io::Error::other(
            "invalid peer certificate: UnknownIssuer",
        )));
        assert_eq!(with_causes(&Outer(inner)), "error sending request: refused");
        assert_eq!(
            with_causes(&tls),
            "error sending request: invalid peer certificate: UnknownIssuer"
        );
    }

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {c}");
            assert_eq!(ErrorCode::parse(c.as_str()), Some(*c));
        }
        assert_eq!(ErrorCode::parse("nope"), None);
    }

    #[test]
    fn a_cause_is_kept_and_told() {
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "No space left on device");
        let e = Error::caused(ErrorCode::StorageUnavailable, "cannot write /d/x", io);
        assert_eq!(e.message, "cannot write /d/x: No space left on device");
        let source = std::error::Error::source(&e).expect("a source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("the io::Error itself");
        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
        // Equality is of what the wire carries.
        assert_eq!(e, Error::new(ErrorCode::StorageUnavailable, e.message.clone()));
    }

    #[test]
    fn recorded_errors_read_back() {
        let e = Error::new(ErrorCode::ChecksumMismatch, "x: reads as y");
        assert_eq!(Error::parse_recorded(&e.to_string()), e);
        assert_eq!(Error::parse_recorded("gone"), Error::internal("gone"));
        assert_eq!(Error::parse_recorded("nope: gone"), Error::internal("nope: gone"));
    }
}
