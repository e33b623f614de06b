//! Atomic visibility under faults, with real processes: an upload interrupted by a killed
//! client, a cut connection or a server killed with SIGKILL leaves no visible object and
//! no good replica, and the next server start removes the temporary data. An upload in
//! pieces outlives the server: its staged pieces stay until it completes, is aborted or
//! is idle long enough for the sweeper.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use weft_testkit::cli::run;
use weft_testkit::data::files_below;
use weft_testkit::toxiproxy::Toxiproxy;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// The zone `z`, which the tests kill with SIGKILL and start again on the same port and
/// data.
fn start() -> ZoneProcess {
    ZoneProcess::start(WEFT, "z").unwrap()
}

fn resource_dir(s: &ZoneProcess) -> PathBuf {
    s.data_dir().join("resources/default")
}

async fn stat_status(s: &ZoneProcess, path: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{}/api/v1/stat{path}", s.url()))
        .bearer_auth(s.admin_token())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// A restart removes temporary data only, never committed objects.
async fn restart_keeps(s: &mut ZoneProcess, path: &str) {
    s.kill9();
    s.restart().unwrap();
    assert_eq!(stat_status(s, path).await, 200);
}

/// Sizes of the files the server is writing and nobody can see yet: unnamed `O_TMPFILE`
/// inodes in the resource (which /proc shows as `… (deleted)`), or named files in its
/// `.weft-tmp` on file systems without `O_TMPFILE`.
fn temporary_files(s: &ZoneProcess) -> Vec<u64> {
    let pid = s.pid().expect("running");
    let root = resource_dir(s);
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| {
            let target = std::fs::read_link(fd.path()).ok()?;
            let text = target.to_string_lossy();
            let temporary =
                target.starts_with(&root) && (text.ends_with("(deleted)") || text.contains(".weft-tmp"));
            temporary.then(|| std::fs::metadata(fd.path()).map(|m| m.len()).unwrap_or(0))
        })
        .collect()
}

