//! `weft._weft`, the native half of the Python SDK (python/weft): weft-client and its data
//! path (parallel ranged streams, bundles of small files, BLAKE3 piece hashing, retries)
//! behind a small Python API, so that nothing of the protocol is written again in Python.
//!
//! Every call runs on one tokio runtime with the GIL released; the calling thread wakes
//! every 100 ms to report progress and to notice Ctrl-C ([`wait`]). Results cross as JSON
//! text of the wire types (the Python layer turns them into typed objects) or as bytes.
//! Failures cross as the exception classes of `weft.errors`, chosen by the stable code.

mod calls;
mod data;
mod runtime;

use bytes::Bytes;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use weft_client::config::{ConfigFile, Settings};
use weft_client::{ClientError, MoveOptions};
use weft_types::{ErrorCode, LogicalPath};

/// A failure as the Python layer raises it: the stable code, the message, and the HTTP
/// status when the zone answered.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    code: String,
    message: String,
    status: Option<u16>,
}

impl Failure {
    fn new(code: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure {
            code: code.into(),
            message: message.into(),
            status: None,
        }
    }

    fn invalid(message: impl Into<String>) -> Failure {
        Failure::new("invalid_argument", message)
    }

    /// The exception of `weft.errors` for this code.
    fn into_py(self, py: Python<'_>) -> PyErr {
        let made = py.import("weft.errors").and_then(|m| {
            m.getattr("from_native")?
                .call1((self.code.as_str(), self.message.as_str(), self.status))
        });
        match made {
            Ok(e) => PyErr::from_value(e),
            // The module is used without its Python package: still say what failed.
            Err(_) => PyRuntimeError::new_err(format!("{}: {}", self.code, self.message)),
        }
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Failure {
        Failure {
            code: e.code().to_owned(),
            status: e.status(),
            message: e.to_string(),
        }
    }
}

impl From<weft_types::Error> for Failure {
    fn from(e: weft_types::Error) -> Failure {
        Failure::new(e.code.as_str(), e.message)
    }
}

impl From<weft_client::config::ConfigError> for Failure {
    fn from(e: weft_client::config::ConfigError) -> Failure {
        Failure::new(e.code(), e.to_string())
    }
}

pub(crate) fn logical(path: &str) -> Result<LogicalPath, Failure> {
    LogicalPath::parse(path).map_err(|e| Failure::new(e.code.as_str(), e.message))
}

/// Every stable code the zone answers with, and those of this client (no connection, a
/// broken one, a local file, ...): the Python layer has an exception class for each, and
/// its tests check that none is missing.
fn codes(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    let client = [
        "unreachable",
        "tls",
        "transport",
        "local_io",
        "protocol",
        "no_zone",
        "config",
    ];
    let all: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).chain(client).collect();
    PyTuple::new(py, all)
}

#[pymodule]
fn _weft(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Native>()?;
    m.add("ERROR_CODES", codes(m.py())?)?;
    Ok(())
}

/// One zone, as `weft.Client` and `weft.fs.WeftFileSystem` reach it.
#[pyclass(frozen, module = "weft._weft")]
pub struct Native {
    settings: Settings,
    /// The HTTP client and the process it was made in. A child made by `fork`
    /// (multiprocessing, dask, data loaders) makes its own: the inherited one's pooled
    /// connections are shared with the parent and driven by the parent's runtime, whose
    /// threads the child does not have, so a request on one would never be answered.
    client: Mutex<(u32, weft_client::Client)>,
}

impl Native {
    fn client(&self) -> weft_client::Client {
        let mut slot = self.client.lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        if slot.0 != pid {
            if let Ok(fresh) = self.settings.connect() {
                *slot = (pid, fresh);
            }
        }
        slot.1.clone()
    }
}

