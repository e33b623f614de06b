//! Dev-only helpers that start real components for tests: PostgreSQL,
//! MinIO, Keycloak, toxiproxy, and zones (`weft serve`, [`zone::ZoneProcess`]) with the
//! `weft` commands run against them ([`cli`]) and the test data they move ([`data`]).
//! `weft bench` starts its embedded zones with [`zone::ZoneProcess`] too: the binary is the
//! one crate with this one as a normal dependency (`scripts/check-layers.py`).
//!
//! Every component listens on 127.0.0.1 with ephemeral ports and lives in its own temp
//! dir, so tests can run in parallel. A missing tool is an error that says to run
//! `.ci/install-tools.sh` — tests never skip. Processes are stopped when the handle is
//! dropped, which also happens when a test panics (unwinding runs `Drop`); a handle kept
//! in a `static` is never dropped, so prefer one per test.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

pub mod cli;
pub mod data;
pub mod keycloak;
pub mod minio;
pub mod pki;
pub mod postgres;
pub mod toxiproxy;
pub mod zone;

/// Where `.ci/install-tools.sh` puts the tools: `${WEFT_CACHE:-~/.cache/weft}/tools`.
pub fn tools_dir() -> PathBuf {
    let cache = match std::env::var_os("WEFT_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            PathBuf::from(home).join(".cache/weft")
        }
    };
    cache.join("tools")
}

/// A port that was free a moment ago. Another process may take it before the caller
/// binds it; the components here are started with a fresh port on that (rare) failure.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("cannot bind 127.0.0.1:0")
}

/// Fails with the message every start uses when a tool is missing.
fn require(path: &Path, what: &str) -> Result<()> {
    if path.exists() {
        Ok(())
    } else {
        bail!(
            "{what} not found at {}: run .ci/install-tools.sh (tests never skip a missing component)",
            path.display()
        )
    }
}

/// Last lines of a log file, for error messages.
fn log_tail(path: &Path, lines: usize) -> String {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| format!("<cannot read {}: {e}>", path.display()));
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    format!(
        "--- last lines of {} ---\n{}",
        path.display(),
        all[start..].join("\n")
    )
}

/// HTTP status of `GET path` on 127.0.0.1:port, or None if nothing answers yet.
/// Plain std I/O rather than reqwest: `start()` is synchronous and is usually called from
/// inside a tokio test, where reqwest's blocking client must not be used.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let addr = ([127, 0, 0, 1], port).into();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").ok()?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head).ok()?;
    // "HTTP/1.1 200 OK"
    std::str::from_utf8(&head[..n])
        .ok()?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

/// As [`http_status`] over HTTPS, trusting the CA `ca_pem`. Its own thread and runtime,
/// so that it may be called from a test's runtime as well as outside one.
fn https_status(ca_pem: &[u8], port: u16, path: &str) -> Option<u16> {
    let url = format!("https://127.0.0.1:{port}{path}");
    let ca = reqwest::Certificate::from_pem(ca_pem).ok()?;
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async {
            let client = reqwest::Client::builder()
                .add_root_certificate(ca)
                .timeout(Duration::from_secs(5))
                .build()
                .ok()?;
            Some(client.get(&url).send().await.ok()?.status().as_u16())
        })
    })
    .join()
    .ok()
    .flatten()
}

/// A spawned child in its own process group, killed (group and all) on drop, so tools
/// that fork (kc.sh starts java) do not outlive the test.
struct Proc {
    child: Option<Child>,
}

impl Proc {
    fn spawn(cmd: &mut Command, log: &Path) -> Result<Proc> {
        use std::os::unix::process::CommandExt;
        let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0)
            .spawn()
            .with_context(|| format!("spawning {:?}", cmd.get_program()))?;
        Ok(Proc { child: Some(child) })
    }

    /// Exit status if the process already ended (a start that failed early).
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // The group id is the child's pid (process_group(0)).
            // SAFETY: kill takes plain integers; a group already gone is an error we ignore.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `ready` every 200 ms until it is true, the process exits, or `timeout` passes;
/// the error carries the tail of the log either way.
fn wait_ready(
    proc: &mut Proc,
    what: &str,
    log: &Path,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return Ok(());
        }
        if let Some(status) = proc.exited() {
            bail!("{what} exited early ({status})\n{}", log_tail(log, 40));
        }
        if Instant::now() > deadline {
            bail!("{what} not ready after {timeout:?}\n{}", log_tail(log, 40));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// True when a log says the listen port was taken between `free_port()` and the bind.
pub fn port_clash(log: &Path) -> bool {
    says_port_clash(&std::fs::read_to_string(log).unwrap_or_default())
}

/// True when `log` (what a start printed) says its listen port was taken.
fn says_port_clash(log: &str) -> bool {
    let text = log.to_lowercase();
    text.contains("address already in use") || text.contains("bind: address")
}

/// Runs `f`, which blocks (waits for a process). Called from a plain `#[test]` or a
/// `#[tokio::test]`'s own body (which `block_on` drives on the test's thread), it simply
/// runs; called from a task on a worker of a multi-threaded runtime, the worker's other
/// tasks move to another thread meanwhile (`block_in_place`), so nothing else stalls.
fn blocking<R>(f: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tool_error_names_the_installer() {
        let err = require(Path::new("/nonexistent/minio"), "minio")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/nonexistent/minio") && err.contains(".ci/install-tools.sh"),
            "{err}"
        );
    }

    #[test]
    fn free_ports_are_nonzero() {
        assert_ne!(free_port(), 0);
    }

    #[test]
    fn a_taken_port_is_recognised_in_a_log() {
        assert!(says_port_clash(
            "Error: cannot listen on 127.0.0.1:4000\n\nCaused by:\n    Address already in use (os error 98)"
        ));
        assert!(!says_port_clash("zone ready"));
    }
}
