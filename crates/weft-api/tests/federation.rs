//! Two zones on loopback, federated: one namespace across both, the remote zone's ACLs for
//! `user#zone`, zone tokens that cannot be forged, and clear answers when a peer is gone.

mod common;

use common::{code_of, federate, start_named, TestZone, SECRET};
use serde_json::{json, Value};
use weft_types::LogicalPath;

/// lrz and it4i federated; alice is a user of lrz; it4i has /it4i/shared with a.txt.
async fn two_zones() -> (TestZone, TestZone, String) {
    let lrz = start_named("lrz").await;
    let it4i = start_named("it4i").await;
    federate(&lrz, "lrz", &it4i, "it4i").await;
    let alice = lrz.user("alice").await;
    let r = it4i
        .post("mkdir/it4i/shared", &it4i.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = it4i
        .put_bytes("/it4i/shared/a.txt", b"hello from it4i", &it4i.admin_token)
        .await;
    assert_eq!(r.status(), 201);
    (lrz, it4i, alice)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_list_with_reachability() {
    let (lrz, it4i, alice) = two_zones().await;
    let zones: Value = lrz.get_json("zones", &alice).await;
    let z = &zones.as_array().unwrap()[0];
    assert_eq!(z["name"], "it4i");
    assert_eq!(z["url"], it4i.url.as_str());
    assert_eq!(z["reachable"], true, "{z}");
    assert!(z["rtt_ms"].as_f64().unwrap() >= 0.0);
    assert!(z.get("secret").is_none(), "the secret never leaves the zone: {z}");
    drop(it4i);
    let zones: Value = lrz.get_json("zones", &alice).await;
    let z = &zones.as_array().unwrap()[0];
    assert_eq!(z["reachable"], false);
    assert!(!z["error"].as_str().unwrap().is_empty(), "{z}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_paths_obey_the_remote_acls_for_user_at_zone() {
    let (lrz, it4i, alice) = two_zones().await;

    // alice#lrz holds nothing at it4i yet.
    let (status, code, message) =
        code_of(lrz.get("stat/it4i/shared/a.txt", &alice).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"), "{message}");
    assert!(message.contains("alice#lrz"), "{message}");
    let r = lrz.put_bytes("/it4i/shared/b.txt", b"x", &alice).await;
    assert_eq!(r.status(), 403);

    // it4i grants alice#lrz write, before alice#lrz was ever seen there too.
    let r = it4i
        .post("acl/it4i/shared", &it4i.admin_token)
        .json(&json!({"principal": "alice#lrz", "permission": "write", "recursive": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "{}", r.text().await.unwrap());

    // Now list, stat, read (with a range), write and remove work through lrz.
    let list: Value = lrz.get_json("list/it4i/shared", &alice).await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a.txt"]);
    let stat: Value = lrz.get_json("stat/it4i/shared/a.txt", &alice).await;
    assert_eq!(stat["size"], 15);
    assert_eq!(stat["replicas"][0]["zone"], "it4i", "site awareness: {stat}");
    assert_eq!(stat["replicas"][0]["state"], "good");
    let r = lrz
        .get("data/it4i/shared/a.txt", &alice)
        .header("range", "bytes=6-9")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206, "{:?}", r.text().await);
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"from");

    let r = lrz
        .put_bytes("/it4i/shared/b.txt", b"written from lrz", &alice)
        .await;
    assert_eq!(r.status(), 201);
    let stat: Value = it4i.get_json("stat/it4i/shared/b.txt", &it4i.admin_token).await;
    assert_eq!(stat["owner"], "alice#lrz");
    assert_eq!(stat["size"], 16);

    // A large object in pieces (upload ids carry their zone), and read back whole.
    let client = weft_client::Client::new(&lrz.url, Some(alice.clone())).unwrap();
    let big: Vec<u8> = (0..9 * 1024 * 1024 + 77).map(|i| (i % 251) as u8).collect();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("big.bin");
    std::fs::write(&local, &big).unwrap();
    let target = LogicalPath::parse("/it4i/shared/big.bin").unwrap();
    let opts = weft_client::MoveOptions {
        piece_size: Some(1 << 20),
        ..Default::default()
    };
    let stat = client.put_file(&local, &target, &opts).await.unwrap();
    assert_eq!(stat.size, big.len() as u64);
    let back = dir.path().join("back.bin");
    let got = client
        .get_file(&target, &back, &weft_client::MoveOptions::default())
        .await
        .unwrap();
    assert!(got.verified);
    assert_eq!(std::fs::read(&back).unwrap(), big);

    // Metadata and find at the remote zone.
    let r = lrz
        .post("meta/it4i/shared/b.txt", &alice)
        .json(&json!({"op": "add", "attr": "run", "value": "7"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "{}", r.text().await.unwrap());
    let found: Value = lrz
        .get("find", &alice)
        .query(&[("path", "/it4i/shared"), ("meta", "run=7")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(found["items"][0]["path"], "/it4i/shared/b.txt", "{found}");

    // Moving within the remote zone works; across zones it is a transfer.
    let r = lrz
        .post("move", &alice)
        .json(&json!({"from": "/it4i/shared/b.txt", "to": "/it4i/shared/c.txt"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let (status, code, message) = code_of(
        lrz.post("move", &alice)
            .json(&json!({"from": "/it4i/shared/c.txt", "to": "/lrz/home/alice/c.txt"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "invalid_argument"));
    assert!(message.contains("transfer"), "{message}");

    let r = lrz
        .delete("nodes/it4i/shared/c.txt", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = it4i
        .get("stat/it4i/shared/c.txt", &it4i.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_tokens_cannot_be_forged() {
    let (_lrz, it4i, _alice) = two_zones().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mint = |kid: &str, iss: &str, aud: &str, sub: &str, exp: u64, secret: &str| {
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        h.kid = Some(kid.into());
        let claims = json!({"iss": iss, "aud": aud, "sub": sub, "iat": now, "exp": exp});
        let jwt = jsonwebtoken::encode(
            &h,
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap();
        format!("weftz_{jwt}")
    };
    let whoami = |token: String| {
        let it4i = &it4i;
        async move { code_of(it4i.get("whoami", &token).send().await.unwrap()).await }
    };
    // The right secret works, and names the visitor user#zone.
    let good = mint("lrz", "lrz", "it4i", "bob", now + 60, SECRET);
    let me: Value = it4i.get_json("whoami", &good).await;
    assert_eq!(me["user"], "bob#lrz");
    assert_eq!(me["admin"], false);
    // Even the peer's admin is only a visitor.
    let admin = mint("lrz", "lrz", "it4i", "admin", now + 60, SECRET);
    let me: Value = it4i.get_json("whoami", &admin).await;
    assert_eq!(
        (me["user"].as_str(), me["admin"].as_bool()),
        (Some("admin#lrz"), Some(false))
    );

    let cases = [
        (
            "wrong secret",
            mint(
                "lrz",
                "lrz",
                "it4i",
                "bob",
                now + 60,
                "another-secret-another-secret-xx",
            ),
        ),
        (
            "wrong audience",
            mint("lrz", "lrz", "other", "bob", now + 60, SECRET),
        ),
        (
            "issuer is not the kid",
            mint("lrz", "evil", "it4i", "bob", now + 60, SECRET),
        ),
        (
            "unknown zone",
            mint("evil", "evil", "it4i", "bob", now + 60, SECRET),
        ),
        (
            "relayed visitor",
            mint("lrz", "lrz", "it4i", "bob#other", now + 60, SECRET),
        ),
        ("not a JWT", "weftz_garbage".to_owned()),
    ];
    for (what, token) in cases {
        let (status, code, message) = whoami(token).await;
        assert_eq!(
            (status, code.as_str()),
            (401, "unauthenticated"),
            "{what}: {message}"
        );
    }
    let (status, code, _) = whoami(mint("lrz", "lrz", "it4i", "bob", now - 600, SECRET)).await;
    assert_eq!((status, code.as_str()), (401, "token_expired"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_admin_and_bad_input() {
    let (lrz, it4i, alice) = two_zones().await;
    let add = |token: &str, body: Value| lrz.post("zones", token).json(&body).send();
    let cases = [
        (
            alice.as_str(),
            json!({"name": "x", "url": "http://127.0.0.1:1", "secret": SECRET}),
            403,
            "forbidden",
        ),
        (
            &lrz.admin_token,
            json!({"name": "x", "url": "http://127.0.0.1:1", "secret": "short"}),
            400,
            "invalid_argument",
        ),
        (
            &lrz.admin_token,
            json!({"name": "lrz", "url": "http://127.0.0.1:1", "secret": SECRET}),
            400,
            "invalid_argument",
        ),
        (
            &lrz.admin_token,
            json!({"name": "Bad Name", "url": "http://127.0.0.1:1", "secret": SECRET}),
            400,
            "invalid_name",
        ),
        (
            &lrz.admin_token,
            json!({"name": "x", "url": "ftp://nowhere", "secret": SECRET}),
            400,
            "invalid_argument",
        ),
        (
            &lrz.admin_token,
            json!({"name": "it4i", "url": "http://127.0.0.1:1", "secret": SECRET}),
            409,
            "already_exists",
        ),
    ];
    for (token, body, status, code) in cases {
        let (s, c, m) = code_of(add(token, body.clone()).await.unwrap()).await;
        assert_eq!((s, c.as_str()), (status, code), "{body}: {m}");
    }
    let zones: Value = lrz.get_json("zones", &alice).await;
    assert_eq!(
        zones.as_array().unwrap().len(),
        1,
        "bad input changed nothing: {zones}"
    );

    // A zone that is not federated stays unknown.
    let (status, code, _) = code_of(lrz.get("stat/nowhere/x", &alice).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (400, "unknown_zone"));

    // A federated zone that is down: 502 zone_unreachable, naming it.
    let it4i_url = it4i.url.clone();
    drop(it4i);
    let (status, code, message) = code_of(lrz.get("stat/it4i/shared", &alice).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (502, "zone_unreachable"), "{message}");
    assert!(
        message.contains("it4i") && message.contains(&it4i_url),
        "{message}"
    );

    // Removing the federation: the zone's paths are unknown again.
    let r = lrz.delete("zones/it4i", &lrz.admin_token).send().await.unwrap();
    assert_eq!(r.status(), 204);
    let (status, code, _) = code_of(lrz.get("stat/it4i/shared", &alice).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (400, "unknown_zone"));
    let r = lrz.delete("zones/it4i", &lrz.admin_token).send().await.unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_maps_a_remote_user_to_a_local_one() {
    let (lrz, it4i, alice) = two_zones().await;
    it4i.user("al").await; // alice's account at it4i, with its home
    let admin = it4i.admin_token.clone();
    let map = |body: Value| it4i.post("zones/lrz/users", &admin).json(&body).send();

    // Bad mappings are refused and change nothing.
    let r = it4i
        .post("zones/lrz/users", &lrz.user("mallory").await)
        .json(&json!({"remote_user": "alice", "local_user": "al"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "a token of lrz means nothing at it4i");
    let r = it4i
        .post("zones/lrz/users", &it4i.user("bob").await)
        .json(&json!({"remote_user": "alice", "local_user": "al"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code_of(r).await.1, "forbidden");
    for (body, want) in [
        (
            json!({"remote_user": "alice", "local_user": "admin"}),
            "invalid_argument",
        ),
        (
            json!({"remote_user": "alice", "local_user": "nobody"}),
            "not_found",
        ),
        (
            json!({"remote_user": "alice#lrz", "local_user": "al"}),
            "invalid_argument",
        ),
        (
            json!({"remote_user": "Alice Smith", "local_user": "al"}),
            "invalid_name",
        ),
    ] {
        let got = code_of(map(body.clone()).await.unwrap()).await;
        assert_eq!(got.1, want, "{body}: {got:?}");
    }
    let r = it4i
        .post("zones/nowhere/users", &admin)
        .json(&json!({"remote_user": "alice", "local_user": "al"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code_of(r).await.1, "unknown_zone");
    assert_eq!(it4i.get_json("zones/lrz/users", &admin).await, json!([]));

    // Unmapped, alice is the visitor alice#lrz: al's home is closed to her.
    let write = |name: &str| {
        lrz.put(&format!("data/it4i/home/al/{name}"), &alice)
            .body(b"from lrz".to_vec())
            .send()
    };
    assert_eq!(write("x.txt").await.unwrap().status(), 403);

    // Mapped, she acts as al: she writes in al's home and the object is al's.
    let r = map(json!({"remote_user": "alice", "local_user": "al"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        it4i.get_json("zones/lrz/users", &admin).await,
        json!([{"remote_user": "alice", "local_user": "al"}])
    );
    assert_eq!(write("x.txt").await.unwrap().status(), 201);
    let s = it4i.get_json("stat/it4i/home/al/x.txt", &admin).await;
    assert_eq!(s["owner"], "al", "{s}");
    let who: Value = lrz.get_json("stat/it4i/home/al/x.txt", &alice).await;
    assert_eq!(who["owner"], "al");

    // Unmapped again: back to the visitor.
    let r = it4i.delete("zones/lrz/users/alice", &admin).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(write("y.txt").await.unwrap().status(), 403);
    let r = it4i.delete("zones/lrz/users/alice", &admin).send().await.unwrap();
    assert_eq!(code_of(r).await.1, "not_found");
}

/// A caller vouched for by a peer zone acts only within this zone's ACLs: it gets no API
/// token of this zone, its transfers (planned now, or run later by the worker) reach no
/// staging area and no third zone, even mapped to a local user; and `zone rm` ends every
/// credential derived from the peer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visitor_gets_no_token_staging_or_relay_and_zone_rm_ends_its_credentials() {
    let (lrz, it4i, _alice) = two_zones().await;
    let dkrz = start_named("dkrz").await;
    federate(&it4i, "it4i", &dkrz, "dkrz").await;
    let admin = it4i.admin_token.clone();
    it4i.user("al").await;
    let r = it4i
        .post("zones/lrz/users", &admin)
        .json(&json!({"remote_user": "alice", "local_user": "al"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let area = tempfile::tempdir().unwrap();
    let r = it4i
        .post("staging", &admin)
        .json(&json!({"name": "scratch", "url": format!("file://{}", area.path().display())}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let r = it4i.put_bytes("/it4i/home/al/x.txt", b"al's data", &admin).await;
    assert_eq!(r.status(), 201);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mint = |sub: &str| {
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        h.kid = Some("lrz".into());
        let claims = json!({"iss": "lrz", "aud": "it4i", "sub": sub, "iat": now, "exp": now + 120});
        let key = jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes());
        format!("weftz_{}", jsonwebtoken::encode(&h, &claims, &key).unwrap())
    };
    let (alice, bob) = (mint("alice"), mint("bob"));
    assert_eq!(it4i.get_json("whoami", &alice).await["user"], "al");
    assert_eq!(it4i.get_json("whoami", &bob).await["user"], "bob#lrz");

    // No token of this zone, for itself or for the local user it is mapped to.
    for (token, body) in [
        (&alice, json!({"label": "keep"})),
        (&alice, json!({"user": "al"})),
        (&bob, json!({"label": "keep"})),
    ] {
        let (status, code, message) =
            code_of(it4i.post("tokens", token).json(&body).send().await.unwrap()).await;
        assert_eq!((status, code.as_str()), (403, "forbidden"), "{body}: {message}");
    }

    // Its transfers keep it a visitor: no staging area, no third zone; its own namespace
    // within its ACLs works.
    let out = format!("file://{}/out", area.path().display());
    for dest in [out.as_str(), "/dkrz/home/al"] {
        let r = it4i
            .post("transfers", &alice)
            .json(&json!({"sources": ["/it4i/home/al/x.txt"], "destination": dest}))
            .send()
            .await
            .unwrap();
        let (status, code, message) = code_of(r).await;
        assert_eq!(
            (status, code.as_str()),
            (403, "forbidden"),
            "to {dest}: {message}"
        );
    }
    let t = common::run_transfer(
        &it4i,
        &alice,
        json!({"sources": ["/it4i/home/al/x.txt"], "destination": "/it4i/home/al/copy.txt"}),
    )
    .await;
    assert_eq!(t["state"], "succeeded", "{t}");

    // A transfer the worker runs later (after a restart, say) acts as the visitor too.
    let catalog = weft_catalog::connect(&format!(
        "sqlite://{}",
        it4i.data_dir.join("catalog.db").display()
    ))
    .await
    .unwrap();
    let al = catalog
        .get_principal(&weft_types::PrincipalName::parse("al").unwrap())
        .await
        .unwrap()
        .unwrap();
    let lrz_name = weft_types::ZoneName::parse("lrz").unwrap();
    // The request as stored, from the transfer just run, sent to the staging area.
    let stored = catalog
        .get_transfer(&weft_types::TransferId::new(t["id"].as_str().unwrap()))
        .await
        .unwrap()
        .unwrap();
    let mut spec: Value = stored.spec.decode().unwrap();
    spec["destination"] = json!(out);
    catalog
        .create_transfer(
            &weft_types::TransferId::new("later"),
            al.id,
            Some(&lrz_name),
            None,
            weft_types::TransferKind::User,
            &weft_catalog::TransferSpecJson::encode(&spec).unwrap(),
        )
        .await
        .unwrap();
    let t = common::wait_transfer(&it4i, &admin, "later").await;
    assert_eq!(t["state"], "failed", "{t}");
    assert!(
        !area.path().join("out").exists(),
        "the worker staged a visitor's file out"
    );

    // A token an administrator made for the visitor, and the mapping, end with the zone.
    let r = it4i
        .post("tokens", &admin)
        .json(&json!({"user": "bob#lrz"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let bobs_token = r.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(it4i.get_json("whoami", &bobs_token).await["user"], "bob#lrz");
    let r = it4i.delete("zones/lrz", &admin).send().await.unwrap();
    assert_eq!(r.status(), 204);
    for token in [&alice, &bob, &bobs_token] {
        let (status, ..) = code_of(it4i.get("whoami", token).send().await.unwrap()).await;
        assert_eq!(status, 401, "a credential outlived zone rm");
    }
    // Federated again, alice is no longer al.
    let r = it4i
        .post("zones", &admin)
        .json(&json!({"name": "lrz", "url": lrz.url, "secret": SECRET}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(it4i.get_json("whoami", &mint("alice")).await["user"], "alice#lrz");
}

/// `POST /zones` refuses plain HTTP off loopback unless the body says `"insecure": true`;
/// a body without the field (an older client) is held to the rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_peers_off_loopback_need_insecure() {
    let z = start_named("lrz").await;
    let add = |name: &str, url: &str, insecure: Option<bool>| {
        let mut body = json!({"name": name, "url": url, "secret": SECRET});
        if let Some(i) = insecure {
            body["insecure"] = json!(i);
        }
        z.post("zones", &z.admin_token).json(&body).send()
    };
    for insecure in [None, Some(false)] {
        let (status, code, message) =
            code_of(add("far", "http://example.org:8640", insecure).await.unwrap()).await;
        assert_eq!((status, code.as_str()), (400, "invalid_argument"), "{message}");
        assert!(
            message.contains("https://") && message.contains("insecure"),
            "{message}"
        );
    }
    let zones: Value = z.get_json("zones", &z.admin_token).await;
    assert_eq!(zones, json!([]));
    let r = add("far", "http://example.org:8640", Some(true)).await.unwrap();
    assert_eq!(r.status(), 201);
    let r = add("farther", "https://example.org:8640", None).await.unwrap();
    assert_eq!(r.status(), 201, "https needs no flag");
    let r = add("near", "http://127.0.0.1:1", None).await.unwrap();
    assert_eq!(r.status(), 201, "loopback needs no flag");
}

/// A peer answers on this zone's origin when this zone relays for it: what it sends must
/// not set this origin's cookies (a web session of the peer's choosing) nor be a page of
/// it. `evil` answers every request with a cookie of lrz's session name and a page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_answer_sets_no_cookie_and_is_sandboxed() {
    let (lrz, it4i, alice) = two_zones().await;
    let fake = axum::Router::new().fallback(|| async {
        (
            [
                ("set-cookie", "weft_session_lrz=planted; Path=/"),
                ("set-cookie", "other=1; Path=/data"),
                ("set-cookie2", "old=1"),
                ("content-type", "text/html"),
            ],
            "<script>document.cookie = 'weft_session_lrz=planted2; path=/'</script>",
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fake_url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, fake).await.unwrap() });
    let r = lrz
        .post("zones", &lrz.admin_token)
        .json(&json!({"name": "evil", "url": fake_url, "secret": SECRET}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());

    let r = lrz.get("data/evil/x.html", &alice).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let h = r.headers();
    assert!(
        h.get("set-cookie").is_none() && h.get("set-cookie2").is_none(),
        "{h:?}"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["content-security-policy"], "sandbox");
    assert!(
        r.text().await.unwrap().contains("<script>"),
        "the body itself is the peer's"
    );

    // A real peer's object comes through sandboxed too.
    let r = it4i
        .post("acl/it4i/shared", &it4i.admin_token)
        .json(&json!({"principal": "alice#lrz", "permission": "read", "recursive": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "{}", r.text().await.unwrap());
    let r = lrz.get("data/it4i/shared/a.txt", &alice).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert_eq!(r.headers()["content-security-policy"], "sandbox");
    assert_eq!(r.headers()["content-disposition"], "attachment");
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"hello from it4i");
    server.abort();
}
