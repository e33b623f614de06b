//! Background work of a zone. Each kind is a [`Worker`] (one pass of work, and how it waits
//! for the next); [`spawn`] runs it in the one loop every worker shares, which records each
//! pass in the worker's [`WorkerState`], read by operators (`GET /api/v1/zone`).

use async_trait::async_trait;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use weft_types::{Error, ErrorCode};

/// A kind of background work.
#[async_trait]
pub(crate) trait Worker: Send + 'static {
    /// One pass: how many things it handled (objects committed, replicas checked, ...). An
    /// error is recorded as the worker's last error; the worker goes on with its next pass.
    async fn work(&mut self) -> Result<u64, Error>;

    /// Waits until the next pass is due: a timer, a wake-up, a job arriving. `false` when
    /// there will be none (its zone is gone, its queue closed): the worker stops.
    async fn wait_for_work(&mut self) -> bool;

    /// Whether another server of the zone does this work for now (its last pass found the
    /// lease held elsewhere); such a pass is not counted.
    fn standby(&self) -> bool {
        false
    }
}

/// A kind of background work that blocks in its passes: it runs on a thread of its own
/// ([`spawn_thread`]), not on a task.
pub(crate) trait BlockingWorker: Send + 'static {
    /// One pass, as [`Worker::work`].
    fn work(&mut self) -> Result<u64, Error>;

    /// Waits until the next pass is due, as [`Worker::wait_for_work`].
    fn wait_for_work(&mut self) -> bool;
}

/// Runs `worker` on a thread of its own until it stops, recording every pass in `state` as
/// [`spawn`] does. The thread is in the runtime's context: it may wait for the runtime's
/// futures (`Handle::block_on`).
pub(crate) fn spawn_thread(state: Arc<WorkerState>, mut worker: impl BlockingWorker) -> Result<(), Error> {
    let runtime = tokio::runtime::Handle::current();
    let name = format!("weft-{}", state.name);
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            let _runtime = runtime.enter();
            loop {
                state.set(Phase::Idle);
                if !worker.wait_for_work() {
                    break;
                }
                state.set(Phase::Busy);
                match worker.work() {
                    Ok(n) => state.record(n, None),
                    Err(e) => state.record(0, Some(e.to_string())),
                }
            }
            state.set(Phase::Stopped);
        })
        .map(drop)
        .map_err(|e| {
            Error::caused(
                ErrorCode::Internal,
                format_args!("cannot start the thread {name}"),
                e,
            )
        })
}

/// Runs `worker` until it stops, recording every pass in `state`.
pub(crate) fn spawn(state: Arc<WorkerState>, mut worker: impl Worker) {
    tokio::spawn(async move {
        loop {
            state.set(if worker.standby() {
                Phase::Standby
            } else {
                Phase::Idle
            });
            if !worker.wait_for_work().await {
                break;
            }
            state.set(Phase::Busy);
            match worker.work().await {
                Ok(_) if worker.standby() => {}
                Ok(n) => state.record(n, None),
                Err(e) => state.record(0, Some(e.to_string())),
            }
        }
        state.set(Phase::Stopped);
    });
}

/// Where a worker is: waiting for work, doing a pass, ended, or waiting while another
/// server of the zone does the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Idle = 0,
    Busy = 1,
    Stopped = 2,
    Standby = 3,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Busy => "busy",
            Phase::Stopped => "stopped",
            Phase::Standby => "standby",
        }
    }
}

/// What a worker did so far, updated by [`spawn`]'s loop.
#[derive(Debug)]
pub struct WorkerState {
    name: &'static str,
    phase: AtomicU8,
    runs: AtomicU64,
    items: AtomicU64,
    last_run: AtomicI64,
    last_error: Mutex<Option<String>>,
}

/// A snapshot of a worker's state.
#[derive(Debug, Clone)]
pub struct WorkerStatus {
    pub name: &'static str,
    pub phase: Phase,
    pub runs: u64,
    pub items: u64,
    pub last_run: Option<i64>,
    pub last_error: Option<String>,
}

impl WorkerState {
    pub fn new(name: &'static str) -> Arc<WorkerState> {
        Arc::new(WorkerState {
            name,
            phase: AtomicU8::new(Phase::Idle as u8),
            runs: AtomicU64::new(0),
            items: AtomicU64::new(0),
            last_run: AtomicI64::new(0),
            last_error: Mutex::new(None),
        })
    }

    fn set(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// Records one pass that handled `items` things, or failed.
    pub(crate) fn record(&self, items: u64, error: Option<String>) {
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.items.fetch_add(items, Ordering::Relaxed);
        self.last_run.store(crate::now_ms(), Ordering::Relaxed);
        if let Some(e) = &error {
            tracing::warn!(worker = self.name, error = %e, "worker run failed");
        }
        *self.last_error.lock().expect("not poisoned") = error;
    }

    pub fn status(&self) -> WorkerStatus {
        let last = self.last_run.load(Ordering::Relaxed);
        WorkerStatus {
            name: self.name,
            phase: match self.phase.load(Ordering::Relaxed) {
                0 => Phase::Idle,
                1 => Phase::Busy,
                3 => Phase::Standby,
                _ => Phase::Stopped,
            },
            runs: self.runs.load(Ordering::Relaxed),
            items: self.items.load(Ordering::Relaxed),
            last_run: (last > 0).then_some(last),
            last_error: self.last_error.lock().expect("not poisoned").clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Two passes, the second failing, then it stops.
    struct Twice {
        passes: u32,
    }

    #[async_trait]
    impl Worker for Twice {
        async fn work(&mut self) -> Result<u64, Error> {
            self.passes += 1;
            match self.passes {
                1 => Ok(5),
                _ => Err(Error::internal("disk full")),
            }
        }

        async fn wait_for_work(&mut self) -> bool {
            self.passes < 2
        }
    }

    #[tokio::test]
    async fn every_pass_is_recorded_and_a_failure_is_the_last_error_until_the_next_pass() {
        let state = WorkerState::new("twice");
        spawn(state.clone(), Twice { passes: 0 });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while state.status().phase != Phase::Stopped {
            assert!(tokio::time::Instant::now() < deadline, "{:?}", state.status());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let s = state.status();
        assert_eq!((s.name, s.runs, s.items), ("twice", 2, 5));
        assert!(s.last_run.is_some());
        assert_eq!(s.last_error.as_deref(), Some("internal: disk full"));
    }
}
