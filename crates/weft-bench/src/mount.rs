//! `weft bench mount`: object storage as a file system, measured as NSDF measured eight
//! such mounts (Luettgau et al., "NSDF-Services"; their script nsdf-fabric/nsdf-fuse,
//! `RunSimpleBenchmark`). Six jobs, each from mount to unmount: 1 `cp` of N large files
//! one after another into the mount, 2 the same read back, 3 N `cp` at once, 4 N reads at
//! once, 5 W writers each copying a tree of small files with `find -exec cp`, 6 W readers
//! of them. The clock runs from before the mount to after `sync`, the unmount and the
//! removal of the mount's cache directory; the page cache is dropped after each mount.
//!
//! Contenders, in the same run: the local disk (a bind mount: the ceiling), `weft mount`
//! (as it closes files, and with `--write-back`), `rclone mount` of the zone's S3 gateway
//! (`--vfs-cache-mode off` and `writes`), and Debian's `s3fs` against a MinIO on the same
//! disk. After each job that wrote, every file is read back through a fresh mount and
//! compared by BLAKE3: a contender that lost or changed a file is marked so, as its speed
//! does not count then.

use crate::bench::{write_file, BenchError};
use crate::peers::{local, tool, Minio};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// The sizes of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Sizes {
    /// Large files of jobs 1-4, and their size.
    pub files: u32,
    pub file_bytes: u64,
    /// Writers (and readers) of jobs 5-6, and the small files each copies.
    pub writers: u32,
    pub small_files: u32,
    pub small_bytes: u64,
}

impl Sizes {
    /// NSDF's sizes: 8 files of 1 GiB; 16 writers of 2,048 files of 64 KiB.
    pub fn paper() -> Sizes {
        Sizes {
            files: 8,
            file_bytes: 1 << 30,
            writers: 16,
            small_files: 2048,
            small_bytes: 64 << 10,
        }
    }

    /// The quick profile: 8 files of 64 MiB; 16 writers of 128 files of 64 KiB.
    pub fn quick() -> Sizes {
        Sizes {
            files: 8,
            file_bytes: 64 << 20,
            writers: 16,
            small_files: 128,
            small_bytes: 64 << 10,
        }
    }
}

/// Where the zone is, for the contenders that reach it.
#[derive(Debug, Clone)]
pub struct Zone {
    /// This binary, for `weft mount`.
    pub weft: PathBuf,
    pub url: String,
    pub token: String,
    /// A collection of the user's own the weft contenders work below (it must exist).
    pub collection: String,
    /// The zone's S3 gateway, for `rclone mount`: endpoint, access key, secret, and the
    /// bucket and prefix that is `collection`.
    pub s3: Option<S3>,
}

#[derive(Debug, Clone)]
pub struct S3 {
    pub endpoint: String,
    pub access_key: String,
    pub secret_key: String,
    pub bucket: String,
    pub prefix: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Local,
    Weft { write_back: bool },
    Rclone { writes: bool },
    S3fs,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Local => "local disk (bind mount)",
            Kind::Weft { write_back: false } => "weft mount",
            Kind::Weft { write_back: true } => "weft mount --write-back",
            Kind::Rclone { writes: false } => "rclone mount, --vfs-cache-mode off (weft's S3 gateway)",
            Kind::Rclone { writes: true } => "rclone mount, --vfs-cache-mode writes (weft's S3 gateway)",
            Kind::S3fs => "s3fs (MinIO)",
        }
    }
}

