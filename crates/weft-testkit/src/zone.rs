//! A zone for tests: `weft serve` as a child process on a free 127.0.0.1 port, in a
//! scratch directory of its own, that a test can kill with SIGKILL and start again on the
//! same data, and run the `weft` commands against. `weft bench` starts its embedded zones
//! with it too, each in a directory the bench gives ([`ZoneOptions::dir`]).
//!
//! ```ignore
//! use weft_testkit::zone::ZoneProcess;
//! let z = ZoneProcess::start(env!("CARGO_BIN_EXE_weft"), "lrz").unwrap();
//! z.weft(&["mkdir", "/lrz/home/admin/x"]).ok();
//! ```
//!
//! Its methods block (on `weft serve` becoming ready, on a command): a `#[tokio::test]`
//! calls them from its body, which runs on a thread of its own in the multi-threaded
//! flavour (called from a task, they hand the worker's other tasks on meanwhile).
//!
//! This crate may not depend on weft's own crates (`scripts/check-layers.py`): a test
//! builds its client from [`ZoneProcess::url`], [`ZoneProcess::admin_token`] and
//! [`ZoneProcess::ca`], or runs the `weft` commands ([`ZoneProcess::weft`]).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cli::{clean_command, run, Run, ENV_TO_CLEAR};
use crate::{blocking, free_port, http_status, says_port_clash};

/// How often a start tries again on a fresh port when another process took its port
/// (between `free_port()` and the bind), in all.
const STARTS: u32 = 5;

/// How long `weft serve` may take to become ready.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How `weft serve` is told its address, name and data directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settings {
    /// `--listen`, `--zone` and `--data-dir` (the default).
    Flags,
    /// `WEFT_LISTEN` and `WEFT_ZONE`, and no data directory: a config file among the flags
    /// names it, the one given with [`ZoneOptions::data_dir`].
    Environment,
}

/// What a zone is started with; [`ZoneOptions::start`] starts it.
#[derive(Debug, Clone)]
pub struct ZoneOptions {
    weft: PathBuf,
    name: String,
    flags: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    ca: Option<PathBuf>,
    settings: Settings,
    data_dir: Option<PathBuf>,
    dir: Option<PathBuf>,
    token_optional: bool,
}

impl ZoneOptions {
    /// A further flag of `weft serve` (after the ones that say where it listens).
    pub fn arg(mut self, flag: impl AsRef<OsStr>) -> ZoneOptions {
        self.flags.push(flag.as_ref().to_owned());
        self
    }

    /// Further flags of `weft serve`.
    pub fn args<I, S>(mut self, flags: I) -> ZoneOptions
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.flags
            .extend(flags.into_iter().map(|f| f.as_ref().to_owned()));
        self
    }

    /// A variable in the environment of every start (which otherwise has none of
    /// [`ENV_TO_CLEAR`]).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> ZoneOptions {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// The flags make the zone serve HTTPS (`--tls-cert` and `--tls-key`, or a config
    /// file's `[tls]`) with a certificate `ca` signed: its URL is https, and the commands
    /// run against it trust `ca` (`WEFT_CA_FILE`).
    pub fn tls(mut self, ca: impl Into<PathBuf>) -> ZoneOptions {
        self.ca = Some(ca.into());
        self
    }

    /// How `weft serve` is told where it listens (default [`Settings::Flags`]).
    pub fn settings(mut self, settings: Settings) -> ZoneOptions {
        self.settings = settings;
        self
    }

    /// The data directory, instead of `data` in the zone's scratch directory.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> ZoneOptions {
        self.data_dir = Some(dir.into());
        self
    }

    /// The zone's directory, instead of a scratch directory of its own: created if
    /// missing, and left in place when the zone is dropped (whoever gave it removes it).
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> ZoneOptions {
        self.dir = Some(dir.into());
        self
    }

    /// A server of a zone that another one, starting at the same moment, may set up: only
    /// that one writes `admin.token`, so a data directory without it is no error here
    /// ([`ZoneProcess::admin_token`] is empty then).
    pub fn token_optional(mut self) -> ZoneOptions {
        self.token_optional = true;
        self
    }

    /// Starts the zone on a free port, on another one if that was taken before the zone
    /// could bind it, and waits until it is ready: it logged `zone ready` (after its bind)
    /// and, serving HTTP, answers `/api/v1/health` with 200. The error says why not, with
    /// what it printed.
    pub fn start(self) -> Result<ZoneProcess> {
        let dir = match &self.dir {
            Some(given) => Dir::Given(given.clone()),
            None => Dir::Scratch(tempfile::Builder::new().prefix("weft-zone-").tempdir()?),
        };
        for sub in ["work", "config"] {
            let sub = dir.path().join(sub);
            std::fs::create_dir_all(&sub).with_context(|| format!("creating {}", sub.display()))?;
        }
        let data_dir = self.data_dir.clone().unwrap_or_else(|| dir.path().join("data"));
        let mut z = ZoneProcess {
            child: None,
            port: 0,
            url: String::new(),
            admin_token: String::new(),
            data_dir,
            extra_env: Vec::new(),
            options: self,
            dir,
        };
        z.serve(free_port())?;
        let token = z.data_dir.join("admin.token");
        z.admin_token = match std::fs::read_to_string(&token) {
            Ok(text) => text.trim().to_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && z.options.token_optional => String::new(),
            Err(e) => {
                return Err(e).with_context(|| format!("{} is written on the first start", token.display()))
            }
        };
        Ok(z)
    }
}

