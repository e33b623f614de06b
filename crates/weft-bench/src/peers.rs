//! The peers of issues 2 and 3, measured in the same run where they are installed (found on
//! `PATH`): `cp` + `sync` of one large file, loopback `iperf3` on one stream (the network's
//! ceiling), and `rclone` copying a tree of small files into a MinIO it is given for the
//! run, with its best `--transfers`. Each comparison states weft's ratio to the peer.

use crate::bench::{timed, write_file, Bench, BenchError};
use crate::report::{PeerComparison, Series, ToolVersion};
use crate::scenarios::{human, put_tree_timed, transfer};
use crate::stats::Summary;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};
use weft_client::{MoveOptions, DEFAULT_CONCURRENCY};

pub async fn compare(b: &Bench) -> Result<(Vec<Series>, Vec<String>, Vec<PeerComparison>), BenchError> {
    let mut found = Vec::new();
    let mut notes = Vec::new();
    let mut series = Vec::new();
    large_file(b, &mut found, &mut notes).await?;
    small_files(b, &mut found, &mut notes, &mut series).await?;
    Ok((series, notes, found))
}

/// A file on `PATH`.
pub(crate) fn tool(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The version line of each peer tool on `PATH`, for the report.
pub async fn versions() -> Vec<ToolVersion> {
    let mut found = Vec::new();
    for (name, arg) in [
        ("cp", "--version"),
        ("iperf3", "--version"),
        ("rclone", "version"),
        ("minio", "--version"),
    ] {
        let Some(path) = tool(name) else { continue };
        // iperf3 --version exits 1 on some builds; its first line is the version all the same.
        let Ok(out) = Command::new(path).arg(arg).stdin(Stdio::null()).output().await else {
            continue;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
            found.push(ToolVersion {
                tool: name.into(),
                version: line.to_owned(),
            });
        }
    }
    found
}

pub(crate) fn local(what: &str, e: impl std::fmt::Display) -> BenchError {
    BenchError::Local(format!("{what}: {e}"))
}

/// Runs `cmd` to its end; its error output in the error when it fails.
pub(crate) async fn run(cmd: &mut Command, what: &str) -> Result<Vec<u8>, BenchError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| local(what, e))?;
    if !out.status.success() {
        return Err(local(
            what,
            format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
        ));
    }
    Ok(out.stdout)
}

fn comparison(
    measurement: String,
    peer: String,
    unit: &str,
    weft: &[f64],
    other: &[f64],
    higher_is_better: bool,
) -> Option<PeerComparison> {
    let (w, o) = (Summary::of(weft)?, Summary::of(other)?);
    let ratio = if higher_is_better {
        w.median / o.median
    } else {
        o.median / w.median
    };
    Some(PeerComparison {
        measurement,
        peer,
        weft: w,
        other: o,
        unit: unit.into(),
        ratio,
    })
}

