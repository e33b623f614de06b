//! Registering PIDs with an outside resolver. A zone is its own resolver (`/pid/...`); an
//! operator with a Handle prefix (as B2HANDLE users have) configures the Handle server and
//! every PID minted here is also created there, pointing at this zone's landing page. The
//! registry records only what never changes (the landing URL and the checksum at minting):
//! moves, renames and new replicas are answered by the landing page, so they cost no call.
//! Other registries (DataCite DOIs, ePIC) implement [`PidRegistry`].

use async_trait::async_trait;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;
use weft_types::{Error, ErrorCode};

/// The `[pid]` table of the zone configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PidConfig {
    /// Prefix of the PIDs minted here [default: the zone name]; with a Handle server, the
    /// prefix the operator holds there (e.g. `21.T11998`).
    pub prefix: Option<String>,
    /// Public base URL of this zone (`https://data.example.org`): registered PIDs resolve to
    /// `<landing_url>/pid/<prefix>/<suffix>`. Needed with an outside registry.
    pub landing_url: Option<String>,
    /// A Handle server to create every PID in.
    pub handle: Option<HandleConfig>,
}

/// A Handle server reached through its JSON REST API (Handle.Net 8 and later).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandleConfig {
    /// `https://HOST:8000`, the server's HTTP interface.
    pub url: String,
    /// The admin the zone acts as, `INDEX:HANDLE` (e.g. `300:21.T11998/ADMIN`): it becomes
    /// the HS_ADMIN of every handle created.
    pub admin: String,
    /// File holding that admin's secret key (the password of its HS_SECKEY value).
    pub password_file: PathBuf,
    /// PEM certificate to trust for the server (Handle servers often use self-signed ones).
    pub ca_file: Option<PathBuf>,
}

/// What an outside registry records for a PID.
#[derive(Debug, Clone)]
pub struct Registration {
    /// `<prefix>/<suffix>`.
    pub pid: String,
    /// The landing page of the PID at this zone.
    pub url: String,
    /// The object's checksum when minted (`sha256:…`), none for collections.
    pub checksum: Option<String>,
}

/// An outside PID service.
#[async_trait]
pub trait PidRegistry: Send + Sync {
    /// Creates `r.pid`. Fails with `already_exists` if the registry has it, and never
    /// overwrites it: the PID may be someone else's.
    async fn register(&self, r: &Registration) -> Result<(), Error>;
    /// Removes a PID this zone created but could not bind (it lost a race to mint).
    async fn withdraw(&self, pid: &str) -> Result<(), Error>;
}

/// Opens what `[pid]` configures, trusting the certificates of `cas` besides the system
/// roots: `None` when the zone is the only resolver.
pub fn open(
    config: &PidConfig,
    cas: &weft_client::TrustedCas,
) -> Result<Option<Box<dyn PidRegistry>>, Error> {
    let Some(h) = &config.handle else {
        return Ok(None);
    };
    if config.landing_url.is_none() {
        return Err(Error::invalid(
            "[pid.handle] needs [pid] landing_url, the public URL handles point at",
        ));
    }
    if config.prefix.is_none() {
        return Err(Error::invalid(
            "[pid.handle] needs [pid] prefix, the Handle prefix PIDs are minted under",
        ));
    }
    Ok(Some(Box::new(HandleRegistry::new(h, cas)?)))
}