/// A running zone (`weft serve` as a child process) with a scratch directory: `data` (its
/// data directory, unless [`ZoneOptions::data_dir`] says otherwise), `work` (where its
/// commands run), `config` (their XDG config directory) and `serve.log` (what every start
/// printed). SIGKILLed on drop; the directory goes after it, unless it was given
/// ([`ZoneOptions::dir`]).
#[derive(Debug)]
pub struct ZoneProcess {
    child: Option<Child>,
    port: u16,
    url: String,
    admin_token: String,
    data_dir: PathBuf,
    /// Environment of the next starts, after the options' ([`ZoneProcess::set_env`]).
    extra_env: Vec<(OsString, OsString)>,
    options: ZoneOptions,
    dir: Dir,
}

/// A zone's directory: its own, removed after it, or one it was given, left in place.
#[derive(Debug)]
enum Dir {
    Scratch(tempfile::TempDir),
    Given(PathBuf),
}

impl Dir {
    fn path(&self) -> &Path {
        match self {
            Dir::Scratch(dir) => dir.path(),
            Dir::Given(dir) => dir,
        }
    }
}

impl ZoneProcess {
    /// The zone `name` (`weft serve` of the binary `weft`), with no further flags.
    pub fn start(weft: impl Into<PathBuf>, name: &str) -> Result<ZoneProcess> {
        ZoneProcess::options(weft, name).start()
    }

    /// The zone `name` with flags, environment or TLS to give before [`ZoneOptions::start`].
    pub fn options(weft: impl Into<PathBuf>, name: &str) -> ZoneOptions {
        ZoneOptions {
            weft: weft.into(),
            name: name.to_owned(),
            flags: Vec::new(),
            env: Vec::new(),
            ca: None,
            settings: Settings::Flags,
            data_dir: None,
            dir: None,
            token_optional: false,
        }
    }

    /// Another server of this zone: the same name, flags and environment (a shared
    /// catalog among them), and a data directory of its own holding copies of this
    /// server's key file and admin token, as an operator sets up each further server.
    pub fn another_server(&self) -> Result<ZoneOptions> {
        let n = std::fs::read_dir(self.dir.path())?.count();
        let data = self.dir.path().join(format!("server-{n}"));
        std::fs::create_dir(&data)?;
        for file in ["secret.key", "admin.token"] {
            std::fs::copy(self.data_dir.join(file), data.join(file))
                .with_context(|| format!("copying {file} of {}", self.name()))?;
        }
        let mut options = self.options.clone();
        options.data_dir = Some(data);
        // Its log, work and config directory of its own, as with every other server.
        options.dir = None;
        Ok(options)
    }

    pub fn name(&self) -> &str {
        &self.options.name
    }

