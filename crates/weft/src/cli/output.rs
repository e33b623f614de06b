//! How results and failures reach the user: one error line with a stable code on stderr,
//! a hint where one helps, and an exit code that means something (listed in `weft --help`).

use std::fmt;
use weft_client::ClientError;

pub const EXIT_FAILURE: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_NOT_FOUND: u8 = 3;
pub const EXIT_UNAUTHENTICATED: u8 = 4;
pub const EXIT_FORBIDDEN: u8 = 5;
pub const EXIT_CONFLICT: u8 = 6;
pub const EXIT_INTEGRITY: u8 = 7;
pub const EXIT_UNREACHABLE: u8 = 8;
pub const EXIT_TLS: u8 = 9;
pub const EXIT_QUOTA: u8 = 10;
/// Interrupted (as a shell reports SIGINT): `weft watch` cancelled by a second Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The exit codes as `weft --help` lists them.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success
  1  failure not covered below
  2  usage error (bad flags or arguments)
  3  not found
  4  not authenticated (no token, or the zone rejected it)
  5  permission denied
  6  conflict: already exists, not empty, not a collection
  7  checksum or integrity failure
  8  cannot reach the zone
  9  TLS failed: the zone's certificate is not trusted (see WEFT_CA_FILE), or it does not speak TLS
 10  a quota would be exceeded (`weft quota ls` shows what is used)
130  interrupted: a second Ctrl-C cancelled `weft watch`'s files in flight";

const LOGIN_HINT: &str = "set WEFT_TOKEN or run `weft login URL --token T`";
const TLS_HINT: &str =
    "if a private CA signed the zone's certificate, point WEFT_CA_FILE at that CA's PEM file \
(or run `weft login URL --ca-file FILE`); check that the URL's host is a name the certificate is for";

/// A failed command: what to print and how to exit.
#[derive(Debug)]
pub struct Failure {
    pub exit: u8,
    pub code: String,
    pub message: String,
    pub hint: Option<String>,
}

pub type Result<T = (), E = Failure> = std::result::Result<T, E>;

