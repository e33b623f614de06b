//! The conformance cases of the catalog's web_sessions area.

use super::*;

conformance!(web_sessions_live_with_their_token_and_user,);

async fn web_sessions_live_with_their_token_and_user(c: &SqlCatalog) {
    let alice = c
        .create_principal(&name("alice"), PrincipalKind::User, false)
        .await
        .unwrap();
    let bob = c
        .create_principal(&name("bob"), PrincipalKind::User, false)
        .await
        .unwrap();
    let t = c.create_token(alice.id, "ta", "", Some(i64::MAX)).await.unwrap();
    c.create_web_session("s1", alice.id, &SessionGrant::Token(t.id), None, "csrf-1", 0, 0)
        .await
        .unwrap();
    let (s, user) = c.web_session("s1").await.unwrap().unwrap();
    assert_eq!((user.id, s.user_id), (alice.id, alice.id));
    assert_eq!(s.grant, SessionGrant::Token(t.id));
    assert_eq!((s.csrf.as_str(), s.expires), ("csrf-1", Some(i64::MAX)));
    assert!(s.last_seen >= s.created);
    assert_eq!(c.web_session("s2").await.unwrap(), None);
    // A token of another user, or none, opens nothing.
    assert_eq!(
        code(
            c.create_web_session("s2", bob.id, &SessionGrant::Token(t.id), None, "x", 0, 0)
                .await
        ),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(
            c.create_web_session(
                "s2",
                alice.id,
                &SessionGrant::Token(TokenId(424242)),
                None,
                "x",
                0,
                0
            )
            .await
        ),
        ErrorCode::NotFound
    );
    assert_eq!(c.web_session("s2").await.unwrap(), None);

    c.touch_web_session("s1", s.last_seen + 5000).await.unwrap();
    assert_eq!(
        c.web_session("s1").await.unwrap().unwrap().0.last_seen,
        s.last_seen + 5000
    );
    // Never back in time (two servers touching at once).
    c.touch_web_session("s1", s.last_seen).await.unwrap();
    assert_eq!(
        c.web_session("s1").await.unwrap().unwrap().0.last_seen,
        s.last_seen + 5000
    );

    // Opening a session sweeps those past their limits.
    c.create_web_session(
        "s3",
        alice.id,
        &SessionGrant::Token(t.id),
        None,
        "csrf-3",
        s.last_seen + 6000,
        0,
    )
    .await
    .unwrap();
    assert_eq!(c.web_session("s1").await.unwrap(), None, "idle");
    c.create_web_session(
        "s4",
        alice.id,
        &SessionGrant::Token(t.id),
        None,
        "csrf-4",
        0,
        i64::MAX,
    )
    .await
    .unwrap();
    assert_eq!(c.web_session("s3").await.unwrap(), None, "too old");

    assert!(c.delete_web_session("s4").await.unwrap());
    assert!(!c.delete_web_session("s4").await.unwrap());

    // Removing the user removes its tokens, and with them its sessions.
    c.create_web_session("s5", alice.id, &SessionGrant::Token(t.id), None, "csrf-5", 0, 0)
        .await
        .unwrap();
    c.delete_principal(&name("alice")).await.unwrap();
    assert_eq!(c.web_session("s5").await.unwrap(), None);

    // An OIDC sign-in: no token, the groups and role of its sign-in, an end of its own
    // (and the sooner of that and a token's expiry).
    let grant = SessionGrant::Oidc(OidcClaims {
        groups: vec!["physics".into(), "<b>\"x".into()],
        admin: true,
    });
    c.create_web_session("o1", bob.id, &grant, Some(77), "csrf-o", 0, 0)
        .await
        .unwrap();
    let (s, user) = c.web_session("o1").await.unwrap().unwrap();
    assert_eq!((user.id, s.grant, s.expires), (bob.id, grant.clone(), Some(77)));
    let plain = SessionGrant::Oidc(OidcClaims::default());
    c.create_web_session("o2", bob.id, &plain, None, "csrf-o", 0, 0)
        .await
        .unwrap();
    assert_eq!(c.web_session("o2").await.unwrap().unwrap().0.grant, plain);
    let tb = c.create_token(bob.id, "tb", "", Some(500)).await.unwrap();
    c.create_web_session("o3", bob.id, &SessionGrant::Token(tb.id), Some(400), "c", 0, 0)
        .await
        .unwrap();
    assert_eq!(c.web_session("o3").await.unwrap().unwrap().0.expires, Some(400));
    // A user that is gone opens nothing; removing one ends its OIDC sessions.
    assert_eq!(
        code(
            c.create_web_session("o4", PrincipalId(424242), &grant, None, "x", 0, 0)
                .await
        ),
        ErrorCode::NotFound
    );
    // A user's sessions are bounded: the least recently used end first.
    let bound = weft_catalog::WEB_SESSIONS_PER_USER;
    c.touch_web_session("o1", i64::MAX / 2).await.unwrap();
    for i in 0..bound {
        c.create_web_session(&format!("many{i}"), bob.id, &plain, None, "c", 0, 0)
            .await
            .unwrap();
    }
    assert!(
        c.web_session("o1").await.unwrap().is_some(),
        "the most recently used stays"
    );
    assert_eq!(
        c.web_session("o2").await.unwrap(),
        None,
        "the least recently used went"
    );
    let mut left = 0;
    for i in 0..bound {
        left += usize::from(c.web_session(&format!("many{i}")).await.unwrap().is_some());
    }
    assert_eq!(left + 1, bound, "one of the new ones gave way to o1");
    c.delete_principal(&name("bob")).await.unwrap();
    assert_eq!(c.web_session("o1").await.unwrap(), None);
}