/// Checks `[pid]` and answers the prefix to mint under and the base of landing pages.
pub fn prefix_and_landing(config: &PidConfig, zone: &str) -> Result<(String, Option<String>), Error> {
    let prefix = config.prefix.clone().unwrap_or_else(|| zone.to_string());
    crate::namespace::parse_pid(&format!("{prefix}/x")).map_err(|_| {
        Error::invalid(format!(
            "[pid] prefix {prefix:?}: use letters, digits, '.', '_' and '-' (e.g. 21.T11998)"
        ))
    })?;
    let landing = match &config.landing_url {
        Some(u) => {
            let url = reqwest::Url::parse(u).map_err(|e| {
                Error::caused(
                    ErrorCode::InvalidArgument,
                    format_args!("[pid] landing_url {u:?}"),
                    e,
                )
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(Error::invalid(format!("[pid] landing_url {u:?} is not http(s)")));
            }
            Some(u.trim_end_matches('/').to_string())
        }
        None => None,
    };
    Ok((prefix, landing))
}

/// Handle.Net REST API: `PUT /api/handles/<handle>?overwrite=false` with the values.
pub struct HandleRegistry {
    base: String,
    admin_index: u32,
    admin_handle: String,
    password: String,
    http: reqwest::Client,
}

impl HandleRegistry {
    /// The registry `c` describes, trusting the certificates of `cas` and of its own
    /// `ca_file` besides the system roots.
    pub fn new(c: &HandleConfig, cas: &weft_client::TrustedCas) -> Result<HandleRegistry, Error> {
        let bad = |what: String| Error::invalid(format!("[pid.handle] {what}"));
        let (index, handle) = c
            .admin
            .split_once(':')
            .and_then(|(i, h)| Some((i.parse::<u32>().ok()?, h)))
            .filter(|(_, h)| h.contains('/'))
            .ok_or_else(|| {
                bad(format!(
                    "admin {:?} is not INDEX:PREFIX/SUFFIX (e.g. 300:0.NA/21.T11998)",
                    c.admin
                ))
            })?;
        let password = std::fs::read_to_string(&c.password_file)
            .map_err(|e| {
                bad(format!(
                    "cannot read password_file {}: {e}",
                    c.password_file.display()
                ))
            })?
            .trim_end_matches(['\r', '\n'])
            .to_string();
        let mut http = cas
            .apply(reqwest::Client::builder())
            .timeout(Duration::from_secs(20))
            .connect_timeout(Duration::from_secs(5));
        if let Some(ca) = &c.ca_file {
            let pem =
                std::fs::read(ca).map_err(|e| bad(format!("cannot read ca_file {}: {e}", ca.display())))?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .map_err(|e| bad(format!("ca_file {}: {e}", ca.display())))?;
            http = http.add_root_certificate(cert);
        }
        let url = reqwest::Url::parse(&c.url).map_err(|e| bad(format!("url {:?}: {e}", c.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!("url {:?} is not http(s)", c.url)));
        }
        Ok(HandleRegistry {
            base: c.url.trim_end_matches('/').to_string(),
            admin_index: index,
            admin_handle: handle.to_string(),
            password,
            http: http.build().map_err(|e| Error::internal(e.to_string()))?,
        })
    }

    fn handle_url(&self, pid: &str) -> String {
        format!("{}/api/handles/{pid}", self.base)
    }

    /// Basic authentication as the admin: the user name is `INDEX:HANDLE`, URL-encoded.
    fn user(&self) -> String {
        percent_encode(&format!("{}:{}", self.admin_index, self.admin_handle))
    }

    async fn send(&self, pid: &str, req: reqwest::RequestBuilder) -> Result<reqwest::Response, Error> {
        req.basic_auth(self.user(), Some(&self.password))
            .send()
            .await
            .map_err(|e| {
                Error::new(
                    ErrorCode::ServiceUnavailable,
                    format!(
                        "Handle server {}: {pid}: {}",
                        self.base,
                        weft_types::with_causes(&e)
                    ),
                )
            })
    }
}

/// The handle values B2HANDLE writes for a data object: the location, its checksum, and
/// who administers it.
pub fn handle_values(r: &Registration, admin_index: u32, admin_handle: &str) -> serde_json::Value {
    let string = |index: u32, kind: &str, value: &str| serde_json::json!({"index": index, "type": kind, "data": {"format": "string", "value": value}});
    let mut values = vec![string(1, "URL", &r.url)];
    if let Some(c) = &r.checksum {
        values.push(string(2, "CHECKSUM", c));
    }
    values.push(serde_json::json!({
        "index": 100,
        "type": "HS_ADMIN",
        "data": {"format": "admin", "value": {
            "handle": admin_handle,
            "index": admin_index,
            // Everything but adding and deleting naming authorities.
            "permissions": "011111110011",
        }},
    }));
    serde_json::json!({ "values": values })
}

#[async_trait]
impl PidRegistry for HandleRegistry {
    async fn register(&self, r: &Registration) -> Result<(), Error> {
        let body = handle_values(r, self.admin_index, &self.admin_handle);
        let req = self
            .http
            .put(self.handle_url(&r.pid))
            .query(&[("overwrite", "false")])
            .json(&body);
        let answer = self.send(&r.pid, req).await?;
        match answer.status().as_u16() {
            200 | 201 => Ok(()),
            status => Err(self.refusal(&r.pid, status, answer).await),
        }
    }

    async fn withdraw(&self, pid: &str) -> Result<(), Error> {
        let answer = self.send(pid, self.http.delete(self.handle_url(pid))).await?;
        match answer.status().as_u16() {
            200 | 204 | 404 => Ok(()),
            status => Err(self.refusal(pid, status, answer).await),
        }
    }
}

impl HandleRegistry {
    /// An answer other than success, with the server's own message (`{"responseCode": …,
    /// "message": …}`) so the operator sees e.g. that the admin lacks a permission.
    async fn refusal(&self, pid: &str, status: u16, answer: reqwest::Response) -> Error {
        let text = answer.text().await.unwrap_or_default();
        let said = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(String::from))
            .unwrap_or_else(|| text.chars().take(200).collect());
        let code = match status {
            409 => ErrorCode::AlreadyExists,
            401 | 403 => ErrorCode::Forbidden,
            429 | 500.. => ErrorCode::ServiceUnavailable,
            _ => ErrorCode::InvalidArgument,
        };
        Error::new(
            code,
            format!(
                "Handle server {} refused {pid} (HTTP {status}): {said}",
                self.base
            ),
        )
    }
}

