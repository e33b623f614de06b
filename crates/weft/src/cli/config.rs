//! The CLI's view of weft-client's settings (`weft_client::config`): its errors as exit
//! codes, and a warning when the saved token is readable by others.

use super::output::{Failure, Result, EXIT_FAILURE, EXIT_UNAUTHENTICATED};
use std::path::{Path, PathBuf};
pub use weft_client::config::{resolve as resolve_settings, ConfigError, ConfigFile, Settings};

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Failure {
        match e {
            ConfigError::NoZone => Failure::new(EXIT_UNAUTHENTICATED, e.code(), "no zone configured")
                .hint("set WEFT_URL (and WEFT_TOKEN), or run `weft login URL --token T`"),
            other => Failure::new(EXIT_FAILURE, other.code(), other.to_string()),
        }
    }
}

pub fn path() -> Result<PathBuf> {
    Ok(weft_client::config::path()?)
}

/// The saved settings; none when the file does not exist.
pub fn load(path: &Path) -> Result<ConfigFile> {
    let file = weft_client::config::load(path)?;
    if weft_client::config::readable_by_others(path) {
        eprintln!(
            "weft: warning: {} holds a token but others may read it; run chmod 600 on it",
            path.display()
        );
    }
    Ok(file)
}

pub fn save(path: &Path, config: &ConfigFile) -> Result {
    Ok(weft_client::config::save(path, config)?)
}

pub fn resolve(
    env_url: Option<String>,
    env_token: Option<String>,
    env_ca_file: Option<String>,
    file: ConfigFile,
) -> Result<Settings> {
    Ok(resolve_settings(env_url, env_token, env_ca_file, file)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_configured_is_an_auth_failure() {
        let e = resolve(None, Some("t".into()), None, ConfigFile::default()).unwrap_err();
        assert_eq!(e.exit, EXIT_UNAUTHENTICATED);
        assert_eq!(e.code, "no_zone");
    }
}