#[pymethods]
impl Native {
    /// Resolves the zone and token as the CLI does: the arguments, then `WEFT_URL`,
    /// `WEFT_TOKEN` and `WEFT_CA_FILE`, then the file `weft login` wrote; a token of the
    /// environment or the file goes only to the zone it names (`config::resolve_with`).
    #[new]
    #[pyo3(signature = (url=None, token=None, ca_file=None))]
    fn new(
        py: Python<'_>,
        url: Option<String>,
        token: Option<String>,
        ca_file: Option<String>,
    ) -> PyResult<Self> {
        let made = (|| -> Result<(Settings, weft_client::Client), Failure> {
            // Given both, the saved file has nothing to add (and a broken one no say).
            let file = match (&url, &token) {
                (Some(_), Some(_)) => ConfigFile::default(),
                _ => weft_client::config::load(&weft_client::config::path()?)?,
            };
            let env = |k: &str| std::env::var(k).ok();
            let settings = weft_client::config::resolve_with(url, token, ca_file, &env, file)?;
            let client = settings.connect()?;
            Ok((settings, client))
        })();
        match made {
            Ok((settings, client)) => Ok(Native {
                settings,
                client: Mutex::new((std::process::id(), client)),
            }),
            Err(f) => Err(f.into_py(py)),
        }
    }

    /// The zone's URL(s), as configured.
    #[getter]
    fn url(&self) -> String {
        self.client().zone_urls()
    }

    /// Whether a token is configured.
    #[getter]
    fn has_token(&self) -> bool {
        self.client().has_token()
    }