/// One job of one contender.
#[derive(Debug, Clone, Serialize)]
pub struct JobResult {
    pub contender: String,
    pub job: u32,
    pub what: String,
    pub bytes: u64,
    pub seconds: f64,
    /// Bytes over seconds, in MiB/s (NSDF's unit).
    pub mib_s: f64,
    /// For the jobs that wrote: whether every file was there, byte for byte, through a
    /// fresh mount after the unmount (`None` for reads).
    pub intact: Option<bool>,
    /// The mount process's peak resident memory (`VmHWM`), where it has a process.
    pub peak_rss_mib: Option<f64>,
    /// Why the job's commands failed (files an earlier job wrote were not there, say).
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MountReport {
    pub sizes: Sizes,
    pub results: Vec<JobResult>,
    /// What could not be measured, and why.
    pub notes: Vec<String>,
}

const JOBS: [(u32, &str); 6] = [
    (1, "sequential write of the large files (cp, one at a time)"),
    (2, "sequential read of them (cp to /dev/null)"),
    (3, "concurrent write (one cp per file, all at once)"),
    (4, "concurrent read"),
    (5, "small files: writers at once, find -exec cp"),
    (6, "small files: readers at once, find -exec cp to /dev/null"),
];

/// The job's shell script, as NSDF's loops run it; `$LOCAL`, `$REMOTE`, `$N` and `$W` set.
fn script(job: u32) -> &'static str {
    match job {
        1 => r#"for I in $(seq 1 $N); do cp "$LOCAL/big/$I" "$REMOTE/seq-$I"; done"#,
        2 => r#"for I in $(seq 1 $N); do cp "$REMOTE/seq-$I" /dev/null; done"#,
        3 => r#"for I in $(seq 1 $N); do cp "$LOCAL/big/$I" "$REMOTE/par-$I" & done; wait"#,
        4 => r#"for I in $(seq 1 $N); do cp "$REMOTE/par-$I" /dev/null & done; wait"#,
        5 => {
            r#"for I in $(seq 1 $W); do (mkdir -p "$REMOTE/small-$I" && find "$LOCAL/small" -type f -exec cp {} "$REMOTE/small-$I/" \;) & done; wait"#
        }
        _ => {
            r#"for I in $(seq 1 $W); do find "$REMOTE/small-$I" -type f -exec cp {} /dev/null \; & done; wait"#
        }
    }
}

/// Runs every job against every contender installed; `work` holds the input files, the
/// mount points and the local disk's and MinIO's data (removed by the caller).
pub async fn run(
    zone: &Zone,
    sizes: &Sizes,
    work: &Path,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<MountReport, BenchError> {
    let mut notes = Vec::new();
    progress("writing the input files");
    let expected = inputs(work, sizes).await?;
    if drop_caches().is_err() {
        notes.push("the page cache could not be dropped (not root?): reads may be served from memory".into());
    }
    let minio = match tool("minio") {
        Some(m) if tool("s3fs").is_some() && tool("rclone").is_some() => {
            Some(Minio::start(&m, &work.join("minio")).await?)
        }
        _ => {
            notes.push("s3fs, minio or rclone: not installed (Debian: apt install s3fs; minio, rclone: .ci/install-tools.sh)".into());
            None
        }
    };
    let mut kinds = vec![
        Kind::Local,
        Kind::Weft { write_back: false },
        Kind::Weft { write_back: true },
    ];
    match (&zone.s3, tool("rclone"), tool("fusermount3")) {
        (Some(_), Some(_), Some(_)) => kinds.extend([Kind::Rclone { writes: false }, Kind::Rclone { writes: true }]),
        _ => notes.push(
            "rclone, fusermount3 (Debian: apt install fuse3) or the zone's S3 gateway: not there; no rclone mount".into(),
        ),
    }
    if minio.is_some() {
        kinds.push(Kind::S3fs);
    }
    let mut results = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        let c = Contender::new(kind, i, zone, work, minio.as_ref()).await?;
        for (job, what) in JOBS {
            progress(&format!("{}: job {job}, {what}", kind.name()));
            let (seconds, peak, error) = match c.job(job, work, sizes).await {
                Ok(r) => r,
                // A peer that does not mount here is noted, not the end of the run.
                Err(e) if !matches!(kind, Kind::Local | Kind::Weft { .. }) => {
                    notes.push(format!("{}: {e}", kind.name()));
                    break;
                }
                Err(e) => return Err(e),
            };
            let bytes = match job {
                1..=4 => sizes.files as u64 * sizes.file_bytes,
                _ => sizes.writers as u64 * sizes.small_files as u64 * sizes.small_bytes,
            };
            let intact = if matches!(job, 1 | 3 | 5) {
                progress(&format!(
                    "{}: checking every file of job {job} through a fresh mount",
                    kind.name()
                ));
                Some(c.intact(job, sizes, &expected).await?)
            } else {
                None
            };
            results.push(JobResult {
                contender: kind.name().into(),
                job,
                what: what.into(),
                bytes,
                seconds,
                mib_s: bytes as f64 / (1 << 20) as f64 / seconds,
                intact,
                peak_rss_mib: peak,
                error,
            });
        }
        c.cleanup().await;
    }
    Ok(MountReport {
        sizes: sizes.clone(),
        results,
        notes,
    })
}

