//! The zone's key file, `<data-dir>/secret.key`: the keys that seal the secrets the catalog
//! stores (peer secrets, S3 credentials), kept outside the catalog so that a copy of the
//! catalog gives none away. Created at the zone's first start, mode 0600, one key a line
//! (64 hex digits), newest first; `#` starts a comment. Back it up with the catalog: without
//! it the sealed secrets cannot be opened. Every server of a zone needs it: the catalog names
//! the keys its secrets are sealed with (and, from the first start on, the zone's key), and
//! a server whose file lacks one of them is refused at start; without a file it makes none.
//! To rotate, put a new key on the first line (`weft key rotate`) and restart: the zone
//! seals every secret with it at start, after which the older lines may go.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use weft_catalog::{Catalog, SealKey, Sealer};
use weft_types::{Error, ErrorCode};

pub const KEY_FILE: &str = "secret.key";

pub fn key_file(data_dir: &Path) -> PathBuf {
    data_dir.join(KEY_FILE)
}

/// The keys a start of the zone seals with: those of the key file, or, without one, a new
/// key that [`Keys::settle`] writes only once the catalog has shown it holds no secret
/// under another key.
pub struct Keys {
    path: PathBuf,
    sealer: Sealer,
    /// The line of a new key, in no file yet.
    new: Option<String>,
}

/// The keys of `data_dir`'s key file, or one new key if there is none.
pub fn load_or_new(data_dir: &Path) -> Result<Keys, Error> {
    let path = key_file(data_dir);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let hex = new_key_hex();
            let sealer = Sealer::new(vec![SealKey::new(parse_hex(&hex).expect("made here"))]);
            Ok(Keys {
                path,
                sealer,
                new: Some(format!("{hex}\n")),
            })
        }
        _ => Ok(Keys {
            sealer: load(&path)?,
            path,
            new: None,
        }),
    }
}

impl Keys {
    pub fn sealer(&self) -> Sealer {
        self.sealer.clone()
    }

    /// Makes sure these keys open every secret of `catalog` before the zone seals anything,
    /// writes a new key's file, and has the catalog name the zone's key
    /// ([`Catalog::record_zone_key`]). A server of a zone started without the zone's key
    /// file is refused here, and leaves no key file of its own behind: whatever it sealed
    /// the other servers could not open.
    pub async fn settle(&self, catalog: &dyn Catalog) -> Result<(), Error> {
        self.check(&catalog.sealing_key_ids().await?)?;
        if let Some(line) = &self.new {
            self.write(line)?;
        }
        let recorded = catalog.record_zone_key().await?;
        let checked = match catalog.sealing_key_ids().await {
            Ok(ids) => self.check(&ids),
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            // Another server with another key started at the same moment and named its
            // key first: the new key sealed nothing, so it goes. One that did seal (the
            // catalog's record) stays, or that record would name a key nobody has.
            if self.new.is_some() && !recorded {
                std::fs::remove_file(&self.path).map_err(|e| failed(&self.path, "remove", e))?;
            }
            return Err(e);
        }
        if self.new.is_some() {
            let key = self.sealer.ids().next().unwrap_or_default();
            tracing::info!(file = %self.path.display(), key, "created the key that seals this zone's secrets; back it up with the catalog, and copy it to every server of the zone");
        }
        Ok(())
    }

    /// Fails naming the keys among `ids` that this server lacks.
    fn check(&self, ids: &BTreeSet<String>) -> Result<(), Error> {
        let missing: Vec<&str> = ids
            .iter()
            .map(String::as_str)
            .filter(|id| !self.sealer.ids().any(|k| k == *id))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let made = if self.new.is_some() {
            " (this server had no key file and made none)"
        } else {
            ""
        };
        Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "the catalog holds secrets sealed with key {}, which is not in {}{made}: every server of a zone \
                 needs the zone's key file. Copy {KEY_FILE} from the data directory of a server of this zone \
                 that has it to {} (mode 0600), or restore the key file from its backup, and start again",
                missing.join(", "),
                self.path.display(),
                self.path.display(),
            ),
        ))
    }

    fn write(&self, line: &str) -> Result<(), Error> {
        let path = &self.path;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| failed(path, "create", e))?;
        f.write_all(line.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| failed(path, "write", e))
    }
}

