//! The real `weft` binary run as a test's client: with an environment a developer's shell
//! cannot change, and what it printed and how it exited ([`Run`]) checked in one line.
//!
//! The binary is the caller's: an integration test of the `weft` crate passes
//! `env!("CARGO_BIN_EXE_weft")` (this crate cannot name it).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::blocking;

/// Variables a developer's shell may hold that would change what the tests see.
pub const ENV_TO_CLEAR: &[&str] = &[
    "WEFT_URL",
    "WEFT_TOKEN",
    "WEFT_ZONE",
    "WEFT_LISTEN",
    "WEFT_DATA_DIR",
    "WEFT_CATALOG",
    "WEFT_CONFIG",
    "WEFT_CA_FILE",
    "WEFT_TLS_CERT",
    "WEFT_TLS_KEY",
    "WEFT_TLS_CA",
    "WEFT_LEASE_SECONDS",
    "WEFT_ORPHAN_GRACE",
    "WEFT_SCRUB_INTERVAL",
    "WEFT_LOG",
    "WEFT_LOG_FORMAT",
    "RUST_LOG",
];

/// `weft` (the binary at `weft`) run in `cwd`, with `config_home` as its XDG config
/// directory, no standard input and none of [`ENV_TO_CLEAR`] set.
pub fn clean_command(weft: impl AsRef<Path>, cwd: &Path, config_home: &Path) -> Command {
    let mut cmd = Command::new(weft.as_ref());
    cmd.current_dir(cwd)
        .env("XDG_CONFIG_HOME", config_home)
        .env("XDG_STATE_HOME", config_home.join("state"))
        .stdin(Stdio::null());
    for v in ENV_TO_CLEAR {
        cmd.env_remove(v);
    }
    cmd
}

/// What a `weft` run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    /// The exit code; -1 when a signal ended the run.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The arguments, for messages.
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

    /// Standard output as JSON; panics, showing it, if it is not.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("weft {}: stdout is not JSON ({e}): {}", self.args, self.stdout))
    }

    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

/// Runs `cmd` to its end.
#[track_caller]
pub fn run(cmd: &mut Command) -> Run {
    let args = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let out = blocking(|| cmd.output()).unwrap_or_else(|e| panic!("cannot run {:?}: {e}", cmd.get_program()));
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args,
    }
}

/// The first `sh` code block under the README heading `heading` (the whole line after
/// `### `): the commands a test runs as a user would copy them.
pub fn readme_block(heading: &str) -> &'static str {
    const README: &str = include_str!("../../../README.md");
    README
        .split(&format!("### {heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("the README has no section {heading:?}"))
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| panic!("the README's section {heading:?} has no sh block"))
}

/// Waits for `cond`, failing with `what` after a minute (a condition, not a timing: what
/// the tests wait for happens within milliseconds unless it is broken).
#[track_caller]
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !cond() {
        assert!(std::time::Instant::now() < until, "never happened: {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Run {
        let dir = tempfile::tempdir().unwrap();
        run(clean_command("/bin/sh", dir.path(), dir.path()).args(["-c", script]))
    }

    #[test]
    fn a_run_holds_what_was_printed_and_the_exit_code() {
        let r = sh("echo '{\"a\": 1}'; echo 'weft: error: gone (not_found)' >&2; exit 3");
        assert_eq!(r.code, 3);
        assert_eq!(r.json()["a"], 1);
        assert_eq!(r.lines(), ["{\"a\": 1}"]);
        r.fails(3, "not_found");
        sh("true").ok();
    }

    #[test]
    #[should_panic(expected = "expected code not_found")]
    fn a_failure_with_another_code_is_refused() {
        sh("echo 'weft: error: no (permission_denied)' >&2; exit 3").fails(3, "not_found");
    }

    #[test]
    fn the_environment_is_clean() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("cfg");
        let mut cmd = clean_command("/bin/sh", dir.path(), &config);
        let removed: Vec<_> = cmd
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for v in ENV_TO_CLEAR {
            assert!(removed.iter().any(|r| r == v), "{v} is not removed");
        }
        let r = run(cmd.args(["-c", "echo \"$XDG_CONFIG_HOME\"; pwd"])).ok();
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(
            r.lines(),
            [config.to_str().unwrap(), cwd.to_str().unwrap()],
            "{r:?}"
        );
    }
}
