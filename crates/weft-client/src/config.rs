//! Where a client finds its zone, token and CA file: `WEFT_URL` / `WEFT_TOKEN` /
//! `WEFT_CA_FILE` first, then the file `weft login` writes
//! (`$XDG_CONFIG_HOME/weft/config.toml`, mode 0600 since it holds a secret). The CLI and
//! the Python SDK both resolve through here, so one `weft login` serves both.

use crate::client::Client;
use crate::error::ClientError;
use crate::tls::TrustedCas;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFile {
    pub url: Option<String>,
    pub token: Option<String>,
    /// PEM file of a CA that signed the zone's certificate (trusted besides the system
    /// roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

/// The zone, token and CA file a client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub url: String,
    pub token: Option<String>,
    pub ca_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no configuration directory (set HOME or XDG_CONFIG_HOME)")]
    NoDirectory,
    /// The file exists but cannot be read, parsed or written.
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    /// Neither `WEFT_URL` nor the file names a zone.
    #[error("no zone configured: set WEFT_URL (and WEFT_TOKEN), or run `weft login URL --token T`")]
    NoZone,
}

impl ConfigError {
    /// A stable code, as [`ClientError::code`].
    pub fn code(&self) -> &'static str {
        match self {
            ConfigError::NoZone => "no_zone",
            _ => "config",
        }
    }

    fn file(path: &Path, e: impl std::fmt::Display) -> ConfigError {
        ConfigError::File {
            path: path.to_owned(),
            message: e.to_string(),
        }
    }
}

/// The file `weft login` writes.
pub fn path() -> Result<PathBuf, ConfigError> {
    dirs::config_dir()
        .map(|d| d.join("weft").join("config.toml"))
        .ok_or(ConfigError::NoDirectory)
}

/// The saved settings; none when the file does not exist.
pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ConfigFile::default()),
        Err(e) => return Err(ConfigError::file(path, e)),
    };
    toml::from_str(&text).map_err(|e| ConfigError::file(path, e))
}

/// Whether users other than the owner may read the file (and so the token in it).
pub fn readable_by_others(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o077 != 0)
}

