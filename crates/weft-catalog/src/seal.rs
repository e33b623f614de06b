//! Secrets at rest: a peer zone's shared secret and the keys of S3 resources and staging
//! areas are stored sealed (XChaCha20-Poly1305, a random nonce each), under a key the
//! catalog never holds. The zone keeps its keys in a file beside its admin token (see
//! weft-zone `keys.rs`); a copy of the catalog, a dump or a backup alone gives away no
//! secret. A sealed value names the key that sealed it, so keys can be rotated: the
//! newest key seals, any known key opens, and a zone start seals again what an older key
//! (or none, before sealing existed) left.

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::XChaCha20Poly1305;
use weft_types::{Error, ErrorCode};

pub(crate) const PREFIX: &str = "sealed:v1:";

/// A key's id: the first hex digits of its BLAKE3 hash.
const ID_LEN: usize = 12;

/// How a sealed value begins: the prefix, the key's id and a colon. The catalog finds the
/// keys it holds secrets under by these heads (`Catalog::sealing_key_ids`).
pub(crate) const SEALED_HEAD: usize = PREFIX.len() + ID_LEN + 1;

/// The id of the key that sealed `stored`; none if it is not sealed.
pub(crate) fn sealed_by(stored: &str) -> Option<&str> {
    stored.strip_prefix(PREFIX)?.split_once(':').map(|(id, _)| id)
}

/// Settings fields (JSON) that hold secrets: S3 credentials of resources and staging areas.
/// The access key is sealed too: with the secret it is a credential, and it is shown to
/// administrators only.
const SECRET_FIELDS: &[&str] = &["access_key", "secret_key"];

/// One key: 32 bytes and the id sealed values name it by.
#[derive(Clone)]
pub struct SealKey {
    id: String,
    cipher: XChaCha20Poly1305,
}

impl SealKey {
    pub fn new(bytes: [u8; 32]) -> SealKey {
        let id = blake3::hash(&bytes).to_hex()[..ID_LEN].to_owned();
        SealKey {
            id,
            cipher: XChaCha20Poly1305::new(&bytes.into()),
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }
}

/// Seals with the newest key and opens with any. Without keys (tools and tests that open a
/// catalog without its zone) secrets are stored and read as they are.
#[derive(Clone, Default)]
pub struct Sealer {
    /// Newest first.
    keys: Vec<SealKey>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|k| k.id.as_str()).collect();
        f.debug_struct("Sealer").field("keys", &ids).finish()
    }
}

fn sealed_error(msg: String) -> Error {
    Error::new(ErrorCode::CatalogError, msg)
}

impl Sealer {
    /// `keys` newest first.
    pub fn new(keys: Vec<SealKey>) -> Sealer {
        Sealer { keys }
    }

