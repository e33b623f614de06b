//! The runtime the SDK's calls run on, and [`wait`], which runs one with the GIL released
//! and stays responsive to Ctrl-C.

use crate::Failure;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// How often the waiting thread takes the GIL back: for progress and for signals.
const TICK: Duration = Duration::from_millis(100);

/// How long a cancelled data call may take to drop what it staged before it is abandoned.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// The runtime of this process. A child made by `fork` (multiprocessing, dask workers)
/// inherits none of its threads, so it gets a runtime of its own; the parent's copy is
/// left alone, as dropping it would wait for threads that do not exist here.
fn runtime() -> Arc<Runtime> {
    static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, rt)) = slot.as_ref() {
        if *owner == pid {
            return rt.clone();
        }
    }
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("weft-io")
            .build()
            .expect("a tokio runtime"),
    );
    if let Some(inherited) = slot.replace((pid, rt.clone())) {
        std::mem::forget(inherited);
    }
    rt
}

/// Runs `fut` to its end with the GIL released, calling `tick` (with the GIL) every
/// [`TICK`]. Ctrl-C (any signal whose handler raises) stops it: with `cancel`, the flag
/// is set and the call is given [`CANCEL_GRACE`] to drop its staged uploads and part
/// files; without, or at a second Ctrl-C, the task is dropped at once. The handler's
/// exception (KeyboardInterrupt) is then raised.
pub(crate) fn wait<T, F>(
    py: Python<'_>,
    fut: F,
    cancel: Option<Arc<AtomicBool>>,
    mut tick: impl FnMut(Python<'_>) -> PyResult<()>,
) -> PyResult<T>
where
    F: Future<Output = Result<T, Failure>> + Send + 'static,
    T: Send + 'static,
{
    let (tx, mut rx) = mpsc::channel();
    let task = runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    let mut interrupted: Option<(PyErr, Instant)> = None;
    loop {
        // The receiver goes into the closure and back: it may be moved, not shared.
        let (got, back) = py.detach(move || (rx.recv_timeout(TICK), rx));
        rx = back;
        match got {
            Ok(result) => {
                if let Some((e, _)) = interrupted {
                    return Err(e);
                }
                tick(py)?;
                return result.map_err(|f| f.into_py(py));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // The task ended without sending: it panicked. Say with what, for a report.
                if let Some((e, _)) = interrupted {
                    return Err(e);
                }
                let why = match runtime().block_on(task) {
                    Err(e) if e.is_panic() => panic_message(e.into_panic()),
                    _ => "ended without an answer".to_owned(),
                };
                return Err(PyRuntimeError::new_err(format!(
                    "weft: the call failed inside the client (a bug; please report it): {why}"
                )));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some((_, since)) = &interrupted {
            if since.elapsed() > CANCEL_GRACE || py.check_signals().is_err() {
                task.abort();
                return Err(interrupted.expect("set").0);
            }
            continue;
        }
        if let Err(e) = py.check_signals() {
            match &cancel {
                Some(flag) => {
                    flag.store(true, Ordering::SeqCst);
                    interrupted = Some((e, Instant::now()));
                }
                None => {
                    task.abort();
                    return Err(e);
                }
            }
            continue;
        }
        if let Err(e) = tick(py) {
            // A progress callback that raises stops the call as Ctrl-C does.
            if let Some(flag) = &cancel {
                flag.store(true, Ordering::SeqCst);
                interrupted = Some((e, Instant::now()));
            } else {
                task.abort();
                return Err(e);
            }
        }
    }
}

/// What a panic said, when it said it in text.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map_or_else(|| "a panic".to_owned(), |s| (*s).to_owned()),
    }
}
