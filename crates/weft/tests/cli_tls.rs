//! Transport security end to end: zones serving HTTPS with a certificate made here (a test
//! CA and a server certificate for 127.0.0.1 and localhost), the CLI trusting that CA
//! through WEFT_CA_FILE or `weft login --ca-file`, two zones federated and transferring over
//! https, plain HTTP to the TLS port answered with nothing, `zone add` of a plain-HTTP URL
//! off loopback refused, OIDC tokens from a Keycloak served over TLS, and what a zone
//! calls out to (S3 resources, webhooks, a Handle server) and the bench trusting the CA.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_testkit::cli::{clean_command, run};
use weft_testkit::data::{b3, pseudo_random};
use weft_testkit::minio::Minio;
use weft_testkit::pki::Pki;
use weft_testkit::zone::ZoneProcess;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

const SECRET: &str = "5f0c2a9e7d4b1c3e8a6f0d2b4c6e8a0f1d3b5c7e9a1f3d5b7c9e1a3f5d7b9c1e\n";

/// A zone serving HTTPS with the test certificate, trusting the test CA in its peers' and
/// issuers' certificates too (`--tls-ca`); commands trust it through WEFT_CA_FILE.
fn tls_zone(name: &str, pki: &Pki) -> ZoneProcess {
    let ca = pki.ca();
    tls_zone_with(name, pki, &["--tls-ca", ca.to_str().unwrap()])
}