/// The input files on local disk, and the BLAKE3 of each by its name below the mount.
async fn inputs(work: &Path, sizes: &Sizes) -> Result<BTreeMap<String, String>, BenchError> {
    let (work, sizes) = (work.to_owned(), sizes.clone());
    tokio::task::spawn_blocking(move || {
        let mut expected = BTreeMap::new();
        let big = work.join("input/big");
        let small = work.join("input/small");
        for d in [&big, &small] {
            std::fs::create_dir_all(d).map_err(|e| local("input", e))?;
        }
        for i in 1..=sizes.files {
            let p = big.join(i.to_string());
            write_file(&p, sizes.file_bytes, i as u64)?;
            let sum = hash(&p)?;
            expected.insert(format!("seq-{i}"), sum.clone());
            expected.insert(format!("par-{i}"), sum);
        }
        for k in 1..=sizes.small_files {
            let p = small.join(format!("f{k:05}"));
            write_file(&p, sizes.small_bytes, 1000 + k as u64)?;
            let sum = hash(&p)?;
            for w in 1..=sizes.writers {
                expected.insert(format!("small-{w}/f{k:05}"), sum.clone());
            }
        }
        Ok(expected)
    })
    .await
    .map_err(|e| local("input", e))?
}

fn hash(path: &Path) -> Result<String, BenchError> {
    let mut h = blake3::Hasher::new();
    let f = std::fs::File::open(path).map_err(|e| local(&path.display().to_string(), e))?;
    std::io::copy(&mut std::io::BufReader::with_capacity(1 << 20, f), &mut h)
        .map_err(|e| local(&path.display().to_string(), e))?;
    Ok(h.finalize().to_hex().to_string())
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches`, as NSDF's `DropCache`.
fn drop_caches() -> std::io::Result<()> {
    std::process::Command::new("sync").status()?;
    std::fs::write("/proc/sys/vm/drop_caches", "3")
}

/// Whether something is mounted at `dir` (`/proc/self/mountinfo`).
fn mounted(dir: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let dir = dir.to_string_lossy();
    info.lines().any(|l| l.split(' ').nth(4) == Some(&*dir))
}

struct Contender {
    kind: Kind,
    dir: PathBuf,
    cache: PathBuf,
    zone: Zone,
    /// The local disk's data directory, bind-mounted at `dir`.
    data: PathBuf,
    /// s3fs: its bucket, endpoint and password file.
    s3fs: Option<(String, String, PathBuf)>,
    /// Where in the zone this contender writes (weft and rclone).
    collection: String,
    prefix: String,
}

impl Contender {
    async fn new(
        kind: Kind,
        i: usize,
        zone: &Zone,
        work: &Path,
        minio: Option<&Minio>,
    ) -> Result<Contender, BenchError> {
        let base = work.join(format!("c{i}"));
        let (dir, cache, data) = (base.join("mnt"), base.join("cache"), base.join("data"));
        for d in [&dir, &data] {
            std::fs::create_dir_all(d).map_err(|e| local("contender", e))?;
        }
        let sub = format!("mount-{i}");
        let mut s3fs = None;
        if let (Kind::S3fs, Some(m)) = (kind, minio) {
            let passwd = base.join("passwd-s3fs");
            std::fs::write(&passwd, format!("{}:{}\n", Minio::USER, Minio::PASSWORD))
                .map_err(|e| local("s3fs", e))?;
            std::fs::set_permissions(&passwd, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| local("s3fs", e))?;
            let bucket = format!("bench{i}");
            let rclone = tool("rclone").ok_or_else(|| local("s3fs", "rclone makes its bucket"))?;
            crate::peers::run(
                Command::new(rclone)
                    .arg("mkdir")
                    .arg(format!(":s3:{bucket}"))
                    .args(["--s3-provider", "Minio", "--s3-endpoint", &m.url])
                    .args([
                        "--s3-access-key-id",
                        Minio::USER,
                        "--s3-secret-access-key",
                        Minio::PASSWORD,
                    ])
                    .args(["--config", "/dev/null"]),
                "rclone mkdir (s3fs's bucket)",
            )
            .await?;
            s3fs = Some((bucket, m.url.clone(), passwd));
        }
        let c = Contender {
            kind,
            dir,
            cache,
            zone: zone.clone(),
            data,
            s3fs,
            collection: format!("{}/{sub}", zone.collection),
            prefix: zone
                .s3
                .as_ref()
                .map(|s| format!("{}{sub}", s.prefix))
                .unwrap_or_default(),
        };
        if matches!(kind, Kind::Weft { .. } | Kind::Rclone { .. }) {
            let mut cmd = c.weft();
            crate::peers::run(cmd.args(["mkdir", "-p", &c.collection]), "weft mkdir").await?;
        }
        Ok(c)
    }

    fn weft(&self) -> Command {
        let mut cmd = Command::new(&self.zone.weft);
        cmd.env("WEFT_URL", &self.zone.url)
            .env("WEFT_TOKEN", &self.zone.token)
            .env_remove("WEFT_CA_FILE");
        cmd
    }

    /// The mount process (none for the bind mount), once the mount is there.
    async fn mount(&self) -> Result<Option<Child>, BenchError> {
        let dir = &self.dir;
        let mut cmd = match self.kind {
            Kind::Local => {
                crate::peers::run(
                    Command::new("mount").arg("--bind").arg(&self.data).arg(dir),
                    "mount --bind",
                )
                .await?;
                return Ok(None);
            }
            Kind::Weft { write_back } => {
                let mut cmd = self.weft();
                cmd.args(["mount", "--quiet", &self.collection])
                    .arg(dir)
                    .arg("--cache-dir")
                    .arg(&self.cache);
                if write_back {
                    cmd.arg("--write-back");
                }
                cmd
            }
            Kind::Rclone { writes } => {
                let s3 = self.zone.s3.as_ref().expect("rclone runs with the S3 gateway");
                let mut cmd = Command::new(tool("rclone").expect("found before"));
                cmd.arg("mount")
                    .arg(format!(":s3:{}/{}", s3.bucket, self.prefix))
                    .arg(dir)
                    .args(["--s3-provider", "Other", "--s3-endpoint", &s3.endpoint])
                    .args([
                        "--s3-access-key-id",
                        &s3.access_key,
                        "--s3-secret-access-key",
                        &s3.secret_key,
                    ])
                    .args([
                        "--s3-force-path-style=true",
                        "--s3-env-auth=false",
                        "--config",
                        "/dev/null",
                    ])
                    .args(["--vfs-cache-mode", if writes { "writes" } else { "off" }])
                    .arg("--cache-dir")
                    .arg(&self.cache);
                cmd
            }
            Kind::S3fs => {
                let (bucket, url, passwd) = self.s3fs.as_ref().expect("made in new");
                let mut cmd = Command::new("s3fs");
                cmd.arg(bucket)
                    .arg(dir)
                    .arg("-f")
                    .args(["-o", &format!("url={url}"), "-o", "use_path_request_style"])
                    .args(["-o", &format!("passwd_file={}", passwd.display())]);
                cmd
            }
        };
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| local(self.kind.name(), e))?;
        let until = Instant::now() + Duration::from_secs(60);
        while !mounted(dir) {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(local(
                    self.kind.name(),
                    format!("the mount ended at once ({status})"),
                ));
            }
            if Instant::now() > until {
                return Err(local(self.kind.name(), "not mounted within a minute"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Some(child))
    }

    /// `umount`, tried again while the mount is busy (it finishes what it holds), then
    /// the mount process's end.
    async fn unmount(&self, child: Option<Child>) -> Result<(), BenchError> {
        let until = Instant::now() + Duration::from_secs(600);
        loop {
            let out = Command::new("umount")
                .arg(&self.dir)
                .output()
                .await
                .map_err(|e| local("umount", e))?;
            if out.status.success() {
                break;
            }
            if Instant::now() > until {
                return Err(local(
                    "umount",
                    format!(
                        "{}: {}",
                        self.kind.name(),
                        String::from_utf8_lossy(&out.stderr).trim()
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(mut child) = child {
            match tokio::time::timeout(Duration::from_secs(600), child.wait()).await {
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill().await;
                }
            }
        }
        Ok(())
    }

    /// One job, timed from mount to unmount and the cache directory removed; the mount
    /// process's peak memory, and why the job's commands failed if they did.
    async fn job(
        &self,
        job: u32,
        work: &Path,
        sizes: &Sizes,
    ) -> Result<(f64, Option<f64>, Option<String>), BenchError> {
        let t = Instant::now();
        let child = self.mount().await?;
        let pid = child.as_ref().and_then(Child::id);
        let _ = tokio::task::spawn_blocking(drop_caches).await;
        let out = Command::new("sh")
            .args(["-c", script(job)])
            .env("LOCAL", work.join("input"))
            .env("REMOTE", &self.dir)
            .env("N", sizes.files.to_string())
            .env("W", sizes.writers.to_string())
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| local("job", e))?;
        let _ = Command::new("sync").status().await;
        let peak = pid.and_then(peak_rss_mib);
        self.unmount(child).await?;
        let _ = std::fs::remove_dir_all(&self.cache);
        let seconds = t.elapsed().as_secs_f64();
        let error = (!out.status.success()).then(|| {
            let text = String::from_utf8_lossy(&out.stderr);
            text.lines().next().unwrap_or("failed").to_owned()
        });
        Ok((seconds, peak, error))
    }

    /// Whether every file job `job` wrote is there, byte for byte, through a fresh mount.
    async fn intact(
        &self,
        job: u32,
        sizes: &Sizes,
        expected: &BTreeMap<String, String>,
    ) -> Result<bool, BenchError> {
        let names: Vec<String> = match job {
            1 => (1..=sizes.files).map(|i| format!("seq-{i}")).collect(),
            3 => (1..=sizes.files).map(|i| format!("par-{i}")).collect(),
            _ => expected
                .keys()
                .filter(|k| k.starts_with("small-"))
                .cloned()
                .collect(),
        };
        let child = self.mount().await?;
        let (dir, want) = (self.dir.clone(), expected.clone());
        let ok = tokio::task::spawn_blocking(move || {
            names
                .iter()
                .all(|n| hash(&dir.join(n)).ok().as_ref() == want.get(n))
        })
        .await
        .map_err(|e| local("check", e))?;
        self.unmount(child).await?;
        let _ = std::fs::remove_dir_all(&self.cache);
        Ok(ok)
    }

    /// Removes what the contender wrote (the zone's collection, the local data).
    async fn cleanup(&self) {
        if matches!(self.kind, Kind::Weft { .. } | Kind::Rclone { .. }) {
            let _ = crate::peers::run(self.weft().args(["rm", "-r", &self.collection]), "weft rm").await;
        }
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

/// `VmHWM` of `pid` in MiB.
fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// The report as a Markdown table: MiB/s of each job, each contender a row, and its share
/// of the local disk's.
pub fn markdown(r: &MountReport) -> String {
    let mut rows: Vec<String> = Vec::new();
    for c in r.results.iter().map(|x| x.contender.clone()) {
        if !rows.contains(&c) {
            rows.push(c);
        }
    }
    let get = |c: &str, job: u32| r.results.iter().find(|x| x.contender == c && x.job == job);
    let mut out = format!(
        "NSDF's six jobs ({} files of {} MiB; {} writers of {} files of {} KiB), MiB/s from mount to unmount:\n\n",
        r.sizes.files,
        r.sizes.file_bytes >> 20,
        r.sizes.writers,
        r.sizes.small_files,
        r.sizes.small_bytes >> 10
    );
    out.push_str("| contender | 1 seq write | 2 seq read | 3 par write | 4 par read | 5 small write | 6 small read | peak RSS |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for c in &rows {
        let mut line = format!("| {c} |");
        for job in 1..=6 {
            match get(c, job) {
                Some(x) if x.error.is_some() => line.push_str(" failed |"),
                Some(x) => {
                    let lost = x.intact == Some(false);
                    let ceiling = get(rows[0].as_str(), job).map(|l| x.mib_s / l.mib_s * 100.0);
                    line.push_str(&format!(
                        " {:.0}{}{} |",
                        x.mib_s,
                        ceiling
                            .filter(|_| c != &rows[0])
                            .map(|p| format!(" ({p:.0} %)"))
                            .unwrap_or_default(),
                        if lost { " **files lost**" } else { "" }
                    ));
                }
                None => line.push_str(" - |"),
            }
        }
        let peak = r
            .results
            .iter()
            .filter(|x| &x.contender == c)
            .filter_map(|x| x.peak_rss_mib)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        line.push_str(&match peak {
            Some(p) => format!(" {p:.0} MiB |"),
            None => " - |".into(),
        });
        out.push_str(&line);
        out.push('\n');
    }
    for x in r.results.iter().filter(|x| x.error.is_some()) {
        out.push_str(&format!(
            "\n- {}, job {}: {}",
            x.contender,
            x.job,
            x.error.as_deref().unwrap_or_default()
        ));
    }
    for n in &r.notes {
        out.push_str(&format!("\n- {n}"));
    }
    out.push('\n');
    out
}
