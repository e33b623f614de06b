//! Progress reporting and the bridge to blocking file I/O, shared by uploads and downloads.

use crate::error::ClientError;
use std::sync::Arc;
use tokio::task::JoinSet;

/// Called with the bytes moved since the last call: positive as bytes go, negative when a
/// piece that failed is taken back before it is tried again. Called from several tasks at
/// once, so it must be cheap and thread-safe (a progress bar's `inc` is).
pub type Progress = Arc<dyn Fn(i64) + Send + Sync>;

pub(crate) fn report(progress: &Option<Progress>, delta: i64) {
    if let (Some(p), true) = (progress, delta != 0) {
        p(delta)
    }
}

/// Runs blocking file I/O off the async threads. A panic there is a bug: it is resumed
/// here rather than turned into an error a user could not act on.
pub(crate) async fn blocking<T, F>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("blocking file I/O was cancelled: {e}"),
    }
}

/// Lower-case hex of a BLAKE3 chaining value, as `PieceReceipt.cv` carries it.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Waits for the streams of one file. The first failure is final (each stream already
/// retried), so the other streams are cancelled at once instead of finishing pieces that
/// would be thrown away.
pub(crate) async fn join_streams(mut streams: JoinSet<Result<(), ClientError>>) -> Result<(), ClientError> {
    let mut first_error = None;
    while let Some(joined) = streams.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                if first_error.is_none() {
                    streams.abort_all();
                    first_error = Some(e);
                }
            }
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled by `abort_all` above.
            Err(_) => {}
        }
    }
    first_error.map_or(Ok(()), Err)
}
