//! Starts each real component and checks it works. These fail (never skip) when a tool is
//! missing: run `.ci/install-tools.sh`.

use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weft_testkit::{keycloak::Keycloak, minio::Minio, postgres::Postgres, toxiproxy::Toxiproxy};

fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-tAc", sql])
        .output()
        .expect("run psql");
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn postgres_starts_and_creates_databases() {
    let pg = Postgres::start().unwrap();
    assert!(
        pg.url().starts_with("postgres://postgres@127.0.0.1:"),
        "{}",
        pg.url()
    );
    assert_eq!(psql(&pg.url(), "show server_version_num").get(..2), Some("15"));
    assert_eq!(psql(&pg.url(), "show fsync"), "on");

    let url = pg.create_database("weft_catalog").unwrap();
    assert!(url.ends_with("/weft_catalog"), "{url}");
    psql(&url, "create table t (x int); insert into t values (42)");
    assert_eq!(psql(&url, "select x from t"), "42");

    // A second cluster runs side by side on its own port.
    let other = Postgres::start().unwrap();
    assert_ne!(other.url(), pg.url());
    assert_eq!(psql(&other.url(), "select 1"), "1");

    let url = pg.url();
    drop(pg);
    let out = Command::new("psql")
        .args([&url, "-tAc", "select 1"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "server still answers after drop");
}

#[tokio::test]
async fn minio_serves_signed_s3() {
    let mut minio = Minio::start().unwrap();
    assert_eq!(minio.region(), "us-east-1");
    minio.create_bucket("weft-test").await.unwrap();

    // ListBuckets (signed GET /) shows it.
    let resp = minio
        .request(reqwest::Method::GET, "/", Vec::new())
        .await
        .unwrap();
    assert!(resp.status().is_success());
    assert!(resp.text().await.unwrap().contains("<Name>weft-test</Name>"));

    // PUT an object with a body, then ListObjectsV2 with a query string (canonical query).
    let put = minio
        .request(
            reqwest::Method::PUT,
            "/weft-test/dir/hello.txt",
            b"hello".to_vec(),
        )
        .await
        .unwrap();
    assert!(put.status().is_success(), "{:?}", put.text().await);
    let list = minio
        .request(
            reqwest::Method::GET,
            "/weft-test?list-type=2&prefix=dir%2F",
            Vec::new(),
        )
        .await
        .unwrap();
    assert!(list.status().is_success());
    assert!(list.text().await.unwrap().contains("<Key>dir/hello.txt</Key>"));
    assert!(minio.data_dir().join("weft-test").is_dir());

    // A wrong signature is refused: the server really checks.
    let unsigned = reqwest::get(format!("{}/weft-test", minio.endpoint()))
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 403);

    minio.kill();
    assert!(reqwest::get(format!("{}/minio/health/live", minio.endpoint()))
        .await
        .is_err());
}

fn claims(token: &str) -> Value {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "not a JWT: {token}");
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[1])
        .unwrap();
    serde_json::from_slice(&payload).unwrap()
}

fn has(claim: &Value, item: &str) -> bool {
    match claim {
        Value::Array(items) => items.iter().any(|v| v == item),
        Value::String(s) => s == item,
        _ => false,
    }
}

#[tokio::test]
async fn keycloak_issues_weft_tokens() {
    let kc = Keycloak::start(&weft_testkit::keycloak::weft_realm_fixture()).unwrap();

    let token = kc
        .password_token("weft", "weft-cli", None, "alice", "alice-pw")
        .await
        .unwrap();
    let c = claims(&token);
    println!("alice's access token: {} bytes", token.len());
    assert!(token.len() > 1024, "token only {} bytes", token.len());
    assert_eq!(c["iss"], kc.issuer("weft"));
    assert!(has(&c["aud"], "weft"), "aud: {}", c["aud"]);
    assert!(has(&c["groups"], "physics"), "groups: {}", c["groups"]);
    assert_eq!(c["preferred_username"], "alice");

    // The confidential client, and a user outside physics.
    let token = kc
        .password_token("weft", "weft-zone", Some("weft-zone-secret"), "bob", "bob-pw")
        .await
        .unwrap();
    let c = claims(&token);
    assert!(has(&c["aud"], "weft"));
    assert!(!has(&c["groups"], "physics"), "groups: {}", c["groups"]);
    assert_eq!(c["preferred_username"], "bob");

    assert!(kc
        .password_token("weft", "weft-cli", None, "alice", "wrong")
        .await
        .is_err());
}

#[tokio::test]
async fn toxiproxy_proxies_and_injects_latency() {
    // Upstream: a TCP echo server.
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_addr = upstream.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = upstream.accept().await.unwrap();
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });

    let toxi = Toxiproxy::start().unwrap();
    let listen = toxi.create_proxy("echo", &upstream_addr).await.unwrap();
    assert!(
        listen.starts_with("127.0.0.1:") && !listen.ends_with(":0"),
        "{listen}"
    );

    async fn round_trip(addr: &str) -> Duration {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let start = Instant::now();
        s.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        start.elapsed()
    }

    assert!(round_trip(&listen).await < Duration::from_millis(200));
    toxi.add_toxic("echo", "latency", json!({"latency": 400, "jitter": 0}))
        .await
        .unwrap();
    assert!(round_trip(&listen).await >= Duration::from_millis(400));
    toxi.remove_toxic("echo", "latency").await.unwrap();
    assert!(round_trip(&listen).await < Duration::from_millis(200));

    // A proxy to nothing: the client sees the connection closed, not a hang.
    let dead = toxi
        .create_proxy("dead", &format!("127.0.0.1:{}", weft_testkit::free_port()))
        .await
        .unwrap();
    let mut s = tokio::net::TcpStream::connect(&dead).await.unwrap();
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("hangs");
    assert!(matches!(n, Ok(0) | Err(_)));
}
