//! The run: a scratch collection the bench creates and removes, local input files, the
//! options every scenario reads, and progress.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use weft_client::wire::MetaRequest;
use weft_client::{Client, ClientError, TrustedCas};
use weft_types::LogicalPath;

/// The attribute that marks a scratch collection as the bench's own; its value is the run id.
pub const MARK: &str = "weft.bench.run";

#[derive(Debug, Clone)]
pub struct Options {
    /// The small profile: few points, small files, two runs.
    pub quick: bool,
    /// Measured runs per point (after one warm-up run).
    pub runs: u32,
    /// Largest file any scenario writes.
    pub max_size: u64,
    /// Where local input and output files go (removed at the end).
    pub local_dir: PathBuf,
    /// The scratch collection to create [default: `<home>/weft-bench-<run id>`].
    pub scratch: Option<LogicalPath>,
    /// A collection in a federated zone; the zone-to-zone route writes to a scratch
    /// collection the bench creates below it. `None`: that route is not measured.
    pub peer: Option<LogicalPath>,
    /// A `file:///dir` staging area of the zone, on this machine; the staging route writes
    /// below it into a directory the bench creates and removes. `None`: not measured.
    pub staging: Option<String>,
    /// Objects the catalog-growth scenario ingests in all.
    pub growth_objects: u64,
    /// Certificates trusted besides the system roots (a zone whose certificate a private
    /// CA signed); every client of the run trusts them.
    pub cas: TrustedCas,
}

/// Reports progress: the scenario, what it measures now, and how far it is.
pub trait Progress: Send + Sync {
    fn step(&self, scenario: &str, what: &str, done: u64, total: u64);
}

/// Progress that goes nowhere (`--quiet`, tests).
pub struct Silent;

impl Progress for Silent {
    fn step(&self, _: &str, _: &str, _: u64, _: u64) {}
}

pub struct Bench {
    pub client: Client,
    /// The zone's URL and the token, for scenarios that open clients of their own.
    pub url: String,
    pub token: Option<String>,
    pub opts: Options,
    /// The collection everything is written below.
    pub scratch: LogicalPath,
    pub run_id: String,
    pub progress: Arc<dyn Progress>,
    /// The scratch collection in the federated zone of `--peer`.
    pub peer_scratch: Option<LogicalPath>,
    /// The staging route's destination: its URL and the directory on this machine.
    pub staging: Option<(String, PathBuf)>,
    local: PathBuf,
}

/// Why a run could not start or end cleanly.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Client(#[from] ClientError),
    #[error("{0}")]
    Local(String),
    #[error("{0}")]
    Refused(String),
}

impl Bench {
    /// A client of its own to the zone under test, as `token`.
    pub fn client(&self, token: Option<String>) -> Result<Client, ClientError> {
        Client::with_cas(&self.url, token, &self.opts.cas)
    }

