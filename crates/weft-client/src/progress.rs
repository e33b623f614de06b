//! Progress reporting and the bridge to blocking file I/O.

use std::sync::Arc;

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
