//! Background loops of a zone. Each is one [`Worker`] whose state operators can read
//! (`GET /api/v1/zone`): how often it ran, how much it did, its last error.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
pub struct Worker {
    name: &'static str,
    runs: AtomicU64,
    items: AtomicU64,
    last_run: AtomicI64,
    last_error: Mutex<Option<String>>,
}

/// A snapshot of a worker's state.
#[derive(Debug, Clone)]
pub struct WorkerStatus {
    pub name: &'static str,
    pub runs: u64,
    pub items: u64,
    pub last_run: Option<i64>,
    pub last_error: Option<String>,
}

impl Worker {
    pub fn new(name: &'static str) -> Arc<Worker> {
        Arc::new(Worker {
            name,
            ..Default::default()
        })
    }

    /// Records one run that handled `items` things, or failed.
    pub fn record(&self, items: u64, error: Option<String>) {
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
            runs: self.runs.load(Ordering::Relaxed),
            items: self.items.load(Ordering::Relaxed),
            last_run: (last > 0).then_some(last),
            last_error: self.last_error.lock().expect("not poisoned").clone(),
        }
    }
}
