//! Keycloak 26 (the OIDC provider LEXIS uses) with a realm imported from a JSON fixture.
//!
//! Runs `kc.sh start --optimized` on the distribution that `.ci/install-tools.sh` pre-built
//! for an in-memory database, with a per-run home dir (symlinks to the shared lib/conf/
//! providers/themes plus its own data/). Not `start-dev`: that re-augments the server on
//! every start (~30 s on 2 cores) and writes into the shared lib/, which breaks parallel runs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::{free_port, http_status, port_clash, require, tools_dir, wait_ready, Proc};

const VERSION: &str = "26.0.7";
/// Written by install-tools.sh after `kc.sh build --db=dev-mem`.
const BUILD_MARKER: &str = ".weft-build-dev-mem";
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// A running Keycloak; its process group is killed on drop.
pub struct Keycloak {
    proc: Proc,
    port: u16,
    /// The HTTPS port, when started with [`KeycloakTls`]: then URLs and issuers are https.
    https_port: Option<u16>,
    /// Trusts the CA of [`KeycloakTls`], if any.
    http: reqwest::Client,
    _home: tempfile::TempDir,
}

/// HTTPS for Keycloak: its certificate chain and key (PEM files; the key PKCS#8), and the
/// CA that signed them (PEM), which token requests trust.
pub struct KeycloakTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca_pem: Vec<u8>,
}

impl Keycloak {
    /// Starts Keycloak on 127.0.0.1:<free port> with `realm_json` imported, and waits
    /// until that realm's OpenID configuration answers. The master-realm admin is
    /// `admin`/`admin`.
    pub fn start(realm_json: &Path) -> Result<Keycloak> {
        Keycloak::start_with(realm_json, None)
    }

    /// As [`Keycloak::start`], serving HTTPS as well on another free port; [`base_url`] and
    /// [`issuer`] are then the https ones (plain HTTP stays on for the readiness check).
    ///
    /// [`base_url`]: Keycloak::base_url
    /// [`issuer`]: Keycloak::issuer
    pub fn start_tls(realm_json: &Path, tls: &KeycloakTls) -> Result<Keycloak> {
        Keycloak::start_with(realm_json, Some(tls))
    }

