//! Bearer tokens: the `Authorization` header, the issuer of an OIDC JWT read before
//! verification, and zone tokens (`weftz_…`) of federated peers, verified with a fixed
//! secret. Every failure is `unauthenticated` (or `token_expired`).

use weft_types::ErrorCode;

const SECRET: &[u8] = b"a secret of the fuzz target, 32+ bytes long";

pub fn run(data: &[u8]) {
    let auth = |code: ErrorCode| {
        assert!(
            matches!(code, ErrorCode::Unauthenticated | ErrorCode::TokenExpired),
            "{code:?}"
        )
    };
    match weft_api::parsers::bearer_token(data) {
        Ok(t) => assert!(!t.is_empty() && t.trim() == t),
        Err(e) => auth(e.code),
    }
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = weft_api::parsers::unverified_issuer(s) {
        auth(e.code);
    }
    // As a zone token, with and without its prefix.
    for token in [
        s.to_owned(),
        format!("{}{s}", weft_zone::federation::ZONE_TOKEN_PREFIX),
    ] {
        match weft_zone::federation::zone_token_sender(&token) {
            Ok(kid) => {
                if let Ok(user) = weft_zone::federation::verify_zone_token(&token, &kid, "here", SECRET) {
                    assert!(!user.as_str().contains('#'));
                }
            }
            Err(e) => auth(e.code),
        }
        if let Err(e) = weft_zone::federation::verify_zone_token(&token, "there", "here", SECRET) {
            auth(e.code);
        }
    }
}
