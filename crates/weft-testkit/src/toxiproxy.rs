//! toxiproxy server for latency, reset and bandwidth faults between components.

use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::{free_port, http_status, port_clash, require, tools_dir, wait_ready, Proc};

/// A running toxiproxy server; killed on drop (its proxies die with it).
pub struct Toxiproxy {
    proc: Proc,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Toxiproxy {
    /// `toxiproxy-server -host 127.0.0.1 -port <free>`; waits for `/version`.
    pub fn start() -> Result<Toxiproxy> {
        let bin = tools_dir().join("bin/toxiproxy-server");
        require(&bin, "toxiproxy-server")?;
        let dir = tempfile::Builder::new().prefix("weft-toxiproxy-").tempdir()?;
        let log = dir.path().join("toxiproxy.log");
        for attempt in 1..=3 {
            let port = free_port();
            let mut proc = Proc::spawn(
                Command::new(&bin).args(["-host", "127.0.0.1", "-port", &port.to_string()]),
                &log,
            )?;
            match wait_ready(
                &mut proc,
                "toxiproxy-server",
                &log,
                Duration::from_secs(30),
                || http_status(port, "/version") == Some(200),
            ) {
                Ok(()) => {
                    return Ok(Toxiproxy {
                        proc,
                        port,
                        _dir: dir,
                    })
                }
                Err(_) if attempt < 3 && port_clash(&log) => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("the last attempt returns")
    }

    /// `http://127.0.0.1:PORT` of the control API.
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates an enabled proxy `name` to `upstream` (host:port) listening on an ephemeral
    /// port; returns its listen address `127.0.0.1:PORT`.
    pub async fn create_proxy(&self, name: &str, upstream: &str) -> Result<String> {
        let body = json!({"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true});
        let proxy = self.call(reqwest::Method::POST, "/proxies", Some(body)).await?;
        // toxiproxy reports the port it actually bound.
        proxy["listen"]
            .as_str()
            .map(str::to_string)
            .context("toxiproxy answer has no `listen`")
    }

    /// Adds a toxic of type `kind` (latency, bandwidth, reset_peer, timeout, ...) on the
    /// downstream direction with toxicity 1. The toxic is *named `kind`*, so
    /// `remove_toxic(proxy, kind)` removes it. `attributes` is the type's attribute object,
    /// e.g. `json!({"latency": 100, "jitter": 0})`.
    pub async fn add_toxic(&self, proxy: &str, kind: &str, attributes: Value) -> Result<()> {
        self.add_toxic_on(proxy, kind, "downstream", attributes).await
    }

    /// As [`Self::add_toxic`], on `stream`: `upstream` (client to server, e.g. to slow an
    /// upload) or `downstream`.
    pub async fn add_toxic_on(&self, proxy: &str, kind: &str, stream: &str, attributes: Value) -> Result<()> {
        let body =
            json!({"name": kind, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes});
        self.call(
            reqwest::Method::POST,
            &format!("/proxies/{proxy}/toxics"),
            Some(body),
        )
        .await?;
        Ok(())
    }

    /// Disables (closing every connection through it) or re-enables a proxy.
    pub async fn set_enabled(&self, proxy: &str, enabled: bool) -> Result<()> {
        self.call(
            reqwest::Method::POST,
            &format!("/proxies/{proxy}"),
            Some(json!({"enabled": enabled})),
        )
        .await?;
        Ok(())
    }

    pub async fn remove_toxic(&self, proxy: &str, name: &str) -> Result<()> {
        self.call(
            reqwest::Method::DELETE,
            &format!("/proxies/{proxy}/toxics/{name}"),
            None,
        )
        .await?;
        Ok(())
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value> {
        let mut req = reqwest::Client::new().request(method.clone(), format!("{}{path}", self.api_url()));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("toxiproxy {method} {path}"))?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            bail!("toxiproxy {method} {path}: {status}: {text}");
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        self.proc.kill();
    }
}