    /// `http://127.0.0.1:PORT`, or https for a zone started with [`ZoneOptions::tls`].
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The token of `admin`, from `admin.token` in the data directory (empty if there was
    /// none, for a zone started with [`ZoneOptions::token_optional`]).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The CA file its clients trust, for a zone serving HTTPS.
    pub fn ca(&self) -> Option<&Path> {
        self.options.ca.as_deref()
    }

    /// The scratch directory (or the one given with [`ZoneOptions::dir`]).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Where commands run (relative local paths land here).
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The XDG config directory of commands (`weft login` saves there).
    pub fn config_home(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("serve.log")
    }

    /// What every start of the zone printed, in order.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the zone with SIGKILL (no shutdown of any kind) and reaps it.
    #[track_caller]
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("kill9: the zone is not running");
        child.kill().expect("sending SIGKILL"); // what Child::kill sends on Unix
        blocking(|| child.wait()).expect("reaping the zone");
    }

    /// Waits for the zone to end by itself (a crash point); how it ended.
    #[track_caller]
    pub fn wait(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("wait: the zone is not running");
        blocking(|| child.wait()).expect("reaping the zone")
    }

    /// The environment of the next starts besides the one given with
    /// [`ZoneOptions::env`] (`FAILPOINTS`, say); replaces what the last call set.
    pub fn set_env(&mut self, vars: &[(&str, &str)]) {
        self.extra_env = vars
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
    }

    /// How the next starts are told where to listen.
    pub fn set_settings(&mut self, settings: Settings) {
        self.options.settings = settings;
    }

    /// Starts the stopped zone again on its data directory and port, and waits until it
    /// is ready. Should another process have taken the port meanwhile, the zone moves to
    /// a new one ([`ZoneProcess::url`] changes: a peer or proxy given the old one would
    /// not find it). `Err` if it does not become ready (its log says why).
    pub fn restart(&mut self) -> Result<()> {
        self.serve(self.port)
    }

    /// `weft` with a clean environment, in the work directory, with its own config
    /// directory, and neither WEFT_URL nor WEFT_TOKEN set.
    pub fn command(&self) -> Command {
        clean_command(&self.options.weft, &self.work(), &self.config_home())
    }

    /// Runs `weft ARGS` as `admin`.
    #[track_caller]
    pub fn weft(&self, args: &[&str]) -> Run {
        self.weft_as(&self.admin_token, args)
    }

    /// Runs `weft ARGS` with the token `token` (and, for HTTPS, trusting [`Self::ca`]).
    #[track_caller]
    pub fn weft_as(&self, token: &str, args: &[&str]) -> Run {
        let mut cmd = self.command();
        cmd.env("WEFT_URL", &self.url).env("WEFT_TOKEN", token);
        if let Some(ca) = &self.options.ca {
            cmd.env("WEFT_CA_FILE", ca);
        }
        run(cmd.args(args))
    }

    /// `weft user add NAME` and a token for it.
    #[track_caller]
    pub fn user_with_token(&self, name: &str) -> String {
        self.weft(&["user", "add", name]).ok();
        let out = self.weft(&["token", "create", "--user", name]).ok();
        out.stdout.lines().last().expect("a token line").to_owned()
    }

    /// Starts `weft serve` on `port`, or on fresh ones while another process holds the
    /// port, and waits until it is ready.
    fn serve(&mut self, mut port: u16) -> Result<()> {
        if self.child.is_some() {
            bail!("{} is still running: kill9 it first", self.name());
        }
        let mut attempt = 1;
        loop {
            // Appended, so that a failure shows what every start of the zone said.
            let from = std::fs::metadata(self.log_path()).map_or(0, |m| m.len());
            let why = match self.serve_once(port, from) {
                Ok(()) => return Ok(()),
                Err(why) => why,
            };
            let said = self.log_since(from);
            if attempt < STARTS && says_port_clash(&said) {
                attempt += 1;
                port = free_port();
                continue;
            }
            bail!(
                "zone {} on port {port}: {why:#}\n--- {} ---\n{said}",
                self.name(),
                self.log_path().display()
            );
        }
    }

