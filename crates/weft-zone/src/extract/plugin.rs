//! Plugins: commands an administrator names in the configuration file for formats no
//! built-in reader knows (HDF5 and NetCDF-4 through h5py, say). A plugin gets a copy of
//! the object in the zone's scratch space as its one argument and prints a JSON object
//! of attribute → value (or `{"value": .., "unit": ..}`, or a list of either): the zone
//! prefixes the attributes with the plugin's name. It runs without a shell, with an
//! empty environment but PATH, a time limit and an output limit; its process group is
//! killed when either is passed.

use serde::Deserialize;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use weft_extract::{Avu, Format};
use weft_types::meta::validate_avu_part;
use weft_types::{Error, ErrorCode};

/// `[[extract.plugins]]` of the configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSpec {
    /// The first part of its attributes (`hdf5` → `hdf5.title`): [a-z][a-z0-9_]{0,31}.
    pub name: String,
    /// The program and its first arguments; the file's path is added last.
    pub command: Vec<String>,
    /// File names it reads: `*` and `?` globs over the last component (`*.h5`).
    #[serde(default, rename = "match")]
    pub patterns: Vec<String>,
    /// Formats it reads as the built-in detection names them (`hdf5`).
    #[serde(default)]
    pub formats: Vec<String>,
    /// Seconds it may run [default: 30].
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// Bytes it may print [default: 1 MiB].
    #[serde(default = "default_max_output")]
    pub max_output: u64,
    /// Largest object it is given [default: 4 GiB]: the object is copied to scratch space
    /// first.
    #[serde(default = "default_max_input")]
    pub max_input: u64,
}

fn default_timeout() -> u64 {
    30
}
fn default_max_output() -> u64 {
    1 << 20
}
fn default_max_input() -> u64 {
    4 << 30
}

impl PluginSpec {
    /// Errors: `invalid_argument` naming the plugin and the field.
    pub fn check(&self) -> Result<(), Error> {
        let name_ok = (1..=32).contains(&self.name.len())
            && self.name.starts_with(|c: char| c.is_ascii_lowercase())
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        let why = if !name_ok {
            Some("name must match [a-z][a-z0-9_]{0,31}".to_owned())
        } else if self.command.is_empty() || self.command[0].is_empty() {
            Some("command is empty".into())
        } else if self.patterns.is_empty() && self.formats.is_empty() {
            Some("neither match nor formats says which files it reads".into())
        } else if let Some(f) = self.formats.iter().find(|f| !KNOWN.contains(&f.as_str())) {
            Some(format!("format {f:?} is none of {}", KNOWN.join(", ")))
        } else if self.timeout == 0 || self.max_output == 0 {
            Some("timeout and max_output must be at least 1".into())
        } else {
            None
        };
        match why {
            Some(why) => Err(Error::invalid(format!("extract plugin {:?}: {why}", self.name))),
            None => Ok(()),
        }
    }

    /// Whether it reads a file named `name` detected as `format`.
    pub(crate) fn reads(&self, name: &str, format: Option<Format>) -> bool {
        self.patterns.iter().any(|p| weft_policy::name_matches(p, name))
            || format.is_some_and(|f| self.formats.iter().any(|x| x == f.name()))
    }