    /// Local files to data objects, `[(local, logical), ...]`, through the transfer
    /// engine; returns the batch report as JSON.
    #[pyo3(signature = (pairs, overwrite=false, resource=None, streams=None, concurrency=8, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn put_files(
        &self,
        py: Python<'_>,
        pairs: Vec<(PathBuf, String)>,
        overwrite: bool,
        resource: Option<String>,
        streams: Option<usize>,
        concurrency: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let opts = options(overwrite, resource, streams, concurrency, true, progress);
        batch(py, opts, |o| data::put_files(self.client(), pairs, o))
    }

    /// The local directory `local` as the collection `remote`, with everything below.
    #[pyo3(signature = (local, remote, overwrite=false, resource=None, streams=None, concurrency=8, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn put_tree(
        &self,
        py: Python<'_>,
        local: PathBuf,
        remote: String,
        overwrite: bool,
        resource: Option<String>,
        streams: Option<usize>,
        concurrency: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let opts = options(overwrite, resource, streams, concurrency, true, progress);
        batch(py, opts, |o| data::put_tree(self.client(), local, remote, o))
    }

    /// Data objects to local files, `[(logical, local), ...]`; returns the report as JSON.
    #[pyo3(signature = (pairs, verify=true, streams=None, concurrency=8, progress=None))]
    fn get_files(
        &self,
        py: Python<'_>,
        pairs: Vec<(String, PathBuf)>,
        verify: bool,
        streams: Option<usize>,
        concurrency: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let opts = options(false, None, streams, concurrency, verify, progress);
        batch(py, opts, |o| data::get_files(self.client(), pairs, o))
    }

    /// The collection `remote` as the local directory `local`, with everything below.
    #[pyo3(signature = (remote, local, verify=true, streams=None, concurrency=8, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn get_tree(
        &self,
        py: Python<'_>,
        remote: String,
        local: PathBuf,
        verify: bool,
        streams: Option<usize>,
        concurrency: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let opts = options(false, None, streams, concurrency, verify, progress);
        batch(py, opts, |o| data::get_tree(self.client(), remote, local, o))
    }

    /// `data` as the data object `remote`, in one request; returns its stat as JSON.
    #[pyo3(signature = (data, remote, overwrite=false, resource=None))]
    fn put_bytes(
        &self,
        py: Python<'_>,
        data: &[u8],
        remote: &str,
        overwrite: bool,
        resource: Option<String>,
    ) -> PyResult<String> {
        let path = logical(remote).map_err(|f| f.into_py(py))?;
        let data = Bytes::copy_from_slice(data);
        let c = self.client();
        let opts = MoveOptions {
            overwrite,
            resource,
            ..MoveOptions::default()
        };
        let run = async move {
            let stat = c.put_bytes(data, &path, &opts).await?;
            Ok(serde_json::to_string(&stat).expect("plain data"))
        };
        runtime::wait(py, run, None, |_| Ok(()))
    }

    /// Bytes `start..end` of a data object (large ranges as parallel parts).
    fn read_range(&self, py: Python<'_>, remote: &str, start: u64, end: u64) -> PyResult<Py<PyBytes>> {
        let path = logical(remote).map_err(|f| f.into_py(py))?;
        let run = data::read_range(self.client(), path, start..end.max(start));
        let parts = runtime::wait(py, run, None, |_| Ok(()))?;
        let len = parts.iter().map(Bytes::len).sum();
        let out = PyBytes::new_with(py, len, |buf| {
            let mut at = 0;
            for p in &parts {
                buf[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            Ok(())
        })?;
        Ok(out.unbind())
    }

    /// Whole objects, `in_flight` at a time, in order: for each, its bytes or the
    /// exception that says why not (returned, not raised).
    #[pyo3(signature = (paths, in_flight=64))]
    fn read_many(&self, py: Python<'_>, paths: Vec<String>, in_flight: usize) -> PyResult<Vec<Py<PyAny>>> {
        let c = self.client();
        let run = async move { Ok(data::read_many(c, paths, in_flight).await) };
        let results = runtime::wait(py, run, None, |_| Ok(()))?;
        results
            .into_iter()
            .map(|r| match r {
                Ok(b) => Ok(PyBytes::new(py, &b).into_any().unbind()),
                Err(f) => Ok(f.into_py(py).into_value(py).into_any()),
            })
            .collect()
    }

    /// A control-plane call by name (`calls.rs`), arguments and answer as JSON text.
    fn call(&self, py: Python<'_>, op: &str, args: &str) -> PyResult<String> {
        let args: serde_json::Value =
            serde_json::from_str(args).map_err(|e| Failure::invalid(format!("{op}: {e}")).into_py(py))?;
        let client = self.client();
        let op = op.to_owned();
        runtime::wait(
            py,
            async move { calls::call(&client, &op, args).await },
            None,
            |_| Ok(()),
        )
    }
}

/// Runs one batch of the data path (`run` given its options) with its progress reported
/// and Ctrl-C cancelling it; returns its report as JSON.
fn batch<Fut>(
    py: Python<'_>,
    (opts, ticker): (MoveOptions, impl FnMut(Python<'_>) -> PyResult<()>),
    run: impl FnOnce(MoveOptions) -> Fut,
) -> PyResult<String>
where
    Fut: std::future::Future<Output = Result<data::Report, Failure>> + Send + 'static,
{
    let cancel = opts.cancel.clone();
    let running = run(opts);
    runtime::wait(py, async move { running.await.map(|r| r.json()) }, cancel, ticker)
}

/// The batch's options, and the tick that reports its progress: `progress` is called
/// with the bytes moved so far whenever they changed.
fn options(
    overwrite: bool,
    resource: Option<String>,
    streams: Option<usize>,
    concurrency: usize,
    verify: bool,
    progress: Option<Py<PyAny>>,
) -> (MoveOptions, impl FnMut(Python<'_>) -> PyResult<()>) {
    let moved = Arc::new(AtomicI64::new(0));
    let counter = moved.clone();
    let opts = MoveOptions {
        overwrite,
        resource,
        streams: streams.map(|s| s.clamp(1, 64)),
        concurrency: concurrency.clamp(1, 64),
        verify,
        progress: Some(Arc::new(move |d| {
            counter.fetch_add(d, Ordering::Relaxed);
        })),
        cancel: Some(Arc::new(AtomicBool::new(false))),
        ..MoveOptions::default()
    };
    let mut shown = 0;
    let tick = move |py: Python<'_>| {
        let now = moved.load(Ordering::Relaxed);
        match &progress {
            Some(cb) if now != shown => {
                shown = now;
                cb.call1(py, (now.max(0),)).map(drop)
            }
            _ => Ok(()),
        }
    };
    (opts, tick)
}