    /// One start on `port`; `from` is where its lines begin in the log.
    fn serve_once(&mut self, port: u16, from: u64) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        let o = &self.options;
        let listen = format!("127.0.0.1:{port}");
        let mut cmd = Command::new(&o.weft);
        cmd.arg("serve");
        for v in ENV_TO_CLEAR {
            cmd.env_remove(v);
        }
        match o.settings {
            Settings::Flags => {
                cmd.args(["--listen", &listen, "--zone", &o.name, "--data-dir"])
                    .arg(&self.data_dir);
            }
            Settings::Environment => {
                cmd.env("WEFT_LISTEN", &listen).env("WEFT_ZONE", &o.name);
            }
        }
        cmd.args(&o.flags)
            .envs(o.env.iter().chain(&self.extra_env).map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot run {}", o.weft.display()))?;
        self.child = Some(child);
        self.port = port;
        let scheme = if o.ca.is_some() { "https" } else { "http" };
        self.url = format!("{scheme}://{listen}");
        let https = o.ca.is_some();
        let ready = blocking(|| self.wait_ready(from, https));
        if ready.is_err() {
            let mut child = self.child.take().expect("started above");
            let _ = child.kill();
            let _ = child.wait();
        }
        ready
    }

    /// Waits until the zone started at `from` in the log is ready; why not, if it exits
    /// first or takes longer than [`READY_WITHIN`].
    fn wait_ready(&mut self, from: u64, https: bool) -> Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = self.child.as_mut().expect("started").try_wait()? {
                bail!("weft serve exited ({status})");
            }
            // A zone serving HTTPS cannot be asked with a raw request: its log line,
            // written after the bind, must do.
            if self.log_since(from).contains("zone ready")
                && (https || http_status(self.port, "/api/v1/health") == Some(200))
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("weft serve not ready after {READY_WITHIN:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the zone printed since `from` (a length of the log).
    fn log_since(&self, from: u64) -> String {
        let log = std::fs::read(self.log_path()).unwrap_or_default();
        String::from_utf8_lossy(log.get(from as usize..).unwrap_or_default()).into_owned()
    }
}

impl Drop for ZoneProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `weft serve` that says `zone ready` without listening (so the
    /// zones below serve "HTTPS": ready by their log alone), or fails as `FAKE_MODE` says;
    /// it counts its starts in `FAKE_COUNT`.
    const FAKE: &str = r#"#!/bin/sh
[ -n "$PROBE" ] && exit 0
n=$(cat "$FAKE_COUNT" 2>/dev/null || echo 0)
echo $((n + 1)) > "$FAKE_COUNT"
case "$FAKE_MODE" in
  exit) echo "Error: the catalog is locked" >&2; exit 1 ;;
  clash) if [ "$n" -lt "$FAKE_CLASHES" ]; then
      echo "Error: cannot listen on $3: Address already in use (os error 98)" >&2; exit 1
    fi ;;