    /// Creates the scratch collection (`<home>/weft-bench-<id>` unless given), marked as
    /// the bench's. Refuses an existing one: the bench writes and removes only what it
    /// created.
    pub async fn open(
        url: &str,
        token: Option<String>,
        opts: Options,
        progress: Arc<dyn Progress>,
    ) -> Result<Bench, BenchError> {
        let client = Client::with_cas(url, token.clone(), &opts.cas)?;
        let me = client.whoami().await?;
        let run_id = format!("{:016x}", rand::random::<u64>());
        let scratch = match &opts.scratch {
            Some(s) => s.clone(),
            None => LogicalPath::parse(&me.home)
                .and_then(|home| home.join(&format!("weft-bench-{run_id}")))
                .map_err(|e| BenchError::Local(e.message))?,
        };
        // Checked before anything is created: a refusal leaves nothing behind.
        let staging = match &opts.staging {
            Some(url) => {
                let dir = url
                    .strip_prefix("file://")
                    .filter(|d| d.starts_with('/') && Path::new(d).is_dir())
                    .ok_or_else(|| {
                        BenchError::Refused(format!(
                            "--staging {url}: the staging route needs a file:///dir area whose \
                             directory is on this machine (the bench removes what it wrote)"
                        ))
                    })?;
                let name = format!("weft-bench-{run_id}");
                Some((
                    format!("{}/{name}", url.trim_end_matches('/')),
                    Path::new(dir).join(&name),
                ))
            }
            None => None,
        };
        if let Some((_, dir)) = &staging {
            std::fs::create_dir(dir).map_err(|e| BenchError::Local(format!("{}: {e}", dir.display())))?;
        }
        let undo_staging = || {
            if let Some((_, dir)) = &staging {
                let _ = std::fs::remove_dir_all(dir);
            }
        };
        if let Err(e) = create_marked(&client, &scratch, &run_id).await {
            undo_staging();
            return Err(e);
        }
        let peer_scratch = match &opts.peer {
            Some(root) => {
                let made = match root.join(&format!("weft-bench-{run_id}")) {
                    Ok(p) => create_marked(&client, &p, &run_id).await.map(|()| p),
                    Err(e) => Err(BenchError::Local(e.message)),
                };
                match made {
                    Ok(p) => Some(p),
                    Err(e) => {
                        let _ = client.remove(&scratch, true).await;
                        undo_staging();
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        let local = opts.local_dir.join(format!("weft-bench-{run_id}"));
        std::fs::create_dir_all(&local)
            .map_err(|e| BenchError::Local(format!("{}: {e}", local.display())))?;
        Ok(Bench {
            client,
            url: url.to_string(),
            token,
            opts,
            scratch,
            run_id,
            progress,
            peer_scratch,
            staging,
            local,
        })
    }

    /// Removes the scratch collection, after checking it still carries this run's mark, and
    /// the local files.
    pub async fn close(self) -> Result<(), BenchError> {
        let _ = std::fs::remove_dir_all(&self.local);
        if let Some((_, dir)) = &self.staging {
            let _ = std::fs::remove_dir_all(dir);
        }
        let peer = match &self.peer_scratch {
            Some(p) => remove_marked(&self.client, p, &self.run_id).await,
            None => Ok(()),
        };
        remove_marked(&self.client, &self.scratch, &self.run_id).await?;
        peer
    }

    /// A path below the scratch collection.
    pub fn path(&self, rest: &str) -> Result<LogicalPath, BenchError> {
        let mut p = self.scratch.clone();
        for part in rest.split('/').filter(|s| !s.is_empty()) {
            p = p.join(part).map_err(|e| BenchError::Local(e.message))?;
        }
        Ok(p)
    }

    /// A new empty local directory for a scenario.
    pub fn local_dir(&self, name: &str) -> Result<PathBuf, BenchError> {
        let d = self.local.join(name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).map_err(|e| BenchError::Local(format!("{}: {e}", d.display())))?;
        Ok(d)
    }

    /// Runs `f` once to warm up, then `runs` times; what each measured run gave (seconds,
    /// or several figures). `f` gets the run number (0 is the warm-up) so it can write to
    /// fresh paths.
    pub async fn measure<T, F, Fut>(&self, mut f: F) -> Result<Vec<T>, BenchError>
    where
        F: FnMut(u32) -> Fut,
        Fut: std::future::Future<Output = Result<T, BenchError>>,
    {
        f(0).await?;
        let mut out = Vec::new();
        for run in 1..=self.opts.runs {
            out.push(f(run).await?);
        }
        Ok(out)
    }
}

/// Creates `coll` and marks it with the run id. Refuses an existing one: the bench writes and
/// removes only what it created.
async fn create_marked(client: &Client, coll: &LogicalPath, run_id: &str) -> Result<(), BenchError> {
    match client.mkdir(coll, false).await {
        Ok(_) => {}
        Err(e) if e.code() == "already_exists" => {
            return Err(BenchError::Refused(format!(
                "{coll} exists and was not created by this run; weft bench only writes to a \
                 collection it creates"
            )))
        }
        Err(e) => return Err(e.into()),
    }
    client
        .meta_edit(
            coll,
            &MetaRequest {
                op: "set".into(),
                attr: MARK.into(),
                value: Some(run_id.to_string()),
                unit: String::new(),
            },
        )
        .await?;
    Ok(())
}

/// Removes `coll` after checking it still carries this run's mark.
async fn remove_marked(client: &Client, coll: &LogicalPath, run_id: &str) -> Result<(), BenchError> {
    let marks = client.meta_list(coll).await?;
    if !marks.iter().any(|a| a.attr == MARK && a.value == run_id) {
        return Err(BenchError::Refused(format!(
            "{coll} no longer carries this run's mark ({MARK}={run_id}); left in place"
        )));
    }
    client.remove(coll, true).await?;
    Ok(())
}

/// Seconds `fut` took, with its result.
pub async fn timed<T, E>(fut: impl std::future::Future<Output = Result<T, E>>) -> Result<(f64, T), E> {
    let t = Instant::now();
    let v = fut.await?;
    Ok((t.elapsed().as_secs_f64(), v))
}

/// Writes `size` bytes that neither repeat nor compress to `path`.
pub fn write_file(path: &Path, size: u64, seed: u64) -> Result<(), BenchError> {
    use std::io::Write;
    let f = std::fs::File::create(path).map_err(|e| BenchError::Local(format!("{}: {e}", path.display())))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut left = size;
    let mut buf = [0u8; 8192];
    while left > 0 {
        for chunk in buf.chunks_mut(8) {
            // xorshift64*: fast, and good enough that nothing below can shortcut the bytes.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let v = state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        let n = left.min(buf.len() as u64) as usize;
        w.write_all(&buf[..n])
            .map_err(|e| BenchError::Local(format!("{}: {e}", path.display())))?;
        left -= n as u64;
    }
    w.flush()
        .map_err(|e| BenchError::Local(format!("{}: {e}", path.display())))
}
