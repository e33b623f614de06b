//! OIDC access tokens from a real Keycloak: signature against the JWKS, issuer, audience,
//! expiry, user and group claims, tokens longer than 1,024 bytes; identities bound to issuer
//! and subject, never to a principal by name; the administrator role; key refresh.

mod common;

use base64::Engine as _;
use common::{code, code_of, start_with, TestZone};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_api::OidcIssuer;
use weft_testkit::keycloak::{weft_realm_fixture, Keycloak};

fn issuer(kc: &Keycloak, audience: &str) -> OidcIssuer {
    issuer_at(kc.issuer("weft"), audience)
}

fn issuer_at(url: String, audience: &str) -> OidcIssuer {
    OidcIssuer {
        issuer: url,
        audience: audience.into(),
        user_claim: "preferred_username".into(),
        groups_claim: "groups".into(),
        admin_role: None,
        roles_claim: "realm_access.roles".into(),
        jwks_uri: None,
        leeway_seconds: 0,
        web_client_id: None,
        label: None,
    }
}

fn start_keycloak() -> Keycloak {
    Keycloak::start(&weft_realm_fixture()).expect("Keycloak must start (run .ci/install-tools.sh)")
}

async fn token(kc: &Keycloak, user: &str, password: &str) -> String {
    token_of_client(kc, "weft-cli", user, password).await
}

async fn token_of_client(kc: &Keycloak, client: &str, user: &str, password: &str) -> String {
    kc.password_token("weft", client, None, user, password)
        .await
        .unwrap_or_else(|e| panic!("token of {user:?} from {client}: {e}"))
}