/// Writes the file readable by its owner only, atomically (a crash leaves the old file).
pub fn save(path: &Path, config: &ConfigFile) -> Result<(), ConfigError> {
    let dir = path
        .parent()
        .ok_or_else(|| ConfigError::file(path, "has no directory"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| ConfigError::file(dir, e))?;
    let text = toml::to_string(config).map_err(|e| ConfigError::file(path, e))?;
    let tmp = dir.join(".config.toml.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| ConfigError::file(&tmp, e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| ConfigError::file(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| ConfigError::file(path, e))
}

/// Combines environment and file. A token saved for one zone is never sent to another:
/// when `WEFT_URL` names a different zone than the file, the file's token (and CA file) is
/// left out.
pub fn resolve(
    env_url: Option<String>,
    env_token: Option<String>,
    env_ca_file: Option<String>,
    file: ConfigFile,
) -> Result<Settings, ConfigError> {
    let env_url = env_url.filter(|u| !u.trim().is_empty());
    let env_token = env_token.filter(|t| !t.trim().is_empty());
    let env_ca_file = env_ca_file.filter(|f| !f.trim().is_empty()).map(PathBuf::from);
    let same_zone = match (&env_url, &file.url) {
        (Some(e), Some(f)) => same_url(e, f),
        (None, _) => true,
        (Some(_), None) => false,
    };
    let url = env_url.or(file.url).ok_or(ConfigError::NoZone)?;
    let (token, ca_file) = match same_zone {
        true => (env_token.or(file.token), env_ca_file.or(file.ca_file)),
        false => (env_token, env_ca_file),
    };
    Ok(Settings { url, token, ca_file })
}

/// The settings of a client given a URL, token or CA file of its own (the Python SDK's
/// arguments), the rest as the CLI finds it (`env` reads `WEFT_URL`, `WEFT_TOKEN` and
/// `WEFT_CA_FILE`). A URL given takes the environment's token and CA file only when the
/// environment names the same zone, and the saved ones only when saved for it: a token
/// is never sent to a zone it was not meant for.
pub fn resolve_with(
    url: Option<String>,
    token: Option<String>,
    ca_file: Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
    file: ConfigFile,
) -> Result<Settings, ConfigError> {
    let url = url.filter(|u| !u.trim().is_empty());
    let env_applies = match &url {
        None => true,
        Some(u) => env("WEFT_URL").is_some_and(|e| same_url(&e, u)),
    };
    let (env_token, env_ca) = match env_applies {
        true => (env("WEFT_TOKEN"), env("WEFT_CA_FILE")),
        false => (None, None),
    };
    let token = token.filter(|t| !t.trim().is_empty()).or(env_token);
    let ca_file = ca_file.filter(|f| !f.trim().is_empty()).or(env_ca);
    resolve(url.or_else(|| env("WEFT_URL")), token, ca_file, file)
}

impl Settings {
    /// A client of the zone, trusting the CA file besides the system roots.
    pub fn connect(&self) -> Result<Client, ClientError> {
        let cas = match &self.ca_file {
            Some(path) => TrustedCas::from_pem_file(path)?,
            None => TrustedCas::default(),
        };
        Client::with_cas(&self.url, self.token.clone(), &cas)
    }
}

fn same_url(a: &str, b: &str) -> bool {
    a.trim().trim_end_matches('/') == b.trim().trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(url: &str, token: &str) -> ConfigFile {
        ConfigFile {
            url: Some(url.into()),
            token: Some(token.into()),
            ca_file: None,
        }
    }

    #[test]
    fn environment_wins() {
        let s = resolve(
            Some("http://e".into()),
            Some("te".into()),
            None,
            file("http://f", "tf"),
        )
        .unwrap();
        assert_eq!(
            s,
            Settings {
                url: "http://e".into(),
                token: Some("te".into()),
                ca_file: None,
            }
        );
        let s = resolve(None, None, None, file("http://f", "tf")).unwrap();
        assert_eq!(
            s,
            Settings {
                url: "http://f".into(),
                token: Some("tf".into()),
                ca_file: None,
            }
        );
        let s = resolve(None, Some("te".into()), None, file("http://f", "tf")).unwrap();
        assert_eq!(s.token.as_deref(), Some("te"));
    }

    #[test]
    fn saved_tokens_stay_with_their_zone() {
        let s = resolve(Some("http://other".into()), None, None, file("http://f", "tf")).unwrap();
        assert_eq!(s.token, None);
        let s = resolve(Some("http://f/".into()), None, None, file("http://f", "tf")).unwrap();
        assert_eq!(s.token.as_deref(), Some("tf"));
    }

    #[test]
    fn ca_files_follow_their_zone() {
        let saved = ConfigFile {
            ca_file: Some("/etc/f-ca.pem".into()),
            ..file("https://f", "tf")
        };
        let s = resolve(None, None, None, saved.clone()).unwrap();
        assert_eq!(s.ca_file, Some(PathBuf::from("/etc/f-ca.pem")));
        let s = resolve(None, None, Some("/e-ca.pem".into()), saved.clone()).unwrap();
        assert_eq!(s.ca_file, Some(PathBuf::from("/e-ca.pem")));
        let s = resolve(Some("https://other".into()), None, None, saved.clone()).unwrap();
        assert_eq!(s.ca_file, None);
        let s = resolve(Some("https://other".into()), None, Some(" ".into()), saved).unwrap();
        assert_eq!(s.ca_file, None);
    }

    #[test]
    fn a_url_given_takes_only_the_tokens_meant_for_it() {
        let env = |k: &str| match k {
            "WEFT_URL" => Some("http://e".to_owned()),
            "WEFT_TOKEN" => Some("te".to_owned()),
            _ => None,
        };
        let with = |url: Option<&str>, token: Option<&str>| {
            resolve_with(
                url.map(Into::into),
                token.map(Into::into),
                None,
                &env,
                file("http://f", "tf"),
            )
            .unwrap()
        };
        // Nothing given: as the CLI.
        assert_eq!(with(None, None).url, "http://e");
        assert_eq!(with(None, None).token.as_deref(), Some("te"));
        // The environment's zone: its token.
        assert_eq!(with(Some("http://e/"), None).token.as_deref(), Some("te"));
        // The saved zone: the saved token, not the environment's.
        assert_eq!(with(Some("http://f"), None).token.as_deref(), Some("tf"));
        // Another zone: no token at all, unless one is given.
        assert_eq!(with(Some("http://other"), None).token, None);
        assert_eq!(with(Some("http://other"), Some("t")).token.as_deref(), Some("t"));
        assert_eq!(with(None, Some("t")).token.as_deref(), Some("t"));
    }

    #[test]
    fn nothing_configured_names_no_zone() {
        let e = resolve(None, Some("t".into()), None, ConfigFile::default()).unwrap_err();
        assert!(matches!(e, ConfigError::NoZone));
        let e = resolve(Some("  ".into()), None, None, ConfigFile::default()).unwrap_err();
        assert_eq!(e.code(), "no_zone");
    }

    #[test]
    fn saved_file_is_private_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub").join("weft").join("config.toml");
        let c = file("http://127.0.0.1:1", "secret");
        save(&p, &c).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(!readable_by_others(&p));
        assert_eq!(
            std::fs::metadata(p.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert_eq!(load(&p).unwrap(), c);
        // Saving again over an existing file keeps it private.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(readable_by_others(&p));
        save(&p, &file("http://x", "y")).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            load(&dir.path().join("none.toml")).unwrap(),
            ConfigFile::default()
        );
    }
}