    fn start_with(realm_json: &Path, tls: Option<&KeycloakTls>) -> Result<Keycloak> {
        let http = match tls {
            Some(tls) => reqwest::Client::builder()
                .add_root_certificate(
                    reqwest::Certificate::from_pem(&tls.ca_pem).context("the CA of KeycloakTls")?,
                )
                .build()?,
            None => reqwest::Client::new(),
        };
        let dist = tools_dir().join(format!("keycloak-{VERSION}"));
        require(&dist.join("bin/kc.sh"), &format!("Keycloak {VERSION}"))?;
        require(
            &dist.join(BUILD_MARKER),
            &format!("Keycloak {VERSION} build marker"),
        )?;
        let realm = realm_name(realm_json)?;

        let home = tempfile::Builder::new().prefix("weft-keycloak-").tempdir()?;
        for dir in ["conf", "lib", "providers", "themes"] {
            std::os::unix::fs::symlink(dist.join(dir), home.path().join(dir))?;
        }
        let import = home.path().join("data/import");
        std::fs::create_dir_all(&import)?;
        std::fs::copy(realm_json, import.join("realm.json"))
            .with_context(|| format!("copying realm fixture {}", realm_json.display()))?;
        let log = home.path().join("keycloak.log");

        for attempt in 1..=3 {
            let port = free_port();
            let https_port = tls.map(|_| free_port());
            let mut cmd = Command::new(dist.join("bin/kc.sh"));
            cmd.arg("start")
                .arg("--optimized")
                // kc.sh appends -D options after its own kc.home.dir, so this one wins.
                .arg(format!("-Dkc.home.dir={}", home.path().display()))
                // Local caches: the default clusters over multicast with any other
                // Keycloak on the machine.
                .arg("--cache=local")
                .arg("--http-enabled=true")
                .arg("--hostname-strict=false")
                .arg("--http-host=127.0.0.1")
                .arg(format!("--http-port={port}"))
                .arg("--import-realm")
                .current_dir(home.path())
                .env("KC_BOOTSTRAP_ADMIN_USERNAME", "admin")
                .env("KC_BOOTSTRAP_ADMIN_PASSWORD", "admin");
            if let (Some(tls), Some(https_port)) = (tls, https_port) {
                cmd.arg(format!("--https-certificate-file={}", tls.cert.display()))
                    .arg(format!("--https-certificate-key-file={}", tls.key.display()))
                    .arg(format!("--https-port={https_port}"));
            }
            let mut proc = Proc::spawn(&mut cmd, &log)?;
            let ready_path = format!("/realms/{realm}/.well-known/openid-configuration");
            match wait_ready(&mut proc, "keycloak", &log, START_TIMEOUT, || {
                http_status(port, &ready_path) == Some(200)
            }) {
                Ok(()) => {
                    return Ok(Keycloak {
                        proc,
                        port,
                        https_port,
                        http,
                        _home: home,
                    })
                }
                Err(_) if attempt < 3 && port_clash(&log) => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("the last attempt returns")
    }

    /// `http://127.0.0.1:PORT`, or `https://127.0.0.1:PORT` when started with TLS.
    pub fn base_url(&self) -> String {
        match self.https_port {
            Some(p) => format!("https://127.0.0.1:{p}"),
            None => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// The `iss` of tokens from `realm`: `<base>/realms/<realm>`.
    pub fn issuer(&self, realm: &str) -> String {
        format!("{}/realms/{realm}", self.base_url())
    }

    /// Access token from the direct access grant (resource owner password) of `client_id`.
    pub async fn password_token(
        &self,
        realm: &str,
        client_id: &str,
        client_secret: Option<&str>,
        username: &str,
        password: &str,
    ) -> Result<String> {
        let mut form = vec![
            ("grant_type", "password"),
            ("client_id", client_id),
            ("username", username),
            ("password", password),
            ("scope", "openid"),
        ];
        if let Some(secret) = client_secret {
            form.push(("client_secret", secret));
        }
        let url = format!("{}/protocol/openid-connect/token", self.issuer(realm));
        let resp = self
            .http
            .post(&url)
            .form(&form)
            .send()
            .await
            .context("keycloak token request")?;
        let status = resp.status();
        let body: serde_json::Value = resp.json().await.context("keycloak token response is not JSON")?;
        if !status.is_success() {
            bail!("keycloak token endpoint {status}: {body}");
        }
        body["access_token"]
            .as_str()
            .map(str::to_string)
            .context("token response without access_token")
    }
}

impl Keycloak {
    /// Renames user `old` of `realm` through the admin REST API (as the master realm's
    /// `admin`); the user keeps its id, which is the `sub` of its tokens.
    pub async fn rename_user(&self, realm: &str, old: &str, new: &str) -> Result<()> {
        let admin = self
            .password_token("master", "admin-cli", None, "admin", "admin")
            .await?;
        let http = reqwest::Client::new();
        let users = format!("{}/admin/realms/{realm}/users", self.base_url());
        let found: Vec<serde_json::Value> = http
            .get(&users)
            .query(&[("username", old), ("exact", "true")])
            .bearer_auth(&admin)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let [user] = found.as_slice() else {
            bail!("{} users named {old:?} in realm {realm}", found.len());
        };
        let id = user["id"].as_str().context("user without id")?;
        let mut changed = user.clone();
        changed["username"] = new.into();
        let resp = http
            .put(format!("{users}/{id}"))
            .bearer_auth(&admin)
            .json(&changed)
            .send()
            .await?;
        let status = resp.status();
        if !status.is_success() {
            bail!("renaming {old:?} to {new:?}: {status} {}", resp.text().await?);
        }
        Ok(())
    }
}

impl Drop for Keycloak {
    fn drop(&mut self) {
        self.proc.kill();
    }
}

/// The fixture's `realm` field: readiness is that realm answering.
fn realm_name(realm_json: &Path) -> Result<String> {
    let text =
        std::fs::read_to_string(realm_json).with_context(|| format!("reading {}", realm_json.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", realm_json.display()))?;
    value["realm"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("{} has no \"realm\" field", realm_json.display()))
}

/// Path of the realm fixture shipped with this crate (realm `weft`).
pub fn weft_realm_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/weft-realm.json")
}