async fn whoami(z: &TestZone, token: &str) -> Value {
    let r = z.get("whoami", token).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// Status of `POST /users` (an administrator's action) creating `name`.
async fn add_user(z: &TestZone, token: &str, name: &str) -> (u16, String) {
    code(
        z.post("users", token)
            .json(&json!({"name": name}))
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// A zone trusting `oidc`, with the group physics, which may read /z/shared/paper.pdf.
async fn zone_with_shared(oidc: OidcIssuer) -> TestZone {
    let z = start_with(None, vec![oidc]).await;
    let admin = z.admin_token.clone();
    let r = z
        .post("groups", &admin)
        .json(&json!({"name": "physics"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(
        z.post("mkdir/z/shared", &admin).send().await.unwrap().status(),
        201
    );
    assert_eq!(
        z.put_bytes("/z/shared/paper.pdf", b"pdf", &admin).await.status(),
        201
    );
    grant_shared(&z, "physics").await;
    z
}

/// `principal` may read /z/shared.
async fn grant_shared(z: &TestZone, principal: &str) {
    let r = z
        .post("acl/z/shared", &z.admin_token)
        .json(&json!({"principal": principal, "permission": "read"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "{principal}");
}

/// `z` federates the zone lrz, and lrz's user alice may read /z/shared.
async fn federate_lrz(z: &TestZone) {
    let r = z
        .post("zones", &z.admin_token)
        .json(&json!({"name": "lrz", "url": "http://127.0.0.1:1", "secret": "s".repeat(32)}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    grant_shared(z, "alice#lrz").await;
}

/// Status and code of reading /z/shared/paper.pdf.
async fn read_paper(z: &TestZone, token: &str) -> (u16, String) {
    code(z.get("data/z/shared/paper.pdf", token).send().await.unwrap()).await
}

fn forbidden() -> (u16, String) {
    (403, "forbidden".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keycloak_tokens() {
    let kc = start_keycloak();
    let z = zone_with_shared(issuer(&kc, "weft")).await;

    let alice = token(&kc, "alice", "alice-pw").await;
    assert!(
        alice.len() > 1024,
        "the fixture should give a token past iRODS' 1,024-byte limit, got {}",
        alice.len()
    );

    // A first request provisions the user with a home; groups come from the token.
    let me = whoami(&z, &alice).await;
    assert_eq!(me["user"], "alice");
    assert_eq!(me["home"], "/z/home/alice");
    assert_eq!(me["groups"], json!(["physics"]));
    assert_eq!(
        z.put_bytes("/z/home/alice/run1.dat", b"spectra", &alice)
            .await
            .status(),
        201
    );

    // Group claims count in ACLs: physics may read /z/shared, chemistry (bob) may not.
    assert_eq!(read_paper(&z, &alice).await.0, 200);
    let bob = token(&kc, "bob", "bob-pw").await;
    assert_eq!(read_paper(&z, &bob).await, forbidden());

    // A transfer runs later, in a worker, without the token: it keeps the group claims the
    // request that started it had, so what physics may read alice may copy.
    let spec = json!({"sources": ["/z/shared/paper.pdf"], "destination": "/z/home/alice/paper.pdf"});
    let r = z.post("transfers", &alice).json(&spec).send().await.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = common::wait_transfer(&z, &alice, &id).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    let r = z.get("data/z/home/alice/paper.pdf", &alice).send().await.unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"pdf");
    // bob's transfer of the same is refused: claims grant only what they name.
    let spec = json!({"sources": ["/z/shared/paper.pdf"], "destination": "/z/home/bob/paper.pdf"});
    let r = z.post("transfers", &bob).json(&spec).send().await.unwrap();
    assert_eq!(code(r).await, forbidden());

    // A confidential client's token works the same way.
    let svc = kc
        .password_token("weft", "weft-zone", Some("weft-zone-secret"), "alice", "alice-pw")
        .await
        .unwrap();
    assert_eq!(z.get("whoami", &svc).send().await.unwrap().status(), 200);

    let before = z.snapshot().await;
    // Wrongly signed: the signature of another token, or a flipped byte.
    let parts: Vec<&str> = alice.split('.').collect();
    let forged = format!("{}.{}.{}", parts[0], parts[1], bob.split('.').nth(2).unwrap());
    let r = z
        .put("data/z/home/alice/forged", &forged)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (401, "unauthenticated".into()));
    let mut sig = parts[2].to_owned().into_bytes();
    sig[10] = if sig[10] == b'A' { b'B' } else { b'A' };
    let flipped = format!("{}.{}.{}", parts[0], parts[1], String::from_utf8(sig).unwrap());
    assert_eq!(
        code(z.get("whoami", &flipped).send().await.unwrap()).await,
        (401, "unauthenticated".into())
    );
    assert_eq!(
        code(z.get("whoami", "not.a.jwt").send().await.unwrap()).await,
        (401, "unauthenticated".into())
    );

    // Expired.
    let short = kc
        .password_token("weft", "weft-short", None, "alice", "alice-pw")
        .await
        .unwrap();
    assert_eq!(z.get("whoami", &short).send().await.unwrap().status(), 200);
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    let r = z
        .put("data/z/home/alice/late", &short)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (401, "token_expired".into()));
    assert_eq!(z.snapshot().await, before);

    // Wrong audience: a zone that expects another audience refuses the same token.
    let other = start_with(None, vec![issuer(&kc, "some-other-service")]).await;
    let r = other.get("whoami", &alice).send().await.unwrap();
    let (status, c) = code(r).await;
    assert_eq!((status, c.as_str()), (401, "unauthenticated"));
    // An issuer the zone does not trust.
    let none = start_with(
        None,
        vec![OidcIssuer {
            issuer: "http://127.0.0.1:1/realms/x".into(),
            ..issuer(&kc, "weft")
        }],
    )
    .await;
    assert_eq!(
        code(none.get("whoami", &alice).send().await.unwrap()).await,
        (401, "unauthenticated".into())
    );
}

/// Keycloak users named `admin`, like the weft group `physics`, `alice#lrz` (a principal of
/// the federated zone lrz) and like a local user get users of their own with derived names
/// and nothing granted to the principals they are named like; group claims `admin` and
/// `alice#lrz` count for nothing; a renamed Keycloak user stays the same weft user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_names_take_over_nothing() {
    let kc = start_keycloak();
    let z = zone_with_shared(issuer(&kc, "weft")).await;
    let admin = z.admin_token.clone();
    federate_lrz(&z).await;
    let erin = z.user("erin").await;
    assert_eq!(
        z.put_bytes("/z/home/erin/notes", b"erin's", &erin).await.status(),
        201
    );

    // Keycloak's `admin` is not the zone's administrator.
    let kc_admin = token(&kc, "admin", "admin-pw").await;
    let me = whoami(&z, &kc_admin).await;
    let name = me["user"].as_str().unwrap().to_owned();
    assert!(
        name.starts_with("admin-") && name.len() == "admin-".len() + 10,
        "{me}"
    );
    assert_eq!(me["admin"], false);
    assert_eq!(me["home"], format!("/z/home/{name}"));
    assert_eq!(add_user(&z, &kc_admin, "mallory").await, forbidden());
    assert_eq!(
        code(z.get("list/z/home/admin", &kc_admin).send().await.unwrap()).await,
        forbidden()
    );
    assert_eq!(
        z.put_bytes("/z/home/admin/x", b"x", &kc_admin).await.status(),
        403
    );
    assert_eq!(
        z.put_bytes(&format!("/z/home/{name}/mine"), b"x", &kc_admin)
            .await
            .status(),
        201
    );
    assert_eq!(whoami(&z, &admin).await["user"], "admin");
    assert_eq!(whoami(&z, &admin).await["admin"], true);

    // Keycloak's `physics` is not the group physics; its group claims `admin` and
    // `alice#lrz` name no weft group and count for nothing.
    let kc_physics = token(&kc, "physics", "physics-pw").await;
    let me = whoami(&z, &kc_physics).await;
    let physics = me["user"].as_str().unwrap().to_owned();
    assert!(physics.starts_with("physics-"), "{me}");
    assert_eq!((&me["admin"], &me["groups"]), (&json!(false), &json!([])));
    assert_eq!(read_paper(&z, &kc_physics).await, forbidden());
    assert_eq!(add_user(&z, &kc_physics, "mallory").await, forbidden());
    // Made a member by the administrator, it reads what the group may.
    let r = z
        .put(&format!("groups/physics/members/{physics}"), &admin)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(whoami(&z, &kc_physics).await["groups"], json!(["physics"]));
    assert_eq!(read_paper(&z, &kc_physics).await.0, 200);

    // A token whose user claim is `alice#lrz` is a local user, not lrz's alice. Keycloak
    // refuses `#` in user names ("Account is not fully set up" at login), so the client
    // weft-fed puts `alice#lrz` into the claim weft_user, which this zone reads.
    let zf = zone_with_shared(OidcIssuer {
        user_claim: "weft_user".into(),
        ..issuer(&kc, "weft")
    })
    .await;
    federate_lrz(&zf).await;
    let kc_fed = token_of_client(&kc, "weft-fed", "bob", "bob-pw").await;
    let me = whoami(&zf, &kc_fed).await;
    let fed = me["user"].as_str().unwrap();
    assert!(fed.starts_with("alice-lrz-") && !fed.contains('#'), "{me}");
    assert_eq!(me["admin"], false);
    assert_eq!(read_paper(&zf, &kc_fed).await, forbidden());

    // Keycloak's `erin` does not take over the local user erin.
    let kc_erin = token(&kc, "erin", "erin-pw").await;
    let me = whoami(&z, &kc_erin).await;
    assert!(me["user"].as_str().unwrap().starts_with("erin-"), "{me}");
    assert_eq!(
        code(z.get("data/z/home/erin/notes", &kc_erin).send().await.unwrap()).await,
        forbidden()
    );

    // A renamed Keycloak user stays the user its subject was bound to, with its data.
    let dana = token(&kc, "dana", "dana-pw").await;
    assert_eq!(whoami(&z, &dana).await["user"], "dana");
    assert_eq!(z.put_bytes("/z/home/dana/d", b"d", &dana).await.status(), 201);
    kc.rename_user("weft", "dana", "dana-renamed").await.unwrap();
    let renamed = token(&kc, "dana-renamed", "dana-pw").await;
    assert_eq!(whoami(&z, &renamed).await["user"], "dana");
    assert_eq!(
        z.get("data/z/home/dana/d", &renamed)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    // The same identities again find the same users.
    assert_eq!(whoami(&z, &kc_admin).await["user"], name.as_str());
    assert_eq!(whoami(&z, &kc_physics).await["user"], physics.as_str());
}

/// Only a token carrying the configured administrator role is an administrator, and only
/// with that setting; the user itself is never stored as one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_role_makes_administrators() {
    let kc = start_keycloak();
    let with_role = start_with(
        None,
        vec![OidcIssuer {
            admin_role: Some("weft-admin".into()),
            ..issuer(&kc, "weft")
        }],
    )
    .await;
    let without = start_with(None, vec![issuer(&kc, "weft")]).await;
    let carol = token(&kc, "carol", "carol-pw").await;
    let alice = token(&kc, "alice", "alice-pw").await;

    let me = whoami(&with_role, &carol).await;
    assert_eq!((&me["user"], &me["admin"]), (&json!("carol"), &json!(true)));
    assert_eq!(add_user(&with_role, &carol, "frank").await.0, 201);
    let me = whoami(&with_role, &alice).await;
    assert_eq!((&me["user"], &me["admin"]), (&json!("alice"), &json!(false)));
    assert_eq!(add_user(&with_role, &alice, "grace").await, forbidden());

    // An API token carol makes for herself carries no role: it is not an administrator.
    let r = with_role
        .post("tokens", &carol)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let made: Value = r.json().await.unwrap();
    let api_token = made["token"].as_str().unwrap();
    assert_eq!(whoami(&with_role, api_token).await["admin"], false);
    assert_eq!(add_user(&with_role, api_token, "heidi").await, forbidden());

    // Without the setting, the role means nothing.
    assert_eq!(whoami(&without, &carol).await["admin"], false);
    assert_eq!(add_user(&without, &carol, "ivan").await, forbidden());
}

/// A JWKS endpoint that serves Keycloak's keys, or hangs, and counts its requests.
#[derive(Clone)]
struct Jwks {
    body: String,
    hang: Arc<Mutex<bool>>,
    requests: Arc<AtomicUsize>,
    /// Requests being answered (a hanging one stays until the client gives up).
    open: Arc<AtomicUsize>,
}

struct Open(Arc<AtomicUsize>);
impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve_jwks(axum::extract::State(j): axum::extract::State<Jwks>) -> String {
    j.requests.fetch_add(1, Ordering::SeqCst);
    j.open.fetch_add(1, Ordering::SeqCst);
    let _open = Open(j.open.clone());
    let hang = *j.hang.lock().unwrap();
    if hang {
        std::future::pending::<()>().await;
    }
    j.body.clone()
}

/// `token` with its header's key id replaced (the signature no longer matters: the key is
/// looked up first).
fn with_kid(token: &str, kid: &str) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let (header, rest) = token.split_once('.').unwrap();
    let mut h: Value = serde_json::from_slice(&b64.decode(header).unwrap()).unwrap();
    h["kid"] = kid.into();
    format!("{}.{rest}", b64.encode(serde_json::to_vec(&h).unwrap()))
}

/// While a key fetch hangs (an unknown key id asked for it), tokens of known keys keep
/// being answered; the failed fetch keeps the old keys; fetches are not repeated at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_refresh_never_blocks_known_keys() {
    let kc = start_keycloak();
    let certs = format!("{}/protocol/openid-connect/certs", kc.issuer("weft"));
    let jwks = Jwks {
        body: reqwest::get(&certs).await.unwrap().text().await.unwrap(),
        hang: Arc::default(),
        requests: Arc::default(),
        open: Arc::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let jwks_uri = format!("http://{}/certs", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/certs", axum::routing::get(serve_jwks))
        .with_state(jwks.clone());
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let z = start_with(
        None,
        vec![OidcIssuer {
            jwks_uri: Some(jwks_uri),
            ..issuer(&kc, "weft")
        }],
    )
    .await;
    let alice = token(&kc, "alice", "alice-pw").await;
    assert_eq!(whoami(&z, &alice).await["user"], "alice");
    assert_eq!(jwks.requests.load(Ordering::SeqCst), 1);

    // Within 10 s of that fetch an unknown key id fetches nothing and fails at once.
    let rotated = with_kid(&alice, "rotated-key");
    let (status, code, message) = code_of(z.get("whoami", &rotated).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (401, "unauthenticated"), "{message}");
    assert_eq!(jwks.requests.load(Ordering::SeqCst), 1);

    // After that, it starts a fetch, which hangs.
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    *jwks.hang.lock().unwrap() = true;
    let stuck = tokio::spawn({
        let r = z.get("whoami", &rotated);
        async move { code_of(r.send().await.unwrap()).await }
    });
    tokio::time::timeout(Duration::from_secs(30), async {
        while jwks.open.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the unknown key id fetches the keys");
    // Known keys answer while that fetch is still open.
    for _ in 0..5 {
        assert_eq!(whoami(&z, &alice).await["user"], "alice");
    }
    assert_eq!(
        jwks.open.load(Ordering::SeqCst),
        1,
        "the requests with a known key waited for the hanging fetch"
    );
    assert!(!stuck.is_finished());

    // The fetch gives up; the unknown key fails, the old keys still work.
    let (status, code, message) = stuck.await.unwrap();
    assert_eq!((status, code.as_str()), (503, "storage_unavailable"), "{message}");
    assert!(message.contains("cannot fetch the keys"), "{message}");
    assert_eq!(whoami(&z, &alice).await["user"], "alice");
    // Right after a failed fetch no other starts: the unknown key fails at once.
    *jwks.hang.lock().unwrap() = false;
    let (status, code, message) = code_of(z.get("whoami", &rotated).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (401, "unauthenticated"), "{message}");
    assert!(message.contains("rotated-key"), "{message}");
    assert_eq!(jwks.requests.load(Ordering::SeqCst), 2);
    server.abort();
}

/// The sign-in page, which anybody may load, asks the issuer's discovery document once for
/// many loads (the document is kept), and once more only after a failed fetch's pause. The
/// issuer here is a local server that counts what it is asked; the document is one of the
/// form Keycloak serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_pages_do_not_ask_the_issuer_each() {
    let asked = Arc::new(AtomicUsize::new(0));
    let down = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer_url = format!("http://{}/realms/weft", listener.local_addr().unwrap());
    let document = json!({
        "issuer": issuer_url,
        "authorization_endpoint": format!("{issuer_url}/protocol/openid-connect/auth"),
        "token_endpoint": format!("{issuer_url}/protocol/openid-connect/token"),
        "jwks_uri": format!("{issuer_url}/protocol/openid-connect/certs"),
    });
    let app = axum::Router::new().route(
        "/realms/weft/.well-known/openid-configuration",
        axum::routing::get({
            let (asked, down) = (asked.clone(), down.clone());
            move || async move {
                asked.fetch_add(1, Ordering::SeqCst);
                if down.load(Ordering::SeqCst) {
                    Err(axum::http::StatusCode::SERVICE_UNAVAILABLE)
                } else {
                    Ok(axum::Json(document))
                }
            }
        }),
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let z = start_with(
        None,
        vec![OidcIssuer {
            web_client_id: Some("weft-web".into()),
            ..issuer_at(issuer_url.clone(), "weft")
        }],
    )
    .await;
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let load = || async {
        let r = browser
            .get(format!("{}/login/oidc/0", z.url))
            .send()
            .await
            .unwrap();
        let to = r
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_owned());
        (r.status().as_u16(), to)
    };
    // The issuer is down: the page says so, and asks again only after the pause.
    for _ in 0..10 {
        let (status, to) = load().await;
        assert_eq!((status, to), (503, None));
    }
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "a failed fetch is not repeated at once"
    );
    down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    for _ in 0..20 {
        let (status, to) = load().await;
        assert_eq!(status, 303);
        let to = to.expect("a redirect to the issuer");
        assert!(
            to.starts_with(&format!("{issuer_url}/protocol/openid-connect/auth?")),
            "{to}"
        );
    }
    assert_eq!(asked.load(Ordering::SeqCst), 2, "the document is kept");
    server.abort();
}
