//! PostgreSQL 15 from the Debian package: `initdb` + `pg_ctl` in a temp dir.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use anyhow::{bail, Context, Result};

use crate::{free_port, log_tail, require};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// Superuser created by initdb; trust auth, so no password.
const SUPERUSER: &str = "postgres";
/// PostgreSQL refuses to run as root (and CI runs as root), so the server runs as this
/// dedicated system user, created on first use.
const OS_USER: &str = "weft-pg";

/// A running PostgreSQL cluster, stopped and deleted on drop.
pub struct Postgres {
    dir: tempfile::TempDir,
    port: u16,
    as_root: bool,
}

impl Postgres {
    /// initdb into a fresh temp dir and start on 127.0.0.1:<free port> with trust auth.
    pub fn start() -> Result<Postgres> {
        for tool in ["initdb", "pg_ctl", "postgres"] {
            require(&Path::new(PG_BIN).join(tool), &format!("PostgreSQL 15 `{tool}`"))?;
        }
        // SAFETY: geteuid takes nothing and cannot fail.
        let as_root = unsafe { libc::geteuid() } == 0;
        let dir = tempfile::Builder::new().prefix("weft-pg-").tempdir()?;
        if as_root {
            ensure_os_user()?;
            chown(dir.path())?;
        }
        let data = dir.path().join("data");
        let mut pg = Postgres {
            dir,
            port: 0,
            as_root,
        };
        pg.run(
            Command::new(Path::new(PG_BIN).join("initdb"))
                .arg("-D")
                .arg(&data)
                .args([
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-instructions",
                ]),
            "initdb",
        )?;
        // Unix socket in our own dir: the default /var/run/postgresql is not writable by
        // OS_USER and would be shared between clusters.
        let socket_dir = pg.dir.path().display().to_string();
        // A few tries: the free port can be taken by someone else before postgres binds it.
        for attempt in 1..=3 {
            pg.port = free_port();
            let conf = format!(
                "\nlisten_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{socket_dir}'\n",
                pg.port
            );
            std::fs::write(data.join("postgresql.auto.conf"), conf)?;
            let started = pg.run(
                Command::new(Path::new(PG_BIN).join("pg_ctl"))
                    .arg("-D")
                    .arg(&data)
                    .arg("-l")
                    .arg(pg.log())
                    .args(["-w", "-t", "60", "start"]),
                "pg_ctl start",
            );
            match started {
                Ok(()) => return Ok(pg),
                Err(_) if attempt < 3 && crate::port_clash(&pg.log()) => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("the last attempt returns")
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`
    pub fn url(&self) -> String {
        self.db_url("postgres")
    }

    /// Port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// CREATE DATABASE via the `createdb` client; returns the new database's URL.
    pub fn create_database(&self, name: &str) -> Result<String> {
        let out = Command::new(Path::new(PG_BIN).join("createdb"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                SUPERUSER,
                name,
            ])
            .output()
            .context("running createdb")?;
        if !out.status.success() {
            bail!("createdb {name} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(self.db_url(name))
    }

    fn db_url(&self, db: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{db}", self.port)
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("postgres.log")
    }

    /// Runs a server-side command, as OS_USER when we are root.
    fn run(&self, cmd: &mut Command, what: &str) -> Result<()> {
        let out = if self.as_root {
            let mut wrapped = Command::new("runuser");
            wrapped
                .args(["-u", OS_USER, "--"])
                .arg(cmd.get_program())
                .args(cmd.get_args());
            wrapped.output()
        } else {
            cmd.output()
        }
        .with_context(|| format!("running {what}"))?;
        if !out.status.success() {
            bail!(
                "{what} failed ({}):\n{}{}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                log_tail(&self.log(), 20)
            );
        }
        Ok(())
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.port != 0 {
            let data = self.dir.path().join("data");
            // Immediate: tests do not need a clean shutdown, only a fast one.
            let _ = self.run(
                Command::new(Path::new(PG_BIN).join("pg_ctl"))
                    .arg("-D")
                    .arg(&data)
                    .args(["-m", "immediate", "-w", "stop"]),
                "pg_ctl stop",
            );
        }
        // The TempDir field removes the directory after this.
    }
}

/// Creates OS_USER if missing. Serialised in-process (parallel tests); `useradd` exit 9
/// ("already exists") covers a race with another test process.
fn ensure_os_user() -> Result<()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let exists = || {
        Command::new("id")
            .arg("-u")
            .arg(OS_USER)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if exists() {
        return Ok(());
    }
    let status = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            OS_USER,
        ])
        .status()
        .context("running useradd")?;
    if !status.success() && !exists() {
        bail!("useradd {OS_USER} failed ({status}); PostgreSQL cannot run as root");
    }
    Ok(())
}

fn chown(path: &Path) -> Result<()> {
    let out = Command::new("chown").arg(OS_USER).arg(path).output()?;
    if !out.status.success() {
        bail!(
            "chown {OS_USER} {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