    /// Runs it on the file at `path`; the values it printed, prefixed with its name.
    /// Errors: `extract_failed` naming the plugin and what went wrong (it could not
    /// start, timed out, printed too much or not JSON, exited with a failure).
    pub(crate) async fn run(&self, path: &Path) -> Result<Vec<Avu>, Error> {
        let failed =
            |why: String| Error::new(ErrorCode::ExtractFailed, format!("plugin {}: {why}", self.name));
        let mut child = tokio::process::Command::new(&self.command[0])
            .args(&self.command[1..])
            .arg(path)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| failed(format!("cannot start {:?}: {e}", self.command[0])))?;
        let pid = child.id();
        let mut stdout = child.stdout.take().expect("piped").take(self.max_output + 1);
        let mut stderr = child.stderr.take().expect("piped").take(64 * 1024);
        let errors = tokio::spawn(async move {
            let mut err = Vec::new();
            let _ = stderr.read_to_end(&mut err).await;
            err
        });
        let run = async {
            let mut out = Vec::new();
            stdout.read_to_end(&mut out).await?;
            if out.len() as u64 > self.max_output {
                return Ok((None, out));
            }
            Ok::<_, std::io::Error>((Some(child.wait().await?), out))
        };
        let outcome = tokio::time::timeout(Duration::from_secs(self.timeout), run).await;
        // Whatever it started goes with it, on every path out.
        if let Some(pid) = pid {
            // SAFETY: kill(2) with a negative pid signals the process group the child
            // leads; it touches no memory of ours.
            unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
        }
        let (status, out) = match outcome {
            Err(_) => {
                return Err(failed(format!(
                    "did not finish within {} s; killed",
                    self.timeout
                )))
            }
            Ok(Err(e)) => return Err(failed(format!("reading its output: {e}"))),
            Ok(Ok((None, _))) => {
                return Err(failed(format!(
                    "printed more than {} bytes; killed",
                    self.max_output
                )))
            }
            Ok(Ok((Some(status), out))) => (status, out),
        };
        if !status.success() {
            let err = tokio::time::timeout(Duration::from_secs(1), errors).await;
            let err = err.ok().and_then(|e| e.ok()).unwrap_or_default();
            let err = String::from_utf8_lossy(&err);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no message");
            return Err(failed(format!("{status}: {}", last.trim())));
        }
        self.parse(&out).map_err(failed)
    }

    fn parse(&self, out: &[u8]) -> Result<Vec<Avu>, String> {
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(out).map_err(|e| format!("did not print a JSON object: {e}"))?;
        let mut avus = Vec::new();
        for (key, v) in map {
            let attr = format!("{}.{key}", self.name);
            let items = match v {
                serde_json::Value::Array(items) => items,
                v => vec![v],
            };
            for item in items {
                let (value, unit) = match item {
                    serde_json::Value::Object(mut o) => {
                        let value = o
                            .remove("value")
                            .ok_or_else(|| format!("{attr}: an object without \"value\""))?;
                        let unit = match o.remove("unit") {
                            None | Some(serde_json::Value::Null) => String::new(),
                            Some(serde_json::Value::String(u)) => u,
                            Some(u) => return Err(format!("{attr}: unit {u} is not text")),
                        };
                        (value, unit)
                    }
                    v => (v, String::new()),
                };
                let value = match value {
                    serde_json::Value::String(s) => s,
                    v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_)) => v.to_string(),
                    v => return Err(format!("{attr}: {v} is not text, a number or true/false")),
                };
                for (what, s) in [("attribute", &attr), ("value", &value), ("unit", &unit)] {
                    validate_avu_part(what, s).map_err(|e| format!("{attr}: {}", e.message))?;
                }
                let avu = Avu {
                    attr: attr.clone(),
                    value,
                    unit,
                };
                if !avus.contains(&avu) {
                    avus.push(avu);
                }
            }
            if avus.len() > weft_extract::MAX_AVUS {
                return Err(format!("printed more than {} values", weft_extract::MAX_AVUS));
            }
        }
        Ok(avus)
    }
}

/// The formats detection names, which `formats` may list.
const KNOWN: [&str; 6] = ["mrc", "tiff", "fits", "netcdf", "hdf5", "mdoc"];

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PluginSpec {
        PluginSpec {
            name: "hdf5".into(),
            command: vec!["sh".into(), "-c".into()],
            patterns: vec!["*.h5".into()],
            formats: vec![],
            timeout: 5,
            max_output: 1000,
            max_input: 1 << 20,
        }
    }

    #[test]
    fn parses_what_plugins_print() {
        let avus = spec()
            .parse(br#"{"title": "run 1", "shape": [4, 3], "temp": {"value": 4.5, "unit": "K"}, "ok": true}"#)
            .unwrap();
        let got: Vec<(&str, &str, &str)> = avus
            .iter()
            .map(|a| (a.attr.as_str(), a.value.as_str(), a.unit.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("hdf5.ok", "true", ""),
                ("hdf5.shape", "4", ""),
                ("hdf5.shape", "3", ""),
                ("hdf5.temp", "4.5", "K"),
                ("hdf5.title", "run 1", ""),
            ]
        );
        for bad in [
            &b"[1]"[..],
            b"{\"a\": null}",
            b"{\"a\": \"x\ny\"}",
            b"{\"a\": {\"unit\": \"K\"}}",
            b"not json",
        ] {
            assert!(spec().parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[tokio::test]
    async fn limits_hold() {
        let mut s = spec();
        s.command = vec!["sh".into(), "-c".into(), "sleep 30 & sleep 30".into()];
        s.timeout = 1;
        let t = std::time::Instant::now();
        let e = s.run(Path::new("/nonexistent")).await.unwrap_err();
        assert!(e.message.contains("did not finish within 1 s"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10));
        s.command = vec!["sh".into(), "-c".into(), "yes".into()];
        s.timeout = 5;
        let e = s.run(Path::new("/nonexistent")).await.unwrap_err();
        assert!(e.message.contains("more than 1000 bytes"), "{e}");
        s.command = vec!["sh".into(), "-c".into(), "echo broken file >&2; exit 3".into()];
        let e = s.run(Path::new("/nonexistent")).await.unwrap_err();
        assert!(
            e.message.contains("broken file") && e.code == ErrorCode::ExtractFailed,
            "{e}"
        );
        s.command = vec!["/no/such/program".into()];
        assert!(s
            .run(Path::new("/x"))
            .await
            .unwrap_err()
            .message
            .contains("cannot start"));
    }
}
