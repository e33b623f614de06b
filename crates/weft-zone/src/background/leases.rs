//! This server's share of the zone's background work. Several `weft serve` processes may
//! share one catalog; every unit of background work — a managed transfer, a zone-wide
//! worker such as the scrubber — runs under a lease in the catalog, so it runs on exactly
//! one of them. The [`LeaseKeeper`] extends the leases this server holds every third of
//! their lifetime; a server that dies stops extending them, and once they expire another
//! server takes the work over (a transfer resumes from its journal, pieces included).

use crate::background::worker::{self, Worker, WorkerState};
use crate::Metrics;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::Notify;
use weft_catalog::Catalog;
use weft_types::Error;

/// How long a lease lasts unless extended ([`crate::ZoneConfig::lease_ttl`]): how long the
/// work of a server that died waits before another takes it over.
pub const LEASE_TTL_DEFAULT: Duration = Duration::from_secs(30);

/// The leases this server holds, and its name as their holder.
pub(crate) struct LeaseKeeper {
    catalog: Arc<dyn Catalog>,
    /// `host/pid/random`: unique per process, and says where the work runs.
    pub(crate) holder: String,
    pub(crate) ttl: Duration,
    held: Mutex<HashMap<String, Arc<Held>>>,
    metrics: Arc<Metrics>,
}

/// One lease held here; `lost` once another server has it.
#[derive(Default)]
struct Held {
    lost: AtomicBool,
    notify: Notify,
}

impl Held {
    fn lose(&self) {
        self.lost.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

impl LeaseKeeper {
    pub(crate) fn new(catalog: Arc<dyn Catalog>, ttl: Duration, metrics: Arc<Metrics>) -> Arc<LeaseKeeper> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "localhost".into());
        let random = uuid::Uuid::new_v4().simple().to_string();
        Arc::new(LeaseKeeper {
            catalog,
            holder: format!("{host}/{}/{}", std::process::id(), &random[..8]),
            ttl,
            held: Mutex::new(HashMap::new()),
            metrics,
        })
    }

    /// Takes the lease `name` for as long as the returned guard lives (it is extended
    /// meanwhile); `None` if another server holds it.
    pub(crate) async fn take(self: &Arc<Self>, name: String) -> Result<Option<LeaseGuard>, Error> {
        if !self.catalog.take_lease(&name, &self.holder, self.ttl).await? {
            return Ok(None);
        }
        let held = Arc::new(Held::default());
        self.held
            .lock()
            .expect("not poisoned")
            .insert(name.clone(), held.clone());
        Ok(Some(LeaseGuard {
            keeper: self.clone(),
            name,
            held,
        }))
    }

    /// Whether this server holds the lease `name` of a zone-wide worker, taking it if it
    /// is free. Once taken it is kept (and extended) until another server has it.
    pub(crate) async fn hold(&self, name: &str) -> Result<bool, Error> {
        let kept = self.held.lock().expect("not poisoned").get(name).cloned();
        if kept.is_some_and(|h| !h.lost.load(Ordering::SeqCst)) {
            return Ok(true);
        }
        if !self.catalog.take_lease(name, &self.holder, self.ttl).await? {
            return Ok(false);
        }
        self.held
            .lock()
            .expect("not poisoned")
            .insert(name.to_owned(), Arc::new(Held::default()));
        Ok(true)
    }

    /// Registers this server as one of the zone's (the lease `server:<holder>`, kept while
    /// it runs); how many other servers of the zone are running now.
    pub(crate) async fn join_zone(&self) -> Result<usize, Error> {
        let me = format!("server:{}", self.holder);
        if !self.hold(&me).await? {
            return Err(Error::internal(format!(
                "the lease {me} is held by another process"
            )));
        }
        let now = crate::now_ms();
        let servers: Vec<_> = self
            .catalog
            .leases()
            .await?
            .into_iter()
            .filter(|l| l.name.starts_with("server:") && l.name != me)
            .collect();
        // Each start of a server leaves its name behind: those gone for an hour are forgotten.
        for gone in servers.iter().filter(|l| l.expires < now - 3_600_000) {
            self.catalog.release_lease(&gone.name, &gone.holder).await?;
        }
        Ok(servers.iter().filter(|l| l.expires > now).count())
    }