/// RFC 3986 percent-encoding of everything but unreserved characters.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_user_is_encoded() {
        assert_eq!(percent_encode("300:0.NA/21.T11998"), "300%3A0.NA%2F21.T11998");
    }

    #[test]
    fn values_carry_url_checksum_and_admin() {
        let r = Registration {
            pid: "21.T1/X".into(),
            url: "https://z/pid/21.T1/X".into(),
            checksum: Some("sha256:ab".into()),
        };
        let v = handle_values(&r, 300, "0.NA/21.T1");
        assert_eq!(v["values"][0]["type"], "URL");
        assert_eq!(v["values"][1]["data"]["value"], "sha256:ab");
        assert_eq!(v["values"][2]["data"]["value"]["index"], 300);
        let dir = Registration { checksum: None, ..r };
        assert_eq!(
            handle_values(&dir, 300, "0.NA/21.T1")["values"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn configuration_mistakes_are_named() {
        let c = |admin: &str| HandleConfig {
            url: "http://127.0.0.1:1".into(),
            admin: admin.into(),
            password_file: "/nonexistent/weft-handle-password".into(),
            ca_file: None,
        };
        let e = HandleRegistry::new(&c("ADMIN"), &Default::default())
            .err()
            .unwrap();
        assert!(e.message.contains("INDEX:PREFIX/SUFFIX"), "{e}");
        let e = HandleRegistry::new(&c("300:0.NA/21.T1"), &Default::default())
            .err()
            .unwrap();
        assert!(e.message.contains("password_file"), "{e}");
        let e = open(
            &PidConfig {
                handle: Some(c("300:0.NA/21.T1")),
                prefix: Some("21.T1".into()),
                landing_url: None,
            },
            &Default::default(),
        )
        .err()
        .unwrap();
        assert!(e.message.contains("landing_url"), "{e}");
    }
}