    /// The ids of its keys, newest first.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.id.as_str())
    }

    pub fn seal(&self, plain: &str) -> String {
        let Some(key) = self.keys.first() else {
            return plain.to_owned();
        };
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = key
            .cipher
            .encrypt(&nonce, plain.as_bytes())
            .expect("sealing into memory cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!(
            "{PREFIX}{}:{}",
            key.id,
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out)
        )
    }

    /// The secret `stored` holds: opened if sealed, as it is if it predates sealing (or,
    /// without keys, as it is stored).
    pub fn open(&self, stored: &str) -> Result<String, Error> {
        let Some(rest) = stored.strip_prefix(PREFIX).filter(|_| !self.keys.is_empty()) else {
            return Ok(stored.to_owned());
        };
        let (id, data) = rest
            .split_once(':')
            .ok_or_else(|| sealed_error("a sealed secret in the catalog is malformed".into()))?;
        let key = self.keys.iter().find(|k| k.id == id).ok_or_else(|| {
            sealed_error(format!(
                "a secret in the catalog is sealed with key {id}, which is not in the zone's key file; copy the key file from a server of this zone that has it, or restore it from its backup"
            ))
        })?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(data)
            .ok()
            .filter(|b| b.len() > 24)
            .ok_or_else(|| sealed_error("a sealed secret in the catalog is malformed".into()))?;
        let (nonce, sealed) = bytes.split_at(24);
        let plain = key.cipher.decrypt(nonce.into(), sealed).map_err(|_| {
            sealed_error(format!(
                "a secret sealed with key {id} does not open: the catalog or the key file was altered"
            ))
        })?;
        String::from_utf8(plain).map_err(|_| sealed_error("a sealed secret is not text".into()))
    }

    /// The id of the key that seals; `None` without keys.
    pub fn sealing_key(&self) -> Option<&str> {
        self.keys.first().map(SealKey::id)
    }

    /// Whether `stored` would be sealed again: in clear, or under another key than the
    /// newest.
    pub fn is_stale(&self, stored: &str) -> bool {
        match self.keys.first() {
            None => false,
            Some(key) => !stored
                .strip_prefix(PREFIX)
                .is_some_and(|rest| rest.starts_with(&format!("{}:", key.id))),
        }
    }

    /// Settings (JSON) with their secret fields sealed (see [`SECRET_FIELDS`]).
    pub fn seal_settings(&self, settings: &str) -> Result<String, Error> {
        self.map_settings(settings, |v| Ok(self.seal(v)))
    }

    /// Settings (JSON) with their secret fields opened.
    pub fn open_settings(&self, settings: &str) -> Result<String, Error> {
        self.map_settings(settings, |v| self.open(v))
    }

    /// Whether any secret field of `settings` is stale.
    pub fn settings_stale(&self, settings: &str) -> bool {
        let stale = std::cell::Cell::new(false);
        let _ = self.map_settings(settings, |v| {
            stale.set(stale.get() || self.is_stale(v));
            Ok(v.to_owned())
        });
        stale.get()
    }

    /// The ids of the keys that sealed the secret fields of `settings`.
    pub(crate) fn settings_sealed_by(settings: &str) -> Vec<String> {
        let ids = std::cell::RefCell::new(Vec::new());
        let _ = Sealer::default().map_settings(settings, |v| {
            ids.borrow_mut().extend(sealed_by(v).map(str::to_owned));
            Ok(v.to_owned())
        });
        ids.into_inner()
    }

    fn map_settings(
        &self,
        settings: &str,
        f: impl Fn(&str) -> Result<String, Error>,
    ) -> Result<String, Error> {
        let mut json: serde_json::Value = match serde_json::from_str(settings) {
            Ok(v) => v,
            // Not JSON: not ours to look into (the storage layer will say what is wrong).
            Err(_) => return Ok(settings.to_owned()),
        };
        let Some(fields) = json.as_object_mut() else {
            return Ok(settings.to_owned());
        };
        let mut changed = false;
        for name in SECRET_FIELDS {
            if let Some(serde_json::Value::String(v)) = fields.get_mut(*name) {
                *v = f(v)?;
                changed = true;
            }
        }
        Ok(if changed {
            json.to_string()
        } else {
            settings.to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> SealKey {
        SealKey::new([b; 32])
    }

    #[test]
    fn sealed_secrets_open_with_any_known_key_and_only_with_one() {
        let old = Sealer::new(vec![key(1)]);
        let sealed = old.seal("hunter2");
        assert!(!sealed.contains("hunter2"), "{sealed}");
        assert_ne!(sealed, old.seal("hunter2"), "a fresh nonce each time");
        assert_eq!(old.open(&sealed).unwrap(), "hunter2");

        let rotated = Sealer::new(vec![key(2), key(1)]);
        assert_eq!(rotated.open(&sealed).unwrap(), "hunter2");
        assert!(rotated.is_stale(&sealed) && !old.is_stale(&sealed));
        assert!(!rotated.is_stale(&rotated.seal("x")));
        assert!(rotated.is_stale("plain, from before sealing"));
        assert_eq!(
            rotated.open("plain, from before sealing").unwrap(),
            "plain, from before sealing"
        );

        assert_eq!(sealed_by(&sealed), Some(key(1).id()));
        assert_eq!(sealed[..SEALED_HEAD], format!("{PREFIX}{}:", key(1).id()));
        assert_eq!(sealed_by("plain, from before sealing"), None);

        let e = Sealer::new(vec![key(3)]).open(&sealed).unwrap_err();
        assert!(e.message.contains(key(1).id()), "{e}");
        // A character in the middle carries six bits of the ciphertext (the last may carry
        // padding only).
        let mut tampered: Vec<char> = sealed.chars().collect();
        let mid = tampered.len() - 10;
        tampered[mid] = if tampered[mid] == 'A' { 'B' } else { 'A' };
        let tampered: String = tampered.into_iter().collect();
        assert!(old.open(&tampered).unwrap_err().message.contains("altered"));
    }

    #[test]
    fn settings_seal_their_credentials_only() {
        let s = Sealer::new(vec![key(1)]);
        let plain = r#"{"endpoint":"http://s3","bucket":"b","access_key":"AKIA","secret_key":"SECRET"}"#;
        let sealed = s.seal_settings(plain).unwrap();
        assert!(!sealed.contains("AKIA") && !sealed.contains("SECRET"), "{sealed}");
        assert!(sealed.contains("http://s3"));
        assert!(!s.settings_stale(&sealed) && s.settings_stale(plain));
        assert_eq!(Sealer::settings_sealed_by(&sealed), [key(1).id(), key(1).id()]);
        assert!(Sealer::settings_sealed_by(plain).is_empty());
        let opened: serde_json::Value = serde_json::from_str(&s.open_settings(&sealed).unwrap()).unwrap();
        assert_eq!(opened, serde_json::from_str::<serde_json::Value>(plain).unwrap());
        let fs = r#"{"root":"/data"}"#;
        assert_eq!(s.seal_settings(fs).unwrap(), fs);
    }
}
