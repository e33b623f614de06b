//! MinIO (`go install`ed into the tools dir) serving a temp dir, plus a tiny AWS SigV4
//! signer so tests can talk real S3 to it without an SDK.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::pki::Pki;
use crate::{free_port, http_status, https_status, port_clash, require, tools_dir, wait_ready, Proc};

const ACCESS_KEY: &str = "weft-minio-admin";
const SECRET_KEY: &str = "weft-minio-secret-key";
const REGION: &str = "us-east-1";

/// A running MinIO server; killed on drop.
pub struct Minio {
    proc: Proc,
    port: u16,
    data: PathBuf,
    /// `https` when started with a certificate, else `http`.
    scheme: &'static str,
    /// The client of [`Minio::request`]: trusting the test CA when there is one.
    http: reqwest::Client,
    // Dropped after `proc` (field order), so the server is dead before its dir goes.
    _dir: tempfile::TempDir,
}

impl Minio {
    /// `minio server <tempdir>/data` on 127.0.0.1 ports; waits for /minio/health/cluster,
    /// which answers 200 only once the object layer can serve requests (`health/live`
    /// answers earlier: a busy machine then saw `XMinioServerNotInitialized`).
    pub fn start() -> Result<Minio> {
        Minio::start_with(None)
    }

    /// As [`Minio::start`], serving HTTPS only, with the server certificate of `pki`.
    pub fn start_tls(pki: &Pki) -> Result<Minio> {
        Minio::start_with(Some(pki))
    }