/// One large file (1 GiB, or --max-size-mib): weft's put and get against `cp` + `sync`, put
/// (and the zone-to-zone transfer, with --peer) against one iperf3 stream on loopback.
async fn large_file(
    b: &Bench,
    found: &mut Vec<PeerComparison>,
    notes: &mut Vec<String>,
) -> Result<(), BenchError> {
    let size = (1u64 << 30).min(b.opts.max_size);
    let dir = b.local_dir("peers-large")?;
    let src = dir.join("large");
    write_file(&src, size, 42)?;
    let name = human(size);
    b.progress
        .step("peers", &format!("weft put and get of {name}"), 0, 4);
    let coll = b.path("peers")?;
    b.client.mkdir(&coll, true).await?;
    let weft = b
        .measure(|run| {
            let (src, dir) = (&src, &dir);
            async move {
                let dest = b.path(&format!("peers/large-{run}"))?;
                let (put, _) = timed(b.client.put_file(src, &dest, &MoveOptions::default())).await?;
                let back = dir.join("back");
                let (get, _) = timed(b.client.get_file(&dest, &back, &MoveOptions::default())).await?;
                let _ = std::fs::remove_file(&back);
                let z2z = match &b.peer_scratch {
                    Some(p) => {
                        let to = p
                            .join(&format!("large-{run}"))
                            .map_err(|e| BenchError::Local(e.message))?;
                        let s = transfer(b, dest.to_string(), to.to_string()).await?;
                        b.client.remove(&to, false).await?;
                        Some(s)
                    }
                    None => None,
                };
                b.client.remove(&dest, false).await?;
                Ok((put, get, z2z))
            }
        })
        .await?;
    let put: Vec<f64> = weft.iter().map(|r| r.0).collect();
    let get: Vec<f64> = weft.iter().map(|r| r.1).collect();
    let z2z: Vec<f64> = weft.iter().filter_map(|r| r.2).collect();

    b.progress.step("peers", &format!("cp + sync of {name}"), 1, 4);
    let dst = dir.join("copy");
    let cp = b
        .measure(|_| {
            let (src, dst) = (&src, &dst);
            async move {
                let (s, _) = timed(async {
                    run(Command::new("cp").arg(src).arg(dst), "cp").await?;
                    run(&mut Command::new("sync"), "sync").await
                })
                .await?;
                let _ = std::fs::remove_file(dst);
                Ok(s)
            }
        })
        .await?;
    let peer = "cp + sync".to_string();
    found.extend(comparison(
        format!("put of {name}"),
        peer.clone(),
        "seconds",
        &put,
        &cp,
        false,
    ));
    found.extend(comparison(
        format!("get of {name}"),
        peer.clone(),
        "seconds",
        &get,
        &cp,
        false,
    ));
    found.extend(comparison(
        format!("zone-to-zone transfer of {name}"),
        peer,
        "seconds",
        &z2z,
        &cp,
        false,
    ));

    b.progress
        .step("peers", &format!("iperf3 on loopback, {name}"), 2, 4);
    match tool("iperf3") {
        None => notes.push("iperf3: not installed (not on PATH); no network comparison".into()),
        Some(iperf) => {
            let rates = b.measure(|_| iperf3(&iperf, size)).await?;
            let mb = |secs: &[f64]| secs.iter().map(|s| size as f64 / s / 1e6).collect::<Vec<_>>();
            let peer = "iperf3, 1 stream, loopback".to_string();
            found.extend(comparison(
                format!("put of {name}"),
                peer.clone(),
                "MB/s",
                &mb(&put),
                &rates,
                true,
            ));
            found.extend(comparison(
                format!("zone-to-zone transfer of {name}"),
                peer,
                "MB/s",
                &mb(&z2z),
                &rates,
                true,
            ));
        }
    }
    if b.peer_scratch.is_none() {
        notes.push("zone-to-zone: not measured (pass --peer COLLECTION in a federated zone)".into());
    }
    b.client.remove(&coll, true).await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// MB/s of one iperf3 stream sending `size` bytes over loopback.
async fn iperf3(iperf: &Path, size: u64) -> Result<f64, BenchError> {
    use tokio::io::AsyncBufReadExt;
    let port = free_port()?.to_string();
    let mut server = Command::new(iperf)
        .args(["-s", "-1", "--forceflush", "-B", "127.0.0.1", "-p", &port])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| local("iperf3 -s", e))?;
    // The client goes once the server says it listens: no probe (a probe connection would
    // be the one test a `-1` server serves).
    let mut lines = tokio::io::BufReader::new(server.stdout.take().expect("piped")).lines();
    let listening = async {
        while let Some(line) = lines.next_line().await? {
            if line.contains("listening") {
                return Ok(true);
            }
        }
        Ok::<bool, std::io::Error>(false)
    };
    match tokio::time::timeout(Duration::from_secs(10), listening).await {
        Ok(Ok(true)) => {}
        _ => return Err(local("iperf3 -s", "did not say it listens within 10 s")),
    }
    let mut cmd = Command::new(iperf);
    cmd.args(["-c", "127.0.0.1", "-p", &port, "-n", &size.to_string(), "-J"]);
    let client = run(&mut cmd, "iperf3 -c");
    let out = tokio::time::timeout(Duration::from_secs(300), client)
        .await
        .map_err(|_| local("iperf3 -c", "no end within 300 s"))??;
    drop(server);
    let v: serde_json::Value = serde_json::from_slice(&out).map_err(|e| local("iperf3 -J", e))?;
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .map(|bps| bps / 8.0 / 1e6)
        .ok_or_else(|| {
            local(
                "iperf3",
                v["error"]
                    .as_str()
                    .unwrap_or("no end.sum_received.bits_per_second in its report"),
            )
        })
}

pub(crate) fn free_port() -> Result<u16, BenchError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| local("a free port on 127.0.0.1", e))
}

