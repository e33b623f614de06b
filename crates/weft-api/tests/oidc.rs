//! OIDC access tokens from a real Keycloak: signature against the JWKS, issuer, audience,
//! expiry, user and group claims, tokens longer than 1,024 bytes.

mod common;

use common::{code, start_with};
use serde_json::{json, Value};
use weft_api::OidcIssuer;
use weft_testkit::keycloak::{weft_realm_fixture, Keycloak};

fn issuer(kc: &Keycloak, audience: &str) -> OidcIssuer {
    OidcIssuer {
        issuer: kc.issuer("weft"),
        audience: audience.into(),
        user_claim: "preferred_username".into(),
        groups_claim: "groups".into(),
        jwks_uri: None,
        leeway_seconds: 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keycloak_tokens() {
    let kc = Keycloak::start(&weft_realm_fixture()).expect("Keycloak must start (run .ci/install-tools.sh)");
    let z = start_with(None, vec![issuer(&kc, "weft")]).await;
    let admin = z.admin_token.clone();
    assert_eq!(
        z.post("groups", &admin)
            .json(&json!({"name": "physics"}))
            .send()
            .await
            .unwrap()
            .status(),
        201
    );

    let alice = kc
        .password_token("weft", "weft-cli", None, "alice", "alice-pw")
        .await
        .unwrap();
    assert!(
        alice.len() > 1024,
        "the fixture should give a token past iRODS' 1,024-byte limit, got {}",
        alice.len()
    );

    // A first request provisions the user with a home; groups come from the token.
    let me: Value = z
        .get("whoami", &alice)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
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
    assert_eq!(
        z.post("mkdir/z/shared", &admin).send().await.unwrap().status(),
        201
    );
    assert_eq!(
        z.put_bytes("/z/shared/paper.pdf", b"pdf", &admin).await.status(),
        201
    );
    let r = z
        .post("acl/z/shared", &admin)
        .json(&json!({"principal": "physics", "permission": "read"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(
        z.get("data/z/shared/paper.pdf", &alice)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let bob = kc
        .password_token("weft", "weft-cli", None, "bob", "bob-pw")
        .await
        .unwrap();
    assert_eq!(
        code(z.get("data/z/shared/paper.pdf", &bob).send().await.unwrap()).await,
        (403, "forbidden".into())
    );

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
