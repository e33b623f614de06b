//! Retries: the one place in weft that tries again. A failure is classified once, as
//! [`Failed`] (may another attempt succeed?), from its error code
//! (`ErrorCode::is_temporary`) and what the engine's own checks found; temporary ones are
//! retried with exponential backoff up to [`RetryPolicy::attempts`], per file and, for a
//! large file, per piece.

use super::Engine;
use std::time::Duration;
use weft_types::{Checksum, Endpoint, Error, ErrorCode, FileState, TransferFile};

/// How temporary errors are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts per file (and per piece of a large file), the first included.
    pub attempts: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 8,
            first_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`, doubling from `first_backoff`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let d = self
            .first_backoff
            .saturating_mul(1 << attempt.saturating_sub(1).min(16));
        d.min(self.max_backoff)
    }
}

/// Why an attempt at a file failed, and whether another attempt may succeed.
#[derive(Debug)]
pub(super) struct Failed {
    pub(super) error: Error,
    pub(super) retry: bool,
}

impl From<Error> for Failed {
    /// Temporary faults may pass; a checksum mismatch may be damage on the way, which the
    /// next attempt tells from a damaged source by hashing the source itself.
    fn from(error: Error) -> Self {
        let retry = error.code.is_temporary() || error.code == ErrorCode::ChecksumMismatch;
        Failed { error, retry }
    }
}

impl Engine {
    /// Records one attempt's outcome in `f`; whether to try again.
    pub(super) fn settle(&self, f: &mut TransferFile, outcome: Result<Checksum, Failed>) -> bool {
        match outcome {
            Ok(sum) => {
                f.state = FileState::Done;
                f.bytes_done = f.size;
                f.checksum = Some(sum);
                // `error` stays: the last error of a retried file, as the API documents.
                f.resume = None;
                false
            }
            Err(Failed { mut error, retry }) => {
                let again = retry && f.attempts < self.retry.attempts;
                tracing::warn!(file = %f.source, attempt = f.attempts, error = %error, retry = again, "transfer file failed");
                if !again {
                    f.state = FileState::Failed;
                    if retry {
                        error.message = format!("{} (gave up after {} attempts)", error.message, f.attempts);
                    }
                }
                f.error = Some(error);
                again
            }
        }
    }

    /// A piece is retried on its own, so that a large file resumes at its missing pieces.
    pub(super) async fn retrying<T, F, Fut>(&self, at: &Endpoint, index: u64, mut op: F) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let mut attempt = 1;
        loop {
            match op().await {
                Err(e) if e.code.is_temporary() && attempt < self.retry.attempts => {
                    tracing::warn!(file = %at, piece = index, attempt, error = %e, "piece failed; retrying");
                    tokio::time::sleep(self.retry.backoff(attempt)).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::check::check_source;

    /// A source that no longer hashes to its recorded checksum is not read again: its
    /// failure is final, where a mismatch found by the destination is retried.
    #[test]
    fn a_damaged_source_is_final_a_damaged_write_is_not() {
        let at = Endpoint::parse("/z/f").unwrap();
        let (a, b) = (
            Checksum::blake3(&blake3::hash(b"a")),
            Checksum::blake3(&blake3::hash(b"b")),
        );
        let f = check_source(&at, Some(&a), &b).unwrap_err();
        assert_eq!((f.error.code, f.retry), (ErrorCode::ChecksumMismatch, false));
        assert!(check_source(&at, Some(&a), &a).is_ok() && check_source(&at, None, &b).is_ok());
        let written = Failed::from(Error::new(ErrorCode::ChecksumMismatch, "x"));
        assert!(written.retry);
        assert!(!Failed::from(Error::not_found("x")).retry);
    }
}