esac
data=${FAKE_DATA:-$7}
mkdir -p "$data"
[ -f "$data/admin.token" ] || echo "token-$n" > "$data/admin.token"
echo "args=$* listen=$WEFT_LISTEN zone=$WEFT_ZONE extra=$EXTRA"
echo "zone ready"
exec sleep 600
"#;

    /// The fake in `dir`, once it surely runs: a file just written may not be run while
    /// a process forked meanwhile (by a test beside this one) still holds it open.
    fn fake_weft(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("weft");
        std::fs::write(&path, FAKE).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        loop {
            match Command::new(&path).env("PROBE", "1").status() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => panic!("{e}"),
                Ok(status) => {
                    assert!(status.success());
                    return path;
                }
            }
        }
    }

    #[test]
    fn a_taken_port_moves_the_start_and_a_restart_keeps_port_and_data() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("count");
        let mut z = ZoneProcess::options(fake_weft(dir.path()), "fake")
            .tls(dir.path().join("ca.pem"))
            .env("FAKE_MODE", "clash")
            .env("FAKE_CLASHES", "2")
            .env("FAKE_COUNT", &count)
            .args(["--flag", "x"])
            .start()
            .unwrap();
        assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "3");
        assert_eq!(
            z.log().matches("Address already in use").count(),
            2,
            "{}",
            z.log()
        );
        assert_eq!(z.admin_token(), "token-2");
        assert_eq!(z.url(), format!("https://127.0.0.1:{}", z.port()));
        let data = z.data_dir().display().to_string();
        assert!(
            z.log().contains(&format!(
                "args=serve --listen 127.0.0.1:{} --zone fake --data-dir {data} --flag x",
                z.port()
            )),
            "{}",
            z.log()
        );
        assert!(z.restart().is_err(), "a running zone is not started twice");

        let (port, pid) = (z.port(), z.pid().unwrap());
        z.kill9();
        assert!(z.pid().is_none());
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "killed and reaped");
        z.set_env(&[("EXTRA", "failpoint")]);
        z.restart().unwrap();
        assert_eq!(z.port(), port, "a free port is kept");
        assert!(z.log().ends_with("extra=failpoint\nzone ready\n"), "{}", z.log());
        assert_eq!(z.admin_token(), "token-2");
        assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "4");

        // Told by the environment, the data directory from elsewhere (a config file).
        let elsewhere = dir.path().join("elsewhere");
        let e = ZoneProcess::options(fake_weft(dir.path()), "envz")
            .tls(dir.path().join("ca.pem"))
            .settings(Settings::Environment)
            .data_dir(&elsewhere)
            .env("FAKE_DATA", &elsewhere)
            .env("FAKE_COUNT", dir.path().join("count2"))
            .start()
            .unwrap();
        assert_eq!(e.data_dir(), elsewhere);
        assert!(
            e.log().contains(&format!(
                "args=serve listen=127.0.0.1:{} zone=envz extra=\n",
                e.port()
            )),
            "{}",
            e.log()
        );
    }

    #[test]
    fn a_zone_in_a_given_directory_leaves_it_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let given = dir.path().join("bench").join("zone");
        let z = ZoneProcess::options(fake_weft(dir.path()), "given")
            .tls(dir.path().join("ca.pem"))
            .env("FAKE_COUNT", dir.path().join("count"))
            .dir(&given)
            .start()
            .unwrap();
        assert_eq!(z.dir(), given);
        assert_eq!(z.data_dir(), given.join("data"));
        assert_eq!(z.log_path(), given.join("serve.log"));
        assert!(z.log().contains("zone ready"), "{}", z.log());
        assert_eq!(z.admin_token(), "token-0");
        // Another server of it gets a scratch directory of its own.
        std::fs::write(z.data_dir().join("secret.key"), "key").unwrap();
        let other = z.another_server().unwrap();
        assert_eq!(other.dir, None);
        let pid = z.pid().unwrap();
        drop(z);
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "killed and reaped");
        assert!(given.join("serve.log").exists() && given.join("data/admin.token").exists());
    }

    #[test]
    fn a_server_whose_zone_another_set_up_may_have_no_token() {
        let dir = tempfile::tempdir().unwrap();
        let weft = fake_weft(dir.path());
        let server = |n: u32| {
            ZoneProcess::options(&weft, "shared")
                .tls(dir.path().join("ca.pem"))
                .data_dir(dir.path().join(format!("server-{n}")))
                // The token goes to the data directory of the server that set the zone up.
                .env("FAKE_DATA", dir.path().join("first"))
                .env("FAKE_COUNT", dir.path().join("count"))
        };
        let err = server(1).start().unwrap_err();
        assert!(format!("{err:#}").contains("admin.token"), "{err:#}");
        let z = server(2).token_optional().start().unwrap();
        assert_eq!(z.admin_token(), "");
    }

    #[test]
    fn a_zone_that_cannot_start_is_named_with_what_it_said() {
        let dir = tempfile::tempdir().unwrap();
        let err = ZoneProcess::options(fake_weft(dir.path()), "broken")
            .env("FAKE_MODE", "exit")
            .env("FAKE_COUNT", dir.path().join("count"))
            .start()
            .unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("zone broken") && text.contains("exited") && text.contains("catalog is locked"),
            "{text}"
        );

        // A port that is always taken: five starts, then the error says so.
        let count = dir.path().join("clashes");
        let err = ZoneProcess::options(fake_weft(dir.path()), "crowded")
            .env("FAKE_MODE", "clash")
            .env("FAKE_CLASHES", "99")
            .env("FAKE_COUNT", &count)
            .start()
            .unwrap_err();
        assert!(format!("{err:#}").contains("Address already in use"), "{err:#}");
        assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "5");
    }
}