/// A tree of small files: weft's `put -r` against rclone copying it into MinIO, at each
/// `--transfers` (the best one is the comparison).
async fn small_files(
    b: &Bench,
    found: &mut Vec<PeerComparison>,
    notes: &mut Vec<String>,
    series: &mut Vec<Series>,
) -> Result<(), BenchError> {
    let (n, size, settings): (u64, u64, &[u32]) = if b.opts.quick {
        (200, 64 << 10, &[4, 16])
    } else {
        (2000, 64 << 10, &[4, 8, 16, 32])
    };
    let tree = format!("{n} x {}", human(size));
    let dir = b.local_dir("peers-tree")?;
    for k in 0..n {
        write_file(&dir.join(format!("f{k:05}")), size, k)?;
    }
    b.progress.step("peers", &format!("weft put -r of {tree}"), 3, 4);
    let weft = b
        .measure(|run| {
            let dir = &dir;
            async move {
                let coll = b.path(&format!("peers/tree-{run}"))?;
                let s = put_tree_timed(b, dir, &coll).await?;
                b.client.remove(&coll, true).await?;
                Ok(n as f64 / s)
            }
        })
        .await?;
    let (Some(rclone), Some(minio)) = (tool("rclone"), tool("minio")) else {
        notes.push("rclone or minio: not installed (not on PATH); no small-file comparison".into());
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(());
    };
    let store = Minio::start(&minio, &b.local_dir("peers-minio")?).await?;
    let remote = |path: &str| {
        format!(
            ":s3,provider=Minio,endpoint='{}',access_key_id={},secret_access_key={}:{path}",
            store.url,
            Minio::USER,
            Minio::PASSWORD
        )
    };
    // MinIO listens a moment before it serves.
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Err(e) = run(
        Command::new(&rclone).args(["mkdir", &remote("bench")]),
        "rclone mkdir",
    )
    .await
    {
        if Instant::now() > deadline {
            return Err(e);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut by_transfers = Series::new("rclone copy to MinIO", "--transfers", "files/s", false);
    let mut best: Option<(u32, Vec<f64>)> = None;
    for &t in settings {
        b.progress
            .step("peers", &format!("rclone copy --transfers {t} of {tree}"), 3, 4);
        let rates = b
            .measure(|run| {
                let (dir, rclone, remote) = (&dir, &rclone, &remote);
                async move {
                    let (s, _) =
                        timed(run_rclone(rclone, dir, &remote(&format!("bench/t{t}-{run}")), t)).await?;
                    Ok(n as f64 / s)
                }
            })
            .await?;
        by_transfers.push(f64::from(t), &rates);
        let median = Summary::of(&rates).map_or(0.0, |s| s.median);
        if best
            .as_ref()
            .is_none_or(|(_, r)| Summary::of(r).map_or(0.0, |s| s.median) < median)
        {
            best = Some((t, rates));
        }
    }
    drop(store);
    if let Some((t, rates)) = best {
        found.extend(comparison(
            format!("put -r of {tree}"),
            format!("rclone copy to MinIO, --transfers {t} (best)"),
            "files/s",
            &weft,
            &rates,
            true,
        ));
    }
    series.push(by_transfers);
    notes.push(format!(
        "rclone copies from the same local tree into a MinIO on loopback started for the run \
         (checksums on, as by default); weft's put -r runs with its default concurrency ({DEFAULT_CONCURRENCY})."
    ));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

async fn run_rclone(rclone: &Path, dir: &Path, to: &str, transfers: u32) -> Result<(), BenchError> {
    run(
        Command::new(rclone)
            .args(["copy", "--transfers", &transfers.to_string()])
            .arg(dir)
            .arg(to),
        "rclone copy",
    )
    .await
    .map(|_| ())
}

/// A MinIO server on a free loopback port for the run, killed when dropped.
pub(crate) struct Minio {
    _child: Child,
    pub(crate) url: String,
}

impl Minio {
    pub(crate) const USER: &'static str = "weftbench";
    pub(crate) const PASSWORD: &'static str = "weftbench-secret";

    pub(crate) async fn start(minio: &Path, dir: &Path) -> Result<Minio, BenchError> {
        let (port, console) = (free_port()?, free_port()?);
        let child = Command::new(minio)
            .arg("server")
            .arg(dir)
            .args(["--address", &format!("127.0.0.1:{port}")])
            .args(["--console-address", &format!("127.0.0.1:{console}")])
            .env("MINIO_ROOT_USER", Self::USER)
            .env("MINIO_ROOT_PASSWORD", Self::PASSWORD)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| local("minio server", e))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            if Instant::now() > deadline {
                return Err(local("minio server", "did not listen within 30 s"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(Minio {
            _child: child,
            url: format!("http://127.0.0.1:{port}"),
        })
    }
}
