//! What can go wrong talking to a zone, kept apart by what the caller can do about it:
//! the zone said no (`Api`, with its stable code), the zone could not be reached, the
//! connection broke, a local file failed, or bytes did not hash to what they should.

use std::path::PathBuf;
use weft_types::wire::ErrorBody;
use weft_types::{Error, ErrorCode};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The zone said no: with an error status and (normally) an `ErrorBody`, or for one
    /// file of a batch whose answer as a whole succeeded (no status of its own).
    #[error("{message}")]
    Api {
        status: Option<u16>,
        code: String,
        message: String,
    },
    /// No connection could be made at all: wrong URL, zone down, DNS.
    #[error("cannot reach zone at {url}: {cause} — is `weft serve` running?")]
    Unreachable { url: String, cause: String },
    /// The TLS handshake failed: most often a certificate this client does not trust
    /// (signed by a CA that is neither a system root nor in the CA file, or for another
    /// name), or a zone that does not speak TLS.
    #[error("TLS with the zone at {url} failed: {cause}")]
    Tls { url: String, cause: String },
    /// A connection was made but broke or timed out while talking.
    #[error("connection to the zone at {url} failed: {cause}")]
    Transport { url: String, cause: String },
    /// A local file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Local {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Bytes hash to something else than they should.
    #[error("checksum mismatch for {what}: expected {expected}, got {actual}")]
    Integrity {
        what: String,
        expected: String,
        actual: String,
    },
    /// The request cannot be made as asked (caught before anything was sent).
    #[error("{0}")]
    Invalid(String),
    /// The zone answered something this client does not understand.
    #[error("unexpected answer from the zone: {0}")]
    Protocol(String),
}

impl ClientError {
    /// A stable code: the zone's for `Api`, a client-side one otherwise.
    pub fn code(&self) -> &str {
        match self {
            ClientError::Api { code, .. } => code,
            ClientError::Unreachable { .. } => "unreachable",
            ClientError::Tls { .. } => "tls",
            ClientError::Transport { .. } => "transport",
            ClientError::Local { .. } => "local_io",
            ClientError::Integrity { .. } => "checksum_mismatch",
            ClientError::Invalid(_) => "invalid_argument",
            ClientError::Protocol(_) => "protocol",
        }
    }

    /// The HTTP status, when the zone answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => *status,
            _ => None,
        }
    }

    /// The zone's code as the shared vocabulary knows it.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Api { code, .. } => ErrorCode::parse(code),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404) || self.error_code() == Some(ErrorCode::NotFound)
    }

    /// Whether sending the same request again may succeed: the fault was in the network or
    /// a temporarily unavailable zone, not in the request.
    pub fn is_temporary(&self) -> bool {
        match self {
            ClientError::Transport { .. } | ClientError::Unreachable { .. } => true,
            ClientError::Api { status, code, .. } => {
                matches!(status, Some(502..=504)) || ErrorCode::parse(code).is_some_and(|c| c.is_temporary())
            }
            _ => false,
        }
    }

    /// As the domain's error, for the transfer engine: the zone's stable code when it
    /// answered; bytes that hashed wrong as `checksum_mismatch`; a fault on the way as a
    /// temporary `zone_unreachable` (named after `peer`, a federated zone, if given).
    pub fn into_error(self, peer: Option<&str>) -> Error {
        if let Some(code) = self.error_code() {
            return Error::new(code, self.to_string());
        }
        match self {
            ClientError::Integrity { .. } => Error::new(ErrorCode::ChecksumMismatch, self.to_string()),
            ClientError::Invalid(m) => Error::invalid(m),
            other => Error::new(
                ErrorCode::ZoneUnreachable,
                match peer {
                    Some(p) => format!("zone {p}: {other}"),
                    None => other.to_string(),
                },
            ),
        }
    }

    pub(crate) fn local(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ClientError {
        let path = path.into();
        move |source| ClientError::Local { path, source }
    }

    /// Turns a reqwest failure into `Unreachable` (nothing was connected) or `Transport`.
    pub(crate) fn from_reqwest(zone_url: &str, e: reqwest::Error) -> ClientError {
        if let Some(cause) = tls_failure(&e) {
            return ClientError::Tls {
                url: zone_url.to_owned(),
                cause,
            };
        }
        let cause = root_cause(&e);
        if e.is_connect() {
            ClientError::Unreachable {
                url: zone_url.to_owned(),
                cause,
            }
        } else {
            // JSON is decoded by the client itself, so reqwest's own "decode" errors are
            // bodies cut short ("end of file before message length reached"): transport.
            ClientError::Transport {
                url: zone_url.to_owned(),
                cause,
            }
        }
    }

    /// The error of one file of a bundle, as the zone stated it.
    pub(crate) fn from_body(b: ErrorBody) -> ClientError {
        ClientError::Api {
            status: None,
            code: b.code,
            message: b.message,
        }
    }

    /// Builds the error of a non-success answer from its status and body.
    pub(crate) fn from_answer(status: u16, body: &[u8]) -> ClientError {
        match serde_json::from_slice::<ErrorBody>(body) {
            Ok(b) => ClientError::Api {
                status: Some(status),
                code: b.code,
                message: b.message,
            },
            // Not our server's error format (a proxy, an old zone): keep what it said.
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                let text = text.trim();
                let message = if text.is_empty() {
                    format!("the zone answered HTTP {status}")
                } else {
                    format!(
                        "the zone answered HTTP {status}: {}",
                        text.chars().take(200).collect::<String>()
                    )
                };
                ClientError::Api {
                    status: Some(status),
                    code: code_for_status(status).to_owned(),
                    message,
                }
            }
        }
    }
}