    pub(crate) fn held_count(&self) -> usize {
        self.held.lock().expect("not poisoned").len()
    }

    /// Extends every lease held here; those found lost are told so. How many are held.
    async fn renew(&self) -> Result<u64, Error> {
        let names: Vec<String> = self.held.lock().expect("not poisoned").keys().cloned().collect();
        if names.is_empty() {
            return Ok(0);
        }
        let lost = self.catalog.renew_leases(&names, &self.holder, self.ttl).await?;
        let mut held = self.held.lock().expect("not poisoned");
        for name in &lost {
            if let Some(h) = held.remove(name) {
                tracing::warn!(lease = %name, holder = %self.holder, "lease lost: another server took this work over");
                self.metrics.leases_lost.inc();
                h.lose();
            }
        }
        Ok(held.len() as u64)
    }
}

/// A lease on one unit of work, given up when dropped.
pub(crate) struct LeaseGuard {
    keeper: Arc<LeaseKeeper>,
    name: String,
    held: Arc<Held>,
}

impl LeaseGuard {
    /// Resolves once another server has taken the lease over (this one stalled past its
    /// expiry): the work must stop here.
    pub(crate) async fn lost(&self) {
        loop {
            let notified = self.held.notify.notified();
            if self.held.lost.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        let still_ours = {
            let mut held = self.keeper.held.lock().expect("not poisoned");
            match held.get(&self.name) {
                Some(h) if Arc::ptr_eq(h, &self.held) => held.remove(&self.name).is_some(),
                _ => false,
            }
        };
        if still_ours {
            let (keeper, name) = (self.keeper.clone(), std::mem::take(&mut self.name));
            // Released at once so another server need not wait for the expiry; if the
            // release fails, the expiry frees it.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    if let Err(e) = keeper.catalog.release_lease(&name, &keeper.holder).await {
                        tracing::debug!(lease = %name, error = %e, "lease not released; it expires");
                    }
                });
            }
        }
    }
}

/// Extends this server's leases every third of their lifetime.
pub(crate) fn start_keeper(keeper: &Arc<LeaseKeeper>, state: Arc<WorkerState>) {
    let every = keeper.ttl / 3;
    worker::spawn(
        state,
        Renewer {
            keeper: Arc::downgrade(keeper),
            tick: tokio::time::interval(every),
        },
    );
}

struct Renewer {
    keeper: Weak<LeaseKeeper>,
    tick: tokio::time::Interval,
}

#[async_trait]
impl Worker for Renewer {
    async fn work(&mut self) -> Result<u64, Error> {
        match self.keeper.upgrade() {
            Some(k) => k.renew().await,
            None => Ok(0),
        }
    }

    async fn wait_for_work(&mut self) -> bool {
        self.tick.tick().await;
        self.keeper.strong_count() > 0
    }
}

/// A zone-wide worker that runs on one server of the zone at a time: its passes are made
/// only while this server holds the lease `worker:<name>`; the other servers stand by and
/// take over when that lease expires.
pub(crate) struct Leased<W> {
    pub(crate) inner: W,
    pub(crate) name: &'static str,
    pub(crate) keeper: Weak<LeaseKeeper>,
    standby: bool,
}

impl<W> Leased<W> {
    pub(crate) fn new(inner: W, name: &'static str, keeper: &Arc<LeaseKeeper>) -> Self {
        Leased {
            inner,
            name,
            keeper: Arc::downgrade(keeper),
            standby: false,
        }
    }
}

#[async_trait]
impl<W: Worker> Worker for Leased<W> {
    async fn work(&mut self) -> Result<u64, Error> {
        let Some(keeper) = self.keeper.upgrade() else {
            return Ok(0);
        };
        self.standby = !keeper.hold(&format!("worker:{}", self.name)).await?;
        if self.standby {
            return Ok(0);
        }
        self.inner.work().await
    }

    async fn wait_for_work(&mut self) -> bool {
        self.inner.wait_for_work().await
    }

    fn standby(&self) -> bool {
        self.standby
    }
}