/// Puts a new key first in `data_dir`'s key file (made if missing); its id.
pub fn rotate(data_dir: &Path) -> Result<String, Error> {
    if !data_dir.is_dir() {
        return Err(Error::new(
            ErrorCode::NotFound,
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
    Error::caused(
        ErrorCode::Internal,
        format_args!("cannot {what} the key file {}", path.display()),
        e,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of `dir`, settled against `catalog` as a start does.
    async fn start(dir: &Path, catalog: &str) -> Result<Sealer, Error> {
        let keys = load_or_new(dir)?;
        let c = weft_catalog::connect_sealed(catalog, keys.sealer()).await?;
        keys.settle(c.as_ref()).await?;
        Ok(keys.sealer())
    }

    #[tokio::test]
    async fn a_key_file_is_made_once_private_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = format!("sqlite://{}", dir.path().join("catalog.db").display());
        let first = start(dir.path(), &catalog).await.unwrap();
        let sealed = first.seal("s3cret");
        let mode = std::fs::metadata(key_file(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = start(dir.path(), &catalog).await.unwrap();
        assert_eq!(
            again.open(&sealed).unwrap(),
            "s3cret",
            "the same key on the next start"
        );

        assert!(rotate(&dir.path().join("nowhere")).is_err(), "no zone there");
        rotate(dir.path()).unwrap();
        let rotated = start(dir.path(), &catalog).await.unwrap();
        assert!(rotated.is_stale(&sealed), "the new key seals now");
        assert_eq!(
            rotated.open(&sealed).unwrap(),
            "s3cret",
            "the old one still opens"
        );

        std::fs::set_permissions(key_file(dir.path()), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load_or_new(dir.path())
            .err()
            .unwrap()
            .message
            .contains("chmod 600"));
        std::fs::write(key_file(dir.path()), "not a key\n").unwrap();
        std::fs::set_permissions(key_file(dir.path()), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(load_or_new(dir.path()).err().unwrap().message.contains("line 1"));
    }

    /// A second server of a zone: without the zone's key file it is refused and makes none,
    /// whether the catalog holds secrets yet or only the zone's key; so is one whose file
    /// holds another key. With a copy of the file it starts and opens the secrets.
    #[tokio::test]
    async fn a_server_without_the_zones_key_is_refused_and_makes_none() {
        let root = tempfile::tempdir().unwrap();
        let catalog = format!("sqlite://{}", root.path().join("catalog.db").display());
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let first = start(&a, &catalog).await.unwrap();
        let zone_key = first.ids().next().unwrap().to_owned();
        let refused = |e: Error| {
            let path = key_file(&b).display().to_string();
            assert!(e.message.contains(&zone_key) && e.message.contains(&path), "{e}");
        };
        refused(start(&b, &catalog).await.unwrap_err());
        assert!(!key_file(&b).exists(), "no key of its own");

        let c = weft_catalog::connect_sealed(&catalog, first.clone())
            .await
            .unwrap();
        let peer = weft_catalog::PeerZone {
            name: weft_types::ZoneName::parse("peer").unwrap(),
            url: "http://peer".into(),
            secret: "shared".into(),
            created: 0,
        };
        c.put_zone(&peer, false).await.unwrap();
        refused(start(&b, &catalog).await.unwrap_err());
        assert!(!key_file(&b).exists(), "no key of its own");
        rotate(&b).unwrap();
        let other = std::fs::read_to_string(key_file(&b)).unwrap();
        refused(start(&b, &catalog).await.unwrap_err());
        assert_eq!(
            std::fs::read_to_string(key_file(&b)).unwrap(),
            other,
            "left as it was"
        );

        std::fs::copy(key_file(&a), key_file(&b)).unwrap();
        let copied = start(&b, &catalog).await.unwrap();
        let c = weft_catalog::connect_sealed(&catalog, copied).await.unwrap();
        assert_eq!(c.list_zones().await.unwrap()[0].secret, "shared");
    }
}