/// An error of the transfer engine (a file of a batch), as the zone's answer would carry it.
impl From<Error> for ClientError {
    fn from(e: Error) -> ClientError {
        ClientError::Api {
            status: None,
            code: e.code.as_str().to_owned(),
            message: e.message,
        }
    }
}

/// The code of the status a server without an `ErrorBody` answered, so that callers can
/// branch on codes alone.
fn code_for_status(status: u16) -> &'static str {
    match status {
        401 => "unauthenticated",
        403 => "forbidden",
        404 => "not_found",
        409 => "conflict",
        411 => "length_required",
        416 => "range_not_satisfiable",
        400..=499 => "invalid_argument",
        502 => "zone_unreachable",
        503 => "storage_unavailable",
        _ => "internal",
    }
}

/// What rustls said, if the failure was TLS's. rustls' error travels inside an
/// `io::Error`, itself inside another (hyper-util's connector), and `io::Error::source()`
/// skips what it wraps, so each `io::Error` is looked into.
fn tls_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    if let Some(tls) = e.downcast_ref::<rustls::Error>() {
        return Some(tls.to_string());
    }
    let inner = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
        .and_then(|inner| tls_failure(inner));
    inner.or_else(|| e.source().and_then(tls_failure))
}

/// The innermost cause, which is the useful part ("connection refused") of reqwest's
/// layered messages ("error sending request for url (...)").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = cur.source() {
        if let Some(io) = next.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return "connection refused".into(),
                std::io::ErrorKind::ConnectionReset => return "connection reset".into(),
                std::io::ErrorKind::TimedOut => return "timed out".into(),
                _ => {}
            }
        }
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_error_bodies() {
        let e = ClientError::from_answer(404, br#"{"code":"not_found","message":"/z/a does not exist"}"#);
        assert_eq!(e.code(), "not_found");
        assert_eq!(e.status(), Some(404));
        assert_eq!(e.to_string(), "/z/a does not exist");
        assert!(e.is_not_found());
        assert!(!e.is_temporary());
    }

    #[test]
    fn foreign_bodies_keep_status_and_text() {
        // A gateway's 502 means what a zone's own 502 means: the zone behind it is unreachable.
        let e = ClientError::from_answer(502, b"<html>Bad Gateway</html>");
        assert_eq!(e.code(), "zone_unreachable");
        assert!(e.to_string().contains("HTTP 502"));
        assert!(e.is_temporary());
        assert_eq!(ClientError::from_answer(401, b"").code(), "unauthenticated");
    }

    #[test]
    fn temporary_codes() {
        let e = ClientError::from_answer(503, br#"{"code":"storage_unavailable","message":"x"}"#);
        assert!(e.is_temporary());
        let e = ClientError::from_answer(400, br#"{"code":"incomplete_body","message":"x"}"#);
        assert!(e.is_temporary());
    }
}
