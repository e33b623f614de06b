//! An in-process zone on 127.0.0.1:0 with its API, and a few request helpers.

#![allow(dead_code)]

use std::path::PathBuf;
use weft_api::OidcIssuer;
use weft_types::ZoneName;
use weft_zone::{Zone, ZoneConfig};

pub struct TestZone {
    pub url: String,
    pub admin_token: String,
    pub data_dir: PathBuf,
    pub http: reqwest::Client,
    _dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestZone {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub async fn start() -> TestZone {
    start_with(None, Vec::new()).await
}

pub async fn start_with(catalog_url: Option<String>, oidc: Vec<OidcIssuer>) -> TestZone {
    start_full("z", catalog_url, oidc).await
}

/// A zone named `name` (for federation tests).
pub async fn start_named(name: &str) -> TestZone {
    start_full(name, None, Vec::new()).await
}

async fn start_full(name: &str, catalog_url: Option<String>, oidc: Vec<OidcIssuer>) -> TestZone {
    start_config(name, catalog_url, oidc, |_| {}).await
}

/// A zone named `name` whose configuration `tweak` adjusts.
pub async fn start_tweaked(name: &str, tweak: impl FnOnce(&mut ZoneConfig)) -> TestZone {
    start_config(name, None, Vec::new(), tweak).await
}

async fn start_config(
    name: &str,
    catalog_url: Option<String>,
    oidc: Vec<OidcIssuer>,
    tweak: impl FnOnce(&mut ZoneConfig),
) -> TestZone {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let mut config = ZoneConfig::new(ZoneName::parse(name).unwrap(), data_dir.clone());
    config.catalog_url = catalog_url;
    tweak(&mut config);
    let (zone, boot) = Zone::open(config).await.unwrap();
    let token_file = boot.admin_token_file.expect("first start writes the admin token");
    let admin_token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = weft_api::router(zone, oidc);
    let server = tokio::spawn(async move {
        axum::serve(
            weft_api::no_delay(listener),
            app.into_make_service_with_connect_info::<weft_api::PeerAddr>(),
        )
        .await
        .unwrap();
    });
    TestZone {
        url,
        admin_token,
        data_dir,
        http: reqwest::Client::new(),
        _dir: dir,
        server,
    }
}

impl TestZone {
    pub fn api(&self, rest: &str) -> String {
        format!("{}/api/v1/{}", self.url, rest.trim_start_matches('/'))
    }

    pub fn get(&self, rest: &str, token: &str) -> reqwest::RequestBuilder {
        self.http.get(self.api(rest)).bearer_auth(token)
    }
    pub fn post(&self, rest: &str, token: &str) -> reqwest::RequestBuilder {
        self.http.post(self.api(rest)).bearer_auth(token)
    }
    pub fn put(&self, rest: &str, token: &str) -> reqwest::RequestBuilder {
        self.http.put(self.api(rest)).bearer_auth(token)
    }
    pub fn delete(&self, rest: &str, token: &str) -> reqwest::RequestBuilder {
        self.http.delete(self.api(rest)).bearer_auth(token)
    }

    /// `GET` answered with JSON (any status).
    pub async fn get_json(&self, rest: &str, token: &str) -> serde_json::Value {
        self.get(rest, token).send().await.unwrap().json().await.unwrap()
    }

    /// Creates a user and returns a token for it.
    pub async fn user(&self, name: &str) -> String {
        let r = self
            .post("users", &self.admin_token)
            .json(&serde_json::json!({"name": name}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
        let r = self
            .post("tokens", &self.admin_token)
            .json(&serde_json::json!({"user": name}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        r.json::<serde_json::Value>().await.unwrap()["token"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub async fn put_bytes(&self, path: &str, data: &[u8], token: &str) -> reqwest::Response {
        self.put(&format!("data{path}"), token)
            .body(data.to_vec())
            .send()
            .await
            .unwrap()
    }

    /// Everything a user could observe: every node with size and checksum, and every file
    /// under the data directory except the catalog itself. Bad input must not change it.
    pub async fn snapshot(&self) -> (Vec<String>, Vec<String>) {
        self.snapshot_of("/z").await
    }

    /// As [`TestZone::snapshot`], for the zone whose root is `root`.
    pub async fn snapshot_of(&self, root: &str) -> (Vec<String>, Vec<String>) {
        let mut nodes = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q = vec![("path".to_owned(), root.to_owned())];
            if let Some(c) = &cursor {
                q.push(("cursor".into(), c.clone()));
            }
            let page: serde_json::Value = self
                .get("find", &self.admin_token)
                .query(&q)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for n in page["items"].as_array().unwrap() {
                let meta: serde_json::Value = self
                    .get(&format!("meta{}", n["path"].as_str().unwrap()), &self.admin_token)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                nodes.push(format!(
                    "{} {} {} {} {meta}",
                    n["path"], n["kind"], n["size"], n["checksum"]
                ));
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        nodes.sort();
        let mut files = Vec::new();
        walk(&self.data_dir, &mut files);
        files.retain(|f| !f.contains("catalog.db"));
        files.sort();
        (nodes, files)
    }
}

pub fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(format!(
                "{} {}",
                p.display(),
                e.metadata().map(|m| m.len()).unwrap_or(0)
            ));
        }
    }
}

/// The stable error code of a response (and the status), for assertions.
pub async fn code(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    (status, body["code"].as_str().unwrap_or("<no code>").to_owned())
}

/// Status, error code and message of a response, for assertions on the cause.
pub async fn code_of(r: reqwest::Response) -> (u16, String, String) {
    let status = r.status().as_u16();
    let body: serde_json::Value = r.json().await.unwrap_or(serde_json::Value::Null);
    (
        status,
        body["code"].as_str().unwrap_or("").to_owned(),
        body["message"].as_str().unwrap_or("").to_owned(),
    )
}

/// The shared secret of federation tests.
pub const SECRET: &str = "0123456789abcdef0123456789abcdef-shared";

/// Federates zone `a` (named `a_name`) and zone `b` both ways, as their admins would.
pub async fn federate(a: &TestZone, a_name: &str, b: &TestZone, b_name: &str) {
    for (zone, peer, url) in [(a, b_name, &b.url), (b, a_name, &a.url)] {
        let r = zone
            .post("zones", &zone.admin_token)
            .json(&serde_json::json!({"name": peer, "url": url, "secret": SECRET}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    }
}

/// Starts a transfer and waits for its end; the final record.
pub async fn run_transfer(zone: &TestZone, token: &str, body: serde_json::Value) -> serde_json::Value {
    let r = zone.post("transfers", token).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let id = r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_transfer(zone, token, &id).await
}

/// Waits for transfer `id` to end; the final record.
pub async fn wait_transfer(zone: &TestZone, token: &str, id: &str) -> serde_json::Value {
    for _ in 0..600 {
        let t = zone.get_json(&format!("transfers/{id}"), token).await;
        if !matches!(t["state"].as_str(), Some("queued" | "active")) {
            return t;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("transfer {id} did not end within a minute");
}

pub async fn checksum(zone: &TestZone, path: &str) -> String {
    let s = zone.get_json(&format!("stat{path}"), &zone.admin_token).await;
    s["checksum"]
        .as_str()
        .unwrap_or_else(|| panic!("{path}: {s}"))
        .to_owned()
}

pub fn b3(bytes: &[u8]) -> String {
    format!("blake3:{}", blake3::hash(bytes).to_hex())
}

/// Deterministic bytes that do not repeat at piece boundaries (shared with the tests that
/// start zones as processes). Not every test file uses it.
#[allow(unused_imports)]
pub use weft_testkit::data::pseudo_random;

/// `zone:resource state` of every replica of `path`, sorted.
pub async fn replicas(zone: &TestZone, token: &str, path: &str) -> Vec<String> {
    let s = zone.get_json(&format!("stat{path}"), token).await;
    let mut out: Vec<String> = s["replicas"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: {s}"))
        .iter()
        .map(|r| {
            format!(
                "{}:{} {}",
                r["zone"].as_str().unwrap(),
                r["resource"].as_str().unwrap(),
                r["state"].as_str().unwrap()
            )
        })
        .collect();
    out.sort();
    out
}