    fn start_with(pki: Option<&Pki>) -> Result<Minio> {
        let bin = tools_dir().join("bin/minio");
        require(&bin, "minio")?;
        let dir = tempfile::Builder::new().prefix("weft-minio-").tempdir()?;
        let data = dir.path().join("data");
        std::fs::create_dir(&data)?;
        let certs = dir.path().join("certs");
        std::fs::create_dir(&certs)?;
        if let Some(pki) = pki {
            // MinIO's names for its certificate and key in the certs dir.
            std::fs::copy(pki.path("server.pem"), certs.join("public.crt"))?;
            std::fs::copy(pki.path("server.key"), certs.join("private.key"))?;
        }
        let ca_pem = pki.map(|p| std::fs::read(p.ca())).transpose()?;
        let log = dir.path().join("minio.log");
        for attempt in 1..=3 {
            let (port, console) = (free_port(), free_port());
            let mut proc = Proc::spawn(
                Command::new(&bin)
                    .arg("server")
                    .arg(&data)
                    .args(["--address", &format!("127.0.0.1:{port}")])
                    .args(["--console-address", &format!("127.0.0.1:{console}")])
                    // Per-run certs dir: the default ~/.minio would be shared.
                    .arg("--certs-dir")
                    .arg(&certs)
                    .env("MINIO_ROOT_USER", ACCESS_KEY)
                    .env("MINIO_ROOT_PASSWORD", SECRET_KEY)
                    .env("MINIO_REGION", REGION)
                    .env("MINIO_UPDATE", "off"),
                &log,
            )?;
            match wait_ready(&mut proc, "minio", &log, Duration::from_secs(60), || {
                let health = match &ca_pem {
                    None => http_status(port, "/minio/health/cluster"),
                    Some(ca) => https_status(ca, port, "/minio/health/cluster"),
                };
                health == Some(200)
            }) {
                Ok(()) => {
                    return Ok(Minio {
                        proc,
                        port,
                        data,
                        scheme: if pki.is_some() { "https" } else { "http" },
                        http: pki.map_or_else(reqwest::Client::new, Pki::client),
                        _dir: dir,
                    })
                }
                Err(_) if attempt < 3 && port_clash(&log) => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("the last attempt returns")
    }

    /// `http://127.0.0.1:PORT`, or `https://` when started with a certificate.
    pub fn endpoint(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme, self.port)
    }

    pub fn access_key(&self) -> &str {
        ACCESS_KEY
    }

    pub fn secret_key(&self) -> &str {
        SECRET_KEY
    }

    /// Always "us-east-1".
    pub fn region(&self) -> &str {
        REGION
    }

    /// Directory MinIO stores objects in (still there after `kill`, until drop).
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// Kills the server now (to test an unavailable store); idempotent.
    pub fn kill(&mut self) {
        self.proc.kill();
    }

    /// S3 CreateBucket (`PUT /name`), signed.
    pub async fn create_bucket(&self, name: &str) -> Result<()> {
        let resp = self
            .request(reqwest::Method::PUT, &format!("/{name}"), Vec::new())
            .await?;
        let status = resp.status();
        if !status.is_success() {
            bail!(
                "CreateBucket {name}: {status}: {}",
                resp.text().await.unwrap_or_default()
            );
        }
        Ok(())
    }

    /// Sends a SigV4-signed S3 request. `path_and_query` must already be URI-encoded the
    /// way S3 expects (e.g. `/bucket?list-type=2&prefix=a%2Fb`). Returns the response
    /// whatever its status.
    pub async fn request(
        &self,
        method: reqwest::Method,
        path_and_query: &str,
        body: Vec<u8>,
    ) -> Result<reqwest::Response> {
        let host = format!("127.0.0.1:{}", self.port);
        let headers = sign(
            method.as_str(),
            &host,
            path_and_query,
            &body,
            ACCESS_KEY,
            SECRET_KEY,
            REGION,
            SystemTime::now(),
        );
        let mut req = self
            .http
            .request(method, format!("{}://{host}{path_and_query}", self.scheme))
            .body(body);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        req.send().await.context("S3 request to minio")
    }
}

/// AWS Signature Version 4 for S3 (header auth, signed payload). Returns the headers to
/// add: x-amz-date, x-amz-content-sha256 and authorization (Host is set by the client and
/// must equal `host`).
#[allow(clippy::too_many_arguments)]
pub fn sign(
    method: &str,
    host: &str,
    path_and_query: &str,
    body: &[u8],
    access_key: &str,
    secret_key: &str,
    region: &str,
    now: SystemTime,
) -> Vec<(&'static str, String)> {
    let amz_date = amz_date(now);
    let date = &amz_date[..8];
    let payload_hash = hex(&Sha256::digest(body));
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    // Canonical query: parameters sorted, each with an `=` even when the value is empty.
    let mut params: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            if p.contains('=') {
                p.to_string()
            } else {
                format!("{p}=")
            }
        })
        .collect();
    params.sort();
    let signed_headers = "host;x-amz-content-sha256;x-amz-date";
    let canonical = format!(
        "{method}\n{path}\n{}\nhost:{host}\nx-amz-content-sha256:{payload_hash}\nx-amz-date:{amz_date}\n\n{signed_headers}\n{payload_hash}",
        params.join("&")
    );
    let scope = format!("{date}/{region}/s3/aws4_request");
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let mut key = hmac(format!("AWS4{secret_key}").as_bytes(), date.as_bytes());
    for part in [region, "s3", "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    vec![
        ("x-amz-date", amz_date),
        ("x-amz-content-sha256", payload_hash),
        (
            "authorization",
            format!("AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed_headers}, Signature={signature}"),
        ),
    ]
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `YYYYMMDDTHHMMSSZ` in UTC, without pulling in a date crate.
fn amz_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amz_date_formats_utc() {
        // 2013-05-24T00:00:00Z, the date of AWS's published S3 SigV4 examples.
        assert_eq!(
            amz_date(UNIX_EPOCH + Duration::from_secs(1_369_353_600)),
            "20130524T000000Z"
        );
        assert_eq!(
            amz_date(UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_661)),
            "20000229T010101Z"
        );
    }

    /// AWS's published S3 SigV4 examples (examplebucket, 2013-05-24, empty payload).
    #[test]
    fn matches_aws_examples() {
        let now = UNIX_EPOCH + Duration::from_secs(1_369_353_600);
        let auth = |pq: &str| {
            let h = sign(
                "GET",
                "examplebucket.s3.amazonaws.com",
                pq,
                b"",
                "AKIAIOSFODNN7EXAMPLE",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "us-east-1",
                now,
            );
            h[2].1.rsplit("Signature=").next().unwrap().to_string()
        };
        assert_eq!(
            auth("/?lifecycle"),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
        );
        assert_eq!(
            auth("/?max-keys=2&prefix=J"),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        );
    }
}