impl Failure {
    pub fn new(exit: u8, code: &str, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            code: code.to_owned(),
            message: message.into(),
            hint: None,
        }
    }

    /// A usage mistake clap could not catch (it exits 2 for its own).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(EXIT_USAGE, "usage", message)
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }

    /// Prefixes the message with what was being done (e.g. the file of a batch).
    pub fn context(mut self, what: impl fmt::Display) -> Failure {
        self.message = format!("{what}: {}", self.message);
        self
    }

    /// Prints the failure as `weft: error: <message> (<code>)` plus any hint.
    pub fn print(&self) {
        eprintln!("weft: error: {} ({})", self.message, self.code);
        if let Some(h) = &self.hint {
            eprintln!("weft: hint: {h}");
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Failure {
        Failure::decorated(exit_code(&e), e.code(), e.to_string())
    }
}

/// A file of a batch that failed, as the transfer engine reported it.
impl From<weft_types::Error> for Failure {
    fn from(e: weft_types::Error) -> Failure {
        Failure::decorated(exit_code_of(e.code), e.code.as_str(), e.message)
    }
}

impl Failure {
    /// The failure with what its exit code calls for: a word on what kind it is, a hint.
    fn decorated(exit: u8, code: &str, message: String) -> Failure {
        let message = match exit {
            EXIT_UNAUTHENTICATED => format!("not authenticated: {message}"),
            EXIT_FORBIDDEN => format!("permission denied: {message}"),
            _ => message,
        };
        let hint = match exit {
            EXIT_UNAUTHENTICATED => Some(LOGIN_HINT.to_owned()),
            EXIT_TLS => Some(TLS_HINT.to_owned()),
            _ => None,
        };
        Failure {
            exit,
            code: code.to_owned(),
            message,
            hint,
        }
    }
}

pub fn exit_code(e: &ClientError) -> u8 {
    match e {
        ClientError::Unreachable { .. } => EXIT_UNREACHABLE,
        ClientError::Tls { .. } => EXIT_TLS,
        ClientError::Integrity { .. } => EXIT_INTEGRITY,
        ClientError::Api { status, code, .. } => match weft_types::ErrorCode::parse(code) {
            Some(code) => exit_code_of(code),
            // A code this CLI does not know (a newer zone): its status says what kind.
            None => match status {
                Some(401) => EXIT_UNAUTHENTICATED,
                Some(403) => EXIT_FORBIDDEN,
                Some(404) => EXIT_NOT_FOUND,
                Some(409) => EXIT_CONFLICT,
                _ => EXIT_FAILURE,
            },
        },
        _ => EXIT_FAILURE,
    }
}

/// The exit code of a zone's stable error code: the codes a script may act on have one
/// of their own.
pub fn exit_code_of(code: weft_types::ErrorCode) -> u8 {
    use weft_types::ErrorCode as C;
    match code {
        C::QuotaExceeded => EXIT_QUOTA,
        C::Unauthenticated | C::TokenExpired => EXIT_UNAUTHENTICATED,
        C::Forbidden | C::CsrfRejected => EXIT_FORBIDDEN,
        C::NotFound => EXIT_NOT_FOUND,
        C::ChecksumMismatch | C::SizeMismatch => EXIT_INTEGRITY,
        C::ZoneUnreachable => EXIT_UNREACHABLE,
        C::AlreadyExists | C::NotACollection | C::IsACollection | C::CollectionNotEmpty | C::Conflict => {
            EXIT_CONFLICT
        }
        // Bad requests and faults of the zone: the message tells which.
        _ => EXIT_FAILURE,
    }
}

/// A failure as `--json` prints it.
#[derive(Debug, serde::Serialize)]
pub struct ErrorJson {
    pub code: String,
    pub message: String,
}

impl From<&Failure> for ErrorJson {
    fn from(f: &Failure) -> ErrorJson {
        ErrorJson {
            code: f.code.clone(),
            message: f.message.clone(),
        }
    }
}

/// What became of one path a command changed, for `--json`: done, or why not.
#[derive(Debug, serde::Serialize)]
pub struct PathResult {
    pub path: String,
    /// Where it came from (`mv`, `cp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorJson>,
}

/// With `json`, prints `results` (and how many failed) on stdout; then the command's
/// outcome as without `--json`: the last failure is the command's error, those before it
/// are printed on stderr.
pub fn report_paths(json: bool, results: Vec<PathResult>, failures: Vec<Failure>) -> Result {
    if json {
        print_json(&serde_json::json!({"failed": failures.len(), "results": results}))?;
    }
    let mut failures = failures;
    let Some(last) = failures.pop() else { return Ok(()) };
    for f in &failures {
        f.print();
    }
    Err(last)
}

/// Prints `value` as pretty JSON on stdout (for `--json`).
pub fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> Result {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::new(EXIT_FAILURE, "internal", format!("cannot encode JSON: {e}")))?;
    println!("{text}");
    Ok(())
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` UTC (no time-zone database needed,
/// and the same on every machine of a federation).
pub fn format_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Bytes for people: `1.5 MiB`.
pub fn human_bytes(n: u64) -> String {
    indicatif::HumanBytes(n).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16, code: &str) -> ClientError {
        ClientError::Api {
            status: Some(status),
            code: code.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn exit_codes_follow_the_table() {
        assert_eq!(exit_code(&api(404, "not_found")), EXIT_NOT_FOUND);
        assert_eq!(exit_code(&api(401, "token_expired")), EXIT_UNAUTHENTICATED);
        assert_eq!(exit_code(&api(403, "forbidden")), EXIT_FORBIDDEN);
        assert_eq!(exit_code(&api(409, "already_exists")), EXIT_CONFLICT);
        assert_eq!(exit_code(&api(409, "collection_not_empty")), EXIT_CONFLICT);
        assert_eq!(exit_code(&api(400, "checksum_mismatch")), EXIT_INTEGRITY);
        assert_eq!(exit_code(&api(400, "invalid_path")), EXIT_FAILURE);
        // A code this CLI does not know is judged by its status.
        assert_eq!(exit_code(&api(409, "newer_conflict")), EXIT_CONFLICT);
        assert_eq!(exit_code(&api(500, "newer_fault")), EXIT_FAILURE);
        let e = ClientError::Unreachable {
            url: "u".into(),
            cause: "c".into(),
        };
        assert_eq!(exit_code(&e), EXIT_UNREACHABLE);
        let e = ClientError::Tls {
            url: "u".into(),
            cause: "invalid peer certificate: UnknownIssuer".into(),
        };
        assert_eq!(exit_code(&e), EXIT_TLS);
        assert!(Failure::from(e).hint.unwrap().contains("WEFT_CA_FILE"));
    }

    #[test]
    fn auth_failures_carry_a_hint() {
        let f = Failure::from(api(401, "unauthenticated"));
        assert_eq!(f.message, "not authenticated: m");
        assert!(f.hint.unwrap().contains("weft login"));
        let f = Failure::from(api(403, "forbidden"));
        assert_eq!(f.to_string(), "permission denied: m (forbidden)");
    }

    #[test]
    fn dates() {
        assert_eq!(format_millis(0), "1970-01-01 00:00:00");
        assert_eq!(format_millis(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(format_millis(1_700_000_000_123), "2023-11-14 22:13:20");
    }
}
