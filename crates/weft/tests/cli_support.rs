//! Shared by the `cli_*` tests: a real zone (`weft serve` as a child process on a free
//! port, killed on drop) and a way to run the real `weft` binary against it. Included by
//! the other test files with `#[path]`; on its own it holds no tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_weft");

/// Variables a developer's shell may hold that would change what the tests see.
pub const ENV_TO_CLEAR: &[&str] = &[
    "WEFT_URL",
    "WEFT_TOKEN",
    "WEFT_ZONE",
    "WEFT_LISTEN",
    "WEFT_DATA_DIR",
    "WEFT_CATALOG",
    "WEFT_CONFIG",
    "WEFT_LOG",
    "RUST_LOG",
];

/// A running zone, with a scratch directory for local files.
pub struct Zone {
    child: Child,
    pub url: String,
    pub port: u16,
    pub admin_token: String,
    pub dir: tempfile::TempDir,
    /// For a zone serving HTTPS: the CA file commands trust (WEFT_CA_FILE).
    pub ca: Option<PathBuf>,
}

impl Zone {
    /// A zone named `testz`.
    pub fn start() -> Zone {
        Zone::start_named("testz")
    }

    pub fn start_named(name: &str) -> Zone {
        Zone::start_with(name, &[], None)
    }

    /// A zone started with further flags of `weft serve`. With `ca`, the flags make it
    /// serve HTTPS (`--tls-cert`, `--tls-key`, or a config file's `[tls]`): its URL is
    /// https and commands trust `ca`.
    pub fn start_with(name: &str, extra: &[&str], ca: Option<&Path>) -> Zone {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        let data = dir.path().join("data");
        let log_path = dir.path().join("serve.log");
        // The port is free when picked, but another process may take it before `weft
        // serve` binds it: then the zone starts again on another.
        let mut attempt = 1;
        let (child, port) = loop {
            let port = free_port();
            let log = std::fs::File::create(&log_path).unwrap();
            let mut cmd = Command::new(BIN);
            cmd.args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--zone",
                name,
                "--data-dir",
            ])
            .arg(&data)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
            for v in ENV_TO_CLEAR {
                cmd.env_remove(v);
            }
            let mut child = cmd.spawn().expect("start weft serve");
            // A zone serving HTTPS cannot be asked with a raw request: it is ready once it
            // says it listens (after its bind succeeded).
            let ready = match ca {
                None => wait_ready(&mut child, || health_is_ok(port)),
                Some(_) => wait_ready(&mut child, || {
                    std::fs::read_to_string(&log_path)
                        .unwrap_or_default()
                        .contains("zone ready")
                }),
            };
            match ready {
                Ok(()) => break (child, port),
                Err(why) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    if attempt < 5 && weft_testkit::port_clash(&log_path) {
                        attempt += 1;
                        continue;
                    }
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    panic!("{why}:\n{log}");
                }
            }
        };
        let admin_token = std::fs::read_to_string(data.join("admin.token"))
            .expect("admin.token written on first start")
            .trim()
            .to_owned();
        let scheme = if ca.is_some() { "https" } else { "http" };
        Zone {
            child,
            url: format!("{scheme}://127.0.0.1:{port}"),
            port,
            admin_token,
            dir,
            ca: ca.map(Path::to_owned),
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("serve.log")).unwrap_or_default()
    }

    /// The scratch directory commands run in (relative local paths land here).
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Runs `weft ARGS` as the admin.
    pub fn weft(&self, args: &[&str]) -> Run {
        self.weft_as(&self.admin_token, args)
    }

    /// Runs `weft ARGS` with the token `token`.
    pub fn weft_as(&self, token: &str, args: &[&str]) -> Run {
        let mut cmd = self.command();
        cmd.env("WEFT_URL", &self.url).env("WEFT_TOKEN", token);
        if let Some(ca) = &self.ca {
            cmd.env("WEFT_CA_FILE", ca);
        }
        run(cmd.args(args))
    }

    /// `weft` with a clean environment, in the work dir, with its own config dir, and
    /// neither WEFT_URL nor WEFT_TOKEN set.
    pub fn command(&self) -> Command {
        clean_command(&self.work(), &self.dir.path().join("config"))
    }

    /// `weft user add NAME` and a token for it.
    pub fn user_with_token(&self, name: &str) -> String {
        self.weft(&["user", "add", name]).ok();
        let out = self.weft(&["token", "create", "--user", name]).ok();
        out.stdout.lines().last().expect("a token line").to_owned()
    }
}

impl Drop for Zone {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn clean_command(cwd: &Path, config_home: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(cwd)
        .env("XDG_CONFIG_HOME", config_home)
        .stdin(Stdio::null());
    for v in ENV_TO_CLEAR {
        cmd.env_remove(v);
    }
    cmd
}

/// What a `weft` run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    args: String,
}

impl Run {
    /// Asserts success; returns the run for further checks.
    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(
            self.code, 0,
            "weft {} failed:\nstdout: {}\nstderr: {}",
            self.args, self.stdout, self.stderr
        );
        self
    }

    /// Asserts the exit code and that stderr has the `weft: error: ... (<code>)` form.
    #[track_caller]
    pub fn fails(self, exit: i32, code: &str) -> Run {
        assert_eq!(
            self.code, exit,
            "weft {}: wrong exit code:\nstdout: {}\nstderr: {}",
            self.args, self.stdout, self.stderr
        );
        let line = self.stderr.lines().find(|l| l.starts_with("weft: error: "));
        let line =
            line.unwrap_or_else(|| panic!("weft {}: no error line in stderr: {}", self.args, self.stderr));
        assert!(
            line.ends_with(&format!("({code})")),
            "weft {}: expected code {code}: {line}",
            self.args
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("weft {}: stdout is not JSON ({e}): {}", self.args, self.stdout))
    }

    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

pub fn run(cmd: &mut Command) -> Run {
    let args = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let out = cmd.output().expect("run weft");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args,
    }
}

/// Waits until the zone `child` is `ready`; why not, if it exits or takes longer than a
/// minute.
fn wait_ready(child: &mut Child, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Err(format!("weft serve exited with {status}"));
        }
        if ready() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err("weft serve did not become ready in 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A raw HTTP/1.1 request, so that waiting for the zone does not depend on the client
/// under test.
fn health_is_ok(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

/// Deterministic bytes that do not compress or repeat at piece boundaries (xorshift).
pub fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// `blake3:<hex>` as `b3sum` computes it.
pub fn b3(bytes: &[u8]) -> String {
    format!("blake3:{}", blake3::hash(bytes).to_hex())
}

/// Asserts two directory trees hold the same names and bytes.
#[track_caller]
pub fn assert_same_tree(a: &Path, b: &Path) {
    let list = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let (la, lb) = (list(a), list(b));
    assert_eq!(la, lb, "{} and {} differ in names", a.display(), b.display());
    for name in la {
        let (pa, pb) = (a.join(&name), b.join(&name));
        if pa.is_dir() {
            assert!(pb.is_dir(), "{} is not a directory", pb.display());
            assert_same_tree(&pa, &pb);
        } else {
            assert!(
                std::fs::read(&pa).unwrap() == std::fs::read(&pb).unwrap(),
                "{} and {} differ",
                pa.display(),
                pb.display()
            );
        }
    }
}