/// Waits until the server holds a temporary file of at least `bytes` (an upload is under way).
async fn wait_for_temporary(s: &ZoneProcess, bytes: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !temporary_files(s).iter().any(|n| *n >= bytes) {
        assert!(
            Instant::now() < deadline,
            "no upload reached {bytes} bytes of temporary data"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn assert_clean(s: &ZoneProcess) {
    let tmp = files_below(&resource_dir(s).join(".weft-tmp"));
    assert!(tmp.is_empty(), "temporary data left: {tmp:?}");
    let data = files_below(&resource_dir(s).join("data"));
    assert!(
        data.is_empty(),
        "replica bytes of an object that does not exist: {data:?}"
    );
}

/// A PUT whose body trickles through toxiproxy, so that it is surely in flight when the
/// fault strikes.
fn slow_put(
    proxy_addr: &str,
    token: &str,
    path: &str,
    size: usize,
) -> tokio::task::JoinHandle<Result<u16, String>> {
    let url = format!("http://{proxy_addr}/api/v1/data{path}");
    let token = token.to_owned();
    tokio::spawn(async move {
        let body = vec![7u8; size];
        let sum = format!("blake3:{}", blake3::hash(&body).to_hex());
        reqwest::Client::new()
            .put(url)
            .bearer_auth(token)
            .header("x-weft-checksum", sum)
            .body(body)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .map_err(|e| e.to_string())
    })
}

async fn slow_proxy(tp: &Toxiproxy, name: &str, s: &ZoneProcess) -> String {
    let addr = tp
        .create_proxy(name, &format!("127.0.0.1:{}", s.port()))
        .await
        .unwrap();
    // ~2 MB/s from client to server.
    tp.add_toxic_on(name, "bandwidth", "upstream", json!({"rate": 2000}))
        .await
        .unwrap();
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_mid_upload() {
    let tp = Toxiproxy::start().unwrap();
    let mut s = start();
    let token = s.admin_token().to_owned();
    let proxy = slow_proxy(&tp, "kill-server", &s).await;
    let put = slow_put(&proxy, &token, "/z/home/admin/whole.bin", 32 << 20);

    // And an upload in pieces with one of its two pieces in.
    let http = reqwest::Client::new();
    let up: Value = http
        .post(format!("{}/api/v1/uploads", s.url()))
        .bearer_auth(&token)
        .json(&json!({"path": "/z/home/admin/pieces.bin", "size": 2 << 16, "piece_size": 1 << 16}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = up["id"].as_str().unwrap().to_owned();
    let r = http
        .put(format!("{}/api/v1/uploads/{id}/0", s.url()))
        .bearer_auth(&token)
        .body(vec![1u8; 1 << 16])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    wait_for_temporary(&s, 1 << 20).await;
    assert_eq!(
        staged_files(&s).len(),
        1,
        "the upload in pieces keeps its pieces by name"
    );
    assert!(
        files_below(&resource_dir(&s).join("data")).is_empty(),
        "nothing is visible mid-upload"
    );
    s.kill9();
    let outcome = put.await.unwrap();
    assert!(outcome.is_err(), "the upload cannot have succeeded: {outcome:?}");

    s.restart().unwrap();
    assert_eq!(stat_status(&s, "/z/home/admin/whole.bin").await, 404);
    assert_eq!(stat_status(&s, "/z/home/admin/pieces.bin").await, 404);
    assert_eq!(staged_files(&s).len(), 1, "the restart keeps the staged pieces");
    // The upload in pieces outlived the server: its first piece is kept, the second goes
    // in now, and it completes whole.
    let r = http
        .put(format!("{}/api/v1/uploads/{id}/1", s.url()))
        .bearer_auth(&token)
        .body(vec![2u8; 1 << 16])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut whole = vec![1u8; 1 << 16];
    whole.extend(vec![2u8; 1 << 16]);
    let sum = format!("blake3:{}", blake3::hash(&whole).to_hex());
    let r = http
        .post(format!("{}/api/v1/uploads/{id}/complete", s.url()))
        .bearer_auth(&token)
        .json(&json!({ "checksum": sum }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let got = http
        .get(format!("{}/api/v1/data/z/home/admin/pieces.bin", s.url()))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(got.as_ref() == whole.as_slice());
    let tmp = files_below(&resource_dir(&s).join(".weft-tmp"));
    assert!(tmp.is_empty(), "temporary data left: {tmp:?}");
}

/// The staged pieces of open uploads in the resource's `.weft-tmp`.
fn staged_files(s: &ZoneProcess) -> Vec<PathBuf> {
    files_below(&resource_dir(s).join(".weft-tmp"))
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("up-"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cut_mid_upload() {
    let tp = Toxiproxy::start().unwrap();
    let mut s = start();
    let token = s.admin_token().to_owned();
    let proxy = slow_proxy(&tp, "cut", &s).await;
    let put = slow_put(&proxy, &token, "/z/home/admin/cut.bin", 32 << 20);
    wait_for_temporary(&s, 1 << 20).await;
    tp.set_enabled("cut", false).await.unwrap();
    let outcome = put.await.unwrap();
    assert!(
        outcome.is_err() || outcome == Ok(400),
        "the upload cannot have succeeded: {outcome:?}"
    );

    // The server notices the cut body and drops the temporary file at once.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !temporary_files(&s).is_empty() {
        assert!(
            Instant::now() < deadline,
            "temporary data of a cut upload was not removed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stat_status(&s, "/z/home/admin/cut.bin").await, 404);
    assert_clean(&s);

    // The path works again once the network does.
    tp.set_enabled("cut", true).await.unwrap();
    tp.remove_toxic("cut", "bandwidth").await.unwrap();
    let r = slow_put(&proxy, &token, "/z/home/admin/cut.bin", 1 << 20)
        .await
        .unwrap();
    assert_eq!(r, Ok(201));
    restart_keeps(&mut s, "/z/home/admin/cut.bin").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_killed_mid_put() {
    let tp = Toxiproxy::start().unwrap();
    let mut s = start();
    let proxy = slow_proxy(&tp, "kill-client", &s).await;
    std::fs::write(s.work().join("big.bin"), vec![3u8; 64 << 20]).unwrap();
    let mut client = s
        .command()
        .args(["put", "--quiet", "big.bin", "/z/home/admin/big.bin"])
        .env("WEFT_URL", format!("http://{proxy}"))
        .env("WEFT_TOKEN", s.admin_token())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_temporary(&s, 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    client.kill().unwrap(); // SIGKILL
    let status = client.wait().unwrap();
    assert!(!status.success());
    assert_eq!(stat_status(&s, "/z/home/admin/big.bin").await, 404);

    s.kill9();
    s.restart().unwrap();
    assert_eq!(stat_status(&s, "/z/home/admin/big.bin").await, 404);
    // The client's upload in pieces is still open (a client may come back to it): its
    // staged pieces are all that is left, until the sweeper finds it idle
    // (weft-zone's tests/uploads.rs). Nothing else.
    let tmp = files_below(&resource_dir(&s).join(".weft-tmp"));
    assert_eq!(tmp, staged_files(&s), "only staged pieces are left");
    assert!(tmp.len() <= 1, "{tmp:?}");
    let data = files_below(&resource_dir(&s).join("data"));
    assert!(
        data.is_empty(),
        "replica bytes of an object that does not exist: {data:?}"
    );
}

/// A zone killed with SIGKILL between a replica's file becoming visible and its catalog
/// commit, or between a removal's commit and the unlink (crash points, test builds only),
/// leaves bytes that nothing references; the `orphans` sweep after the restart removes
/// them, and the resource then holds exactly the files the catalog references.
#[cfg(feature = "failpoints")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_bytes_and_catalog_leaves_nothing_unreferenced() {
    use std::os::unix::process::ExitStatusExt;
    let mut s = start();
    let http = reqwest::Client::new();
    let put = |s: &ZoneProcess, path: &str, body: Vec<u8>| {
        http.put(format!("{}/api/v1/data{path}", s.url()))
            .bearer_auth(s.admin_token())
            .body(body)
            .send()
    };
    for name in ["a", "b"] {
        let r = put(
            &s,
            &format!("/z/home/admin/{name}"),
            name.repeat(5000).into_bytes(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 201);
    }
    let crash_at = |s: &mut ZoneProcess, point: &str| {
        s.kill9();
        s.set_env(&[("FAILPOINTS", &format!("{point}=return"))]);
    };
    let died_by_sigkill = |s: &mut ZoneProcess| {
        let status = s.wait();
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}\n{}", s.log());
    };

    // The bytes of `c` are in place when the zone dies, the catalog knows nothing of them.
    crash_at(&mut s, "replica-visible");
    s.restart().unwrap();
    let r = put(&s, "/z/home/admin/c", b"never registered".repeat(300)).await;
    assert!(r.is_err(), "the zone answered a put it died in: {r:?}");
    died_by_sigkill(&mut s);
    // `b` is gone from the catalog when the zone dies, its bytes are not.
    s.set_env(&[]);
    s.restart().unwrap();
    crash_at(&mut s, "removed-from-catalog");
    s.restart().unwrap();
    let r = http
        .delete(format!("{}/api/v1/nodes/z/home/admin/b", s.url()))
        .bearer_auth(s.admin_token())
        .send()
        .await;
    assert!(r.is_err(), "the zone answered a removal it died in: {r:?}");
    died_by_sigkill(&mut s);
    assert_eq!(
        files_below(&resource_dir(&s).join("data")).len(),
        3,
        "a, b and c are on disk"
    );

    // Restarted with no grace: the first sweep removes both leftovers, nothing else.
    s.set_env(&[("WEFT_ORPHAN_GRACE", "0")]);
    s.restart().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status: Value = http
            .get(format!("{}/api/v1/zone", s.url()))
            .bearer_auth(s.admin_token())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let orphans = status["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == "orphans")
            .cloned()
            .unwrap_or_else(|| panic!("no orphans worker in {status}"));
        if orphans["runs"].as_u64() >= Some(1) {
            assert_eq!(orphans["last_error"], Value::Null, "{orphans}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the orphans worker did not run: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let on_disk: Vec<String> = files_below(&resource_dir(&s).join("data"))
        .iter()
        .map(|p| {
            p.strip_prefix(resource_dir(&s))
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let catalog = weft_catalog::connect(&format!("sqlite://{}", s.data_dir().join("catalog.db").display()))
        .await
        .unwrap();
    let default = catalog
        .get_resource(&weft_types::ResourceName::parse("default").unwrap())
        .await
        .unwrap()
        .unwrap();
    let mut referenced = catalog
        .physical_keys_between(default.id, "data/", "data0")
        .await
        .unwrap();
    referenced.sort();
    let mut on_disk = on_disk;
    on_disk.sort();
    assert_eq!(
        on_disk, referenced,
        "the resource holds exactly what the catalog references"
    );
    assert_eq!(referenced.len(), 1, "only a is left");
    assert_eq!(stat_status(&s, "/z/home/admin/a").await, 200);
    for gone in ["/z/home/admin/b", "/z/home/admin/c"] {
        assert_eq!(stat_status(&s, gone).await, 404, "{gone}");
    }
    let a = http
        .get(format!("{}/api/v1/data/z/home/admin/a", s.url()))
        .bearer_auth(s.admin_token())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(a, "a".repeat(5000).into_bytes());
}

/// The README's key rotation, end to end: `weft key rotate` beside a stopped zone, and its
/// next start seals every secret with the new key, after which the old one may go; a zone
/// whose key file is lost refuses to start, names the key it needs and makes none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_reseals_the_secrets_and_a_lost_key_stops_the_start() {
    let mut s = start();
    let http = reqwest::Client::new();
    let secret = "0123456789abcdef0123456789abcdef-peer";
    let r = http
        .post(format!("{}/api/v1/zones", s.url()))
        .bearer_auth(s.admin_token())
        .json(&json!({"name": "peer", "url": "http://127.0.0.1:9", "secret": secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    // An S3 access key's secret is sealed too (SigV4 needs it in clear on the server).
    let r = http
        .post(format!("{}/api/v1/s3/keys", s.url()))
        .bearer_auth(s.admin_token())
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let s3_key: Value = r.json().await.unwrap();
    let access_key = s3_key["access_key"].as_str().unwrap().to_owned();
    let s3_secret = s3_key["secret_key"].as_str().unwrap().to_owned();
    let catalog_url = format!("sqlite://{}", s.data_dir().join("catalog.db").display());
    let stored = || async {
        // Without the key file a catalog shows what it stores.
        let catalog = weft_catalog::connect(&catalog_url).await.unwrap();
        let peer = weft_types::ZoneName::parse("peer").unwrap();
        let s3 = catalog.s3_secret(&access_key).await.unwrap().unwrap().1;
        (catalog.get_zone(&peer).await.unwrap().unwrap().secret, s3)
    };
    let (first, first_s3) = stored().await;
    assert!(
        first.starts_with("sealed:v1:") && !first.contains(secret),
        "{first}"
    );
    assert!(
        first_s3.starts_with("sealed:v1:") && !first_s3.contains(&s3_secret),
        "{first_s3}"
    );

    s.kill9();
    let said = run(s
        .command()
        .args(["key", "rotate", "--data-dir"])
        .arg(s.data_dir()))
    .ok()
    .stdout;
    let new_id = said.split_whitespace().nth(2).unwrap().to_owned();
    s.restart().unwrap();
    let (resealed, resealed_s3) = stored().await;
    for sealed in [&resealed, &resealed_s3] {
        assert!(
            sealed.starts_with(&format!("sealed:v1:{new_id}:")),
            "{sealed} after {said}"
        );
    }
    // The old key may go now; the peer's secret still opens (zone tokens are signed with it).
    s.kill9();
    let keys = std::fs::read_to_string(s.data_dir().join("secret.key")).unwrap();
    std::fs::write(s.data_dir().join("secret.key"), keys.lines().next().unwrap()).unwrap();
    s.restart().unwrap();
    let zones: Value = http
        .get(format!("{}/api/v1/zones", s.url()))
        .bearer_auth(s.admin_token())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(zones[0]["name"], "peer", "{zones}");

    // A lost key file: the start is refused, naming the key, and makes no new one.
    s.kill9();
    std::fs::remove_file(s.data_dir().join("secret.key")).unwrap();
    assert!(
        s.restart().is_err(),
        "a zone started without the key of its secrets"
    );
    assert!(
        s.log().contains(&new_id) && s.log().contains("restore the key file"),
        "{}",
        s.log()
    );
    assert!(!s.data_dir().join("secret.key").exists(), "made a key of its own");
}