/// A zone serving HTTPS with the test certificate and `extra` flags.
fn tls_zone_with(name: &str, pki: &Pki, extra: &[&str]) -> ZoneProcess {
    let (cert, key) = (pki.path("server.pem"), pki.path("server.key"));
    let mut args = vec![
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let z = ZoneProcess::options(WEFT, name)
        .args(&args)
        .tls(pki.ca())
        .start()
        .unwrap();
    assert!(
        z.log().contains("url=https://"),
        "the start line names https: {}",
        z.log()
    );
    z
}

fn secret_file(dir: &Path) -> String {
    let path = dir.join("shared.secret");
    std::fs::write(&path, SECRET).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn the_cli_speaks_https_to_a_zone_it_trusts_and_only_to_it() {
    let pki = Pki::new();
    let z = tls_zone("tlsz", &pki);

    // put, ls, get (a file large enough to go as pieces on parallel connections).
    let big = pseudo_random(12 << 20, 7);
    std::fs::write(z.work().join("big.bin"), &big).unwrap();
    std::fs::write(z.work().join("small.txt"), b"over TLS\n").unwrap();
    z.weft(&[
        "put",
        "big.bin",
        "small.txt",
        "/tlsz/home/admin/",
        "--streams",
        "4",
    ])
    .ok();
    let ls = z.weft(&["ls", "/tlsz/home/admin"]).ok();
    assert!(
        ls.stdout.contains("big.bin") && ls.stdout.contains("small.txt"),
        "{}",
        ls.stdout
    );
    z.weft(&["get", "/tlsz/home/admin/big.bin", "got.bin"]).ok();
    assert!(std::fs::read(z.work().join("got.bin")).unwrap() == big);
    assert_eq!(
        z.weft(&["stat", "--json", "/tlsz/home/admin/big.bin"])
            .ok()
            .json()["checksum"],
        b3(&big)
    );

    // Without the CA file the zone's certificate chains to nothing this client trusts.
    let mut cmd = z.command();
    cmd.env("WEFT_URL", z.url()).env("WEFT_TOKEN", z.admin_token());
    let refused = run(cmd.args(["ls", "/tlsz/home/admin"])).fails(9, "tls");
    assert!(refused.stderr.contains("certificate"), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("WEFT_CA_FILE"),
        "a hint: {}",
        refused.stderr
    );
    assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    // A CA file that does not exist is named.
    let mut cmd = z.command();
    cmd.env("WEFT_URL", z.url())
        .env("WEFT_TOKEN", z.admin_token())
        .env("WEFT_CA_FILE", z.work().join("none.pem"));
    let missing = run(cmd.args(["ls"])).fails(2, "usage");
    assert!(missing.stderr.contains("none.pem"), "{}", missing.stderr);

    // `weft login --ca-file` saves the CA file with URL and token; later commands use it.
    let mut cmd = z.command();
    run(cmd
        .args(["login", z.url(), "--token", z.admin_token(), "--ca-file"])
        .arg(pki.ca()))
    .ok();
    let saved = std::fs::read_to_string(z.config_home().join("weft/config.toml")).unwrap();
    assert!(saved.contains("ca_file"), "{saved}");
    assert!(saved.contains("https://127.0.0.1"), "{saved}");
    let me = run(z.command().args(["whoami", "--json"])).ok().json();
    assert_eq!(me["user"], "admin");
    // Login fails the same way without the CA, and saves nothing.
    let other_config = z.dir().join("config2");
    let mut cmd = clean_command(WEFT, &z.work(), &other_config);
    run(cmd.args(["login", z.url(), "--token", z.admin_token()])).fails(9, "tls");
    assert!(!other_config.join("weft/config.toml").exists());
}

#[test]
fn plain_http_to_the_tls_port_gets_no_answer() {
    let pki = Pki::new();
    let z = tls_zone("tlsz", &pki);
    // A client speaking plain HTTP, token and all: the zone answers no HTTP, so nothing it
    // holds comes back in clear (at most a TLS alert before it closes).
    let mut s = TcpStream::connect(("127.0.0.1", z.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let request = format!(
        "GET /api/v1/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        z.admin_token()
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(
        !text.contains("HTTP/1."),
        "an HTTP answer on the TLS port: {text:?}"
    );
    assert!(!text.contains("admin"), "{text:?}");
    assert!(answer.len() < 64, "{} bytes came back: {text:?}", answer.len());

    // The CLI pointed at http:// of the same port fails and prints nothing.
    let mut cmd = z.command();
    cmd.env("WEFT_URL", format!("http://127.0.0.1:{}", z.port()))
        .env("WEFT_TOKEN", z.admin_token());
    let r = run(cmd.args(["whoami"]));
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    // The zone still serves https afterwards.
    assert_eq!(z.weft(&["whoami", "--json"]).ok().json()["user"], "admin");
}

#[test]
fn zones_federate_and_transfer_over_https() {
    let pki = Pki::new();
    let lrz = tls_zone("lrz", &pki);
    let it4i = tls_zone("it4i", &pki);
    let secret = secret_file(&lrz.work());
    let added = lrz
        .weft(&[
            "zone",
            "add",
            "it4i",
            it4i.url(),
            "--secret-file",
            &secret,
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(added["url"], it4i.url());
    assert_eq!(
        added["reachable"], true,
        "lrz checks it4i's certificate with --tls-ca: {added}"
    );
    it4i.weft(&["zone", "add", "lrz", lrz.url(), "--secret-file", &secret])
        .ok();
    let zones = lrz.weft(&["zone", "ls", "--json"]).ok().json();
    assert_eq!(zones[0]["reachable"], true, "{zones}");

    let alice = lrz.user_with_token("alice");
    it4i.weft(&["mkdir", "/it4i/shared"]).ok();
    it4i.weft(&["acl", "set", "/it4i/shared", "alice#lrz", "write"])
        .ok();
    let tree = lrz.work().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    let big = pseudo_random(20 << 20, 3);
    std::fs::write(tree.join("big.bin"), &big).unwrap();
    std::fs::write(tree.join("sub/b.txt"), b"bravo\n").unwrap();
    lrz.weft_as(&alice, &["put", "-r", "tree", "."]).ok();

    let id = lrz
        .weft_as(&alice, &["transfer", "start", "-r", "tree", "/it4i/shared"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let waited = lrz.weft_as(&alice, &["transfer", "wait", &id]).ok();
    assert!(
        waited.stderr.contains("succeeded: 2/2 files done"),
        "{}",
        waited.stderr
    );
    for (at_lrz, at_it4i) in [
        ("/lrz/home/alice/tree/big.bin", "/it4i/shared/tree/big.bin"),
        ("/lrz/home/alice/tree/sub/b.txt", "/it4i/shared/tree/sub/b.txt"),
    ] {
        let here = lrz.weft_as(&alice, &["stat", "--json", at_lrz]).ok().json();
        let there = it4i.weft(&["stat", "--json", at_it4i]).ok().json();
        assert_eq!(here["checksum"], there["checksum"], "{at_it4i}");
    }
    assert_eq!(
        it4i.weft(&["stat", "--json", "/it4i/shared/tree/big.bin"])
            .ok()
            .json()["checksum"],
        b3(&big)
    );
    // Reading the other zone through one's own relays over https as well.
    let ls = lrz.weft_as(&alice, &["ls", "/it4i/shared/tree"]).ok();
    assert!(ls.stdout.contains("big.bin"), "{}", ls.stdout);

    // A zone that was not given the CA does not trust its peer's certificate.
    let untrusting = tls_zone_with("vsb", &pki, &[]);
    let added = untrusting
        .weft(&[
            "zone",
            "add",
            "lrz",
            lrz.url(),
            "--secret-file",
            &secret,
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(added["reachable"], false, "{added}");
    let why = added["error"].as_str().unwrap_or_default();
    assert!(why.contains("certificate"), "{added}");
}

#[test]
fn zone_add_refuses_plain_http_off_loopback_unless_insecure() {
    let z = ZoneProcess::start(WEFT, "testz").unwrap();
    let secret = secret_file(&z.work());
    let add = |name: &str, url: &str, flags: &[&str]| {
        let mut args = vec!["zone", "add", name, url, "--secret-file", &secret];
        args.extend_from_slice(flags);
        z.weft(&args)
    };
    let refused = add("far", "http://example.org:8640", &[]).fails(1, "invalid_argument");
    assert!(refused.stderr.contains("https://"), "{}", refused.stderr);
    assert!(refused.stderr.contains("--insecure"), "{}", refused.stderr);
    assert!(refused.stderr.contains("in clear"), "{}", refused.stderr);
    let zones = z.weft(&["zone", "ls", "--json"]).ok().json();
    assert_eq!(zones, serde_json::json!([]), "nothing stored");
    // The same for an address.
    add("far", "http://10.1.2.3:8640", &[]).fails(1, "invalid_argument");

    // With --insecure it is the administrator's choice (add does not need the peer up).
    let added = add("far", "http://example.org:8640", &["--insecure", "--json"])
        .ok()
        .json();
    assert_eq!(added["url"], "http://example.org:8640");
    // Replacing the address is held to the same rule.
    add("far", "http://example.net:8640", &["--replace"]).fails(1, "invalid_argument");
    // Loopback stays allowed in clear: nothing crosses a network.
    add("near", "http://127.0.0.1:1", &[]).ok();
    add("near6", "http://[::1]:1", &[]).ok();
    add("nearby", "http://localhost:1", &[]).ok();
}

#[test]
fn a_bad_certificate_or_key_stops_the_start_and_is_named() {
    let pki = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    let serve = |args: &[&str]| {
        let r = run(clean_command(WEFT, dir.path(), &dir.path().join("config"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(args));
        assert_ne!(r.code, 0, "weft serve {args:?} started");
        r.stderr
    };
    let cert = pki.path("server.pem");
    let key = pki.path("server.key");
    let missing = dir.path().join("missing.pem");
    let (cert, key, missing) = (
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        missing.to_str().unwrap(),
    );

    let e = serve(&["--tls-cert", missing, "--tls-key", key]);
    assert!(e.contains("certificate file") && e.contains(missing), "{e}");
    let e = serve(&["--tls-cert", cert, "--tls-key", missing]);
    assert!(e.contains("key file") && e.contains(missing), "{e}");
    // The two swapped: neither file holds what it should.
    let e = serve(&["--tls-cert", key, "--tls-key", key]);
    assert!(e.contains("no PEM certificate") && e.contains(key), "{e}");
    let e = serve(&["--tls-cert", cert, "--tls-key", cert]);
    assert!(e.contains("private key") && e.contains(cert), "{e}");
    let other = pki.path("other.key");
    let e = serve(&["--tls-cert", cert, "--tls-key", other.to_str().unwrap()]);
    assert!(e.contains("does not go with"), "{e}");
    let e = serve(&["--tls-cert", cert]);
    assert!(e.contains("--tls-key"), "{e}");
    let e = serve(&["--tls-cert", cert, "--tls-key", key, "--tls-ca", missing]);
    assert!(e.contains("CA file") && e.contains(missing), "{e}");
    assert!(!dir.path().join("data").exists(), "nothing was created");
}

/// Keycloak over TLS: the zone fetches its discovery document and keys over https,
/// trusting the test CA from `[tls] ca` of its config file, and accepts its tokens.
#[test]
fn oidc_tokens_from_an_issuer_served_over_tls() {
    use weft_testkit::keycloak::{weft_realm_fixture, Keycloak, KeycloakTls};
    let pki = Pki::new();
    let kc = Keycloak::start_tls(
        &weft_realm_fixture(),
        &KeycloakTls {
            cert: pki.path("server.pem"),
            key: pki.path("server.key"),
            ca_pem: std::fs::read(pki.ca()).unwrap(),
        },
    )
    .expect("Keycloak must start (run .ci/install-tools.sh)");
    let issuer = kc.issuer("weft");
    assert!(issuer.starts_with("https://"), "{issuer}");
    let token = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(kc.password_token("weft", "weft-cli", None, "alice", "alice-pw"))
        .unwrap();

    // Everything TLS from the config file this time: [tls] cert, key and ca.
    let config = pki.path("zone.toml");
    std::fs::write(
        &config,
        format!(
            "[tls]\ncert = {:?}\nkey = {:?}\nca = {:?}\n\n[[oidc]]\nissuer = {issuer:?}\naudience = \"weft\"\n",
            pki.path("server.pem"),
            pki.path("server.key"),
            pki.ca(),
        ),
    )
    .unwrap();
    let z = tls_zone_with("oidcz", &pki, &["--config", config.to_str().unwrap()]);
    let me = z.weft_as(&token, &["whoami", "--json"]).ok().json();
    assert_eq!(me["user"], "alice", "{me}");

    // A zone trusting only the system roots cannot fetch the issuer's keys.
    let config = pki.path("untrusting.toml");
    std::fs::write(
        &config,
        format!("[[oidc]]\nissuer = {issuer:?}\naudience = \"weft\"\n"),
    )
    .unwrap();
    let untrusting = tls_zone_with("oidcu", &pki, &["--config", config.to_str().unwrap()]);
    let r = untrusting.weft_as(&token, &["whoami", "--json"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("cannot fetch the keys"), "{r:?}");
}

/// `curl -si --cacert CA ARGS`: the status, the header lines and the body.
fn curl(ca: &Path, args: &[&str]) -> (u16, Vec<String>, String) {
    let out = std::process::Command::new("curl")
        .args(["-si", "--max-time", "30", "--cacert"])
        .arg(ca)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "curl {args:?}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines().map(str::to_owned);
    let status = lines.next().unwrap_or_default();
    let status = status.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, lines.collect(), body.to_owned())
}

/// Over HTTPS the web session's cookie is `__Host-`: browsers take it only from a Secure
/// page of this very host, for Path=/, so no plain-HTTP page and no sibling host can plant
/// one. The zone reads that name only, and refuses it twice.
#[test]
fn over_https_the_session_cookie_is_host_only() {
    let pki = Pki::new();
    let z = tls_zone("tlsweb", &pki);
    let (ca, url) = (pki.ca(), z.url().to_owned());
    let token = format!("token={}", z.admin_token());
    let (status, head, _) = curl(&ca, &["--data-urlencode", &token, &format!("{url}/login")]);
    assert_eq!(status, 303, "{head:?}");
    let set = head
        .iter()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("no cookie: {head:?}"));
    assert!(set.starts_with("__Host-weft_session_tlsweb="), "{set}");
    for part in ["; Path=/;", "; Secure", "; HttpOnly"] {
        assert!(set.contains(part), "{set}");
    }
    assert!(!set.to_ascii_lowercase().contains("domain="), "{set}");
    let cookie = set.split(';').next().unwrap().to_owned();
    let page = format!("{url}/data/tlsweb/home/admin");
    let with = |cookie: &str| curl(&ca, &["-H", &format!("Cookie: {cookie}"), &page]);
    assert_eq!(with(&cookie).0, 200);
    // The same secret under the plain-HTTP name is no session here.
    let plain = cookie.trim_start_matches("__Host-");
    let (status, head, _) = with(plain);
    assert_eq!(status, 303, "{head:?}");
    // Twice, whatever the other value: the login page says why, and the API acts as nobody.
    let twice = format!("{cookie}; __Host-weft_session_tlsweb={}", "A".repeat(43));
    let (status, head, body) = with(&twice);
    assert_eq!(status, 401, "{head:?}");
    assert!(body.contains("two session cookies"), "{body}");
    assert!(
        head.iter()
            .any(|l| l.starts_with("set-cookie: __Host-weft_session_tlsweb=;") && l.contains("Max-Age=0")),
        "the cookie is forgotten: {head:?}"
    );
    let api = format!("{url}/api/v1/stat/tlsweb/home/admin");
    let (status, _, body) = curl(&ca, &["-H", &format!("Cookie: {twice}"), &api]);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("\"unauthenticated\""), "{body}");
}

/// An HTTPS server with the test certificate standing in for what a zone calls out to: a
/// webhook receiver (`POST /hook`: the paths it is told about) and a Handle server's
/// `PUT /api/handles/{handle}` (the handles it is given, created: 201).
struct StandIn {
    url: String,
    hooks: Arc<Mutex<Vec<String>>>,
    handles: Arc<Mutex<Vec<String>>>,
}

async fn https_stand_in(pki: &Pki) -> StandIn {
    use axum::http::StatusCode;
    let hooks = Arc::<Mutex<Vec<String>>>::default();
    let handles = Arc::<Mutex<Vec<String>>>::default();
    let (h, p) = (hooks.clone(), handles.clone());
    let app = axum::Router::new()
        .route(
            "/hook",
            axum::routing::post(move |axum::Json(v): axum::Json<serde_json::Value>| async move {
                h.lock()
                    .unwrap()
                    .push(v["path"].as_str().unwrap_or_default().to_owned());
                StatusCode::OK
            }),
        )
        .route(
            "/api/handles/{*handle}",
            axum::routing::put(
                move |axum::extract::Path(handle): axum::extract::Path<String>| async move {
                    p.lock().unwrap().push(handle.clone());
                    (
                        StatusCode::CREATED,
                        axum::Json(serde_json::json!({"responseCode": 1, "handle": handle})),
                    )
                },
            ),
        );
    let config = weft_api::tls::server_config(&pki.path("server.pem"), &pki.path("server.key")).unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", tcp.local_addr().unwrap());
    let listener = weft_api::tls::listener(tcp, config).unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    StandIn { url, hooks, handles }
}

/// Waits up to a minute for `seen` to hold `want`.
fn wait_for(seen: &Mutex<Vec<String>>, want: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !seen.lock().unwrap().iter().any(|s| s == want) {
        assert!(
            std::time::Instant::now() < deadline,
            "{want} never arrived: {:?}",
            seen.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Everything a zone started with `--tls-ca` calls out to over HTTPS trusts that CA: an
/// S3 resource on MinIO, a policy rule's webhook, the Handle server PIDs are minted at;
/// and `weft bench --zone` trusts the CA file the other commands trust (WEFT_CA_FILE).
#[test]
fn what_a_zone_and_the_bench_call_out_to_trusts_the_private_ca() {
    let pki = Pki::new();
    let minio = Minio::start_tls(&pki).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(minio.create_bucket("objects")).unwrap();
    let stand_in = rt.block_on(https_stand_in(&pki));
    let conf = tempfile::tempdir().unwrap();
    let password = conf.path().join("handle.password");
    std::fs::write(&password, "handle-secret\n").unwrap();
    let config = conf.path().join("zone.toml");
    std::fs::write(
        &config,
        format!(
            "[pid]\nprefix = \"21.T1\"\nlanding_url = \"https://data.example.org/\"\n\
             [pid.handle]\nurl = \"{}\"\nadmin = \"300:0.NA/21.T1\"\npassword_file = \"{}\"\n",
            stand_in.url,
            password.display()
        ),
    )
    .unwrap();
    let ca = pki.ca();
    let z = tls_zone_with(
        "tlsz",
        &pki,
        &[
            "--tls-ca",
            ca.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let endpoint = minio.endpoint();
    let add_s3 = [
        "resource",
        "add",
        "objects",
        "--kind",
        "s3",
        "--endpoint",
        &endpoint,
        "--bucket",
        "objects",
        "--access-key",
        minio.access_key(),
        "--secret-key",
        minio.secret_key(),
        "--region",
        minio.region(),
    ];
    assert!(endpoint.starts_with("https://"), "{endpoint}");

    // The S3 resource: added (its check writes a probe), written in parts, read back.
    z.weft(&add_s3).ok();
    let big = pseudo_random(20 << 20, 11);
    std::fs::write(z.work().join("big.bin"), &big).unwrap();
    z.weft(&[
        "put",
        "big.bin",
        "/tlsz/home/admin/big.bin",
        "--resource",
        "objects",
    ])
    .ok();
    z.weft(&["get", "/tlsz/home/admin/big.bin", "back.bin"]).ok();
    assert!(std::fs::read(z.work().join("back.bin")).unwrap() == big);
    let stat = z
        .weft(&["stat", "--json", "/tlsz/home/admin/big.bin"])
        .ok()
        .json();
    assert_eq!(stat["replicas"][0]["resource"], "objects", "{stat}");

    // A webhook of a policy rule.
    std::fs::write(
        z.work().join("policy.toml"),
        format!(
            "[[rule]]\nname = \"tell\"\non = \"created\"\n[rule.if]\npath = \"/tlsz/home/admin/in/**\"\n\
             [rule.do]\nwebhook = \"{}/hook\"\n",
            stand_in.url
        ),
    )
    .unwrap();
    z.weft(&["policy", "apply", "policy.toml"]).ok();
    z.weft(&["mkdir", "/tlsz/home/admin/in"]).ok();
    z.weft(&["put", "big.bin", "/tlsz/home/admin/in/told.bin"]).ok();
    wait_for(&stand_in.hooks, "/tlsz/home/admin/in/told.bin");

    // A PID minted at the Handle server.
    let pid = z.weft(&["pid", "mint", "/tlsz/home/admin/big.bin"]).ok();
    let pid = pid.stdout.trim();
    assert!(pid.starts_with("21.T1/"), "{pid}");
    wait_for(&stand_in.handles, pid);

    // The bench measures a zone whose certificate only the CA file vouches for.
    let out = z.work().join("bench-out");
    z.weft(&[
        "bench",
        "--zone",
        z.url(),
        "--quick",
        "metadata",
        "--out",
        out.to_str().unwrap(),
    ])
    .ok();
    assert!(out.join("report.json").is_file());
    let mut cmd = z.command();
    cmd.env("WEFT_TOKEN", z.admin_token());
    let refused = run(cmd.args(["bench", "--zone", z.url(), "--quick", "metadata"])).fails(9, "tls");
    assert!(refused.stderr.contains("certificate"), "{}", refused.stderr);

    // A zone without --tls-ca finds MinIO's certificate vouched for by no one it trusts.
    let plain = tls_zone_with("plainz", &pki, &[]);
    let refused = plain.weft(&add_s3).fails(1, "storage_unavailable");
    assert!(refused.stderr.contains("certificate"), "{}", refused.stderr);
}
