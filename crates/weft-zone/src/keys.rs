//! The zone's key file, `<data-dir>/secret.key`: the keys that seal the secrets the catalog
//! stores (peer secrets, S3 credentials), kept outside the catalog so that a copy of the
//! catalog gives none away. Created on first start, mode 0600, one key a line (64 hex
//! digits), newest first; `#` starts a comment. Back it up with the catalog: without it
//! the sealed secrets cannot be opened. To rotate, put a new key on the first line (`weft
//! key rotate`) and restart: the zone seals every secret with it at start, after which the
//! older lines may go.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use weft_catalog::{SealKey, Sealer};
use weft_types::Error;

pub const KEY_FILE: &str = "secret.key";

pub fn key_file(data_dir: &Path) -> PathBuf {
    data_dir.join(KEY_FILE)
}

/// The keys of `data_dir`, the file made with one new key if there is none.
pub fn load_or_create(data_dir: &Path) -> Result<Sealer, Error> {
    let path = key_file(data_dir);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut f) => {
            let line = format!("{}\n", new_key_hex());
            f.write_all(line.as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(|e| failed(&path, "write", e))?;
            tracing::info!(file = %path.display(), "created the key that seals this zone's secrets; back it up with the catalog");
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(failed(&path, "create", e)),
    }
    load(&path)
}

/// Puts a new key first in `data_dir`'s key file (made if missing); its id.
pub fn rotate(data_dir: &Path) -> Result<String, Error> {
    if !data_dir.is_dir() {
        return Err(Error::new(
            weft_types::ErrorCode::NotFound,
            format!(
                "no zone data directory at {}; pass the zone's --data-dir",
                data_dir.display()
            ),
        ));
    }
    let path = key_file(data_dir);
    let old = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(failed(&path, "read", e)),
    };
    let hex = new_key_hex();
    let tmp = path.with_extension("key.new");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(format!("{hex}\n{old}").as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, &path));
    written.map_err(|e| failed(&path, "write", e))?;
    Ok(SealKey::new(parse_hex(&hex).expect("made here")).id().to_owned())
}

fn load(path: &Path) -> Result<Sealer, Error> {
    let meta = std::fs::metadata(path).map_err(|e| failed(path, "read", e))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(Error::invalid(format!(
            "{} may be read by others (mode {:o}); `chmod 600` it",
            path.display(),
            meta.permissions().mode() & 0o777
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| failed(path, "read", e))?;
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bytes = parse_hex(line).ok_or_else(|| {
            Error::invalid(format!(
                "{} line {}: a key is 64 hexadecimal digits",
                path.display(),
                n + 1
            ))
        })?;
        keys.push(SealKey::new(bytes));
    }
    if keys.is_empty() {
        return Err(Error::invalid(format!("{} holds no key", path.display())));
    }
    Ok(Sealer::new(keys))
}

fn new_key_hex() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn failed(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::internal(format!("cannot {what} the key file {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_made_once_private_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create(dir.path()).unwrap();
        let sealed = first.seal("s3cret");
        let mode = std::fs::metadata(key_file(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = load_or_create(dir.path()).unwrap();
        assert_eq!(
            again.open(&sealed).unwrap(),
            "s3cret",
            "the same key on the next start"
        );

        assert!(rotate(&dir.path().join("nowhere")).is_err(), "no zone there");
        rotate(dir.path()).unwrap();
        let rotated = load_or_create(dir.path()).unwrap();
        assert!(rotated.is_stale(&sealed), "the new key seals now");
        assert_eq!(
            rotated.open(&sealed).unwrap(),
            "s3cret",
            "the old one still opens"
        );

        std::fs::set_permissions(key_file(dir.path()), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load_or_create(dir.path())
            .unwrap_err()
            .message
            .contains("chmod 600"));
        std::fs::write(key_file(dir.path()), "not a key\n").unwrap();
        std::fs::set_permissions(key_file(dir.path()), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(load_or_create(dir.path()).unwrap_err().message.contains("line 1"));
    }
}
