//! The session cookie and the CSRF rule, for the web pages and for the REST API when a
//! page's script calls it with the cookie instead of a bearer token.
//!
//! The cookie holds a random secret (the catalog only its hash; weft-zone `sessions.rs`).
//! It is HttpOnly (no script reads it), SameSite=Lax (other sites' forms and scripts do not
//! send it on POST), Path=/, and Secure when the zone serves HTTPS. Its name carries the
//! zone's, because browsers share cookies between the ports of one host: two zones on one
//! machine would otherwise log each other out.
//!
//! A state-changing request of a session must carry the session's CSRF token (form field
//! `csrf` or header `X-CSRF-Token`), and, when the browser says where it comes from
//! (`Origin`, else `Referer`), come from this host: SameSite is the first fence, this is the
//! second, for browsers and paths (a sibling subdomain) that SameSite does not cover.

use crate::AppState;
use http::header::{COOKIE, HOST, ORIGIN, REFERER};
use http::{HeaderMap, HeaderValue, Method};
use std::sync::Arc;
use weft_types::{Error, ErrorCode};
use weft_zone::Session;

/// The header a page's script sends its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The name of the session cookie of `zone`.
pub fn cookie_name(zone: &str) -> String {
    format!("weft_session_{zone}")
}

/// The value of the zone's session cookie in the request, as sent.
fn cookie(headers: &HeaderMap, zone: &str) -> Option<String> {
    cookie_named(headers, &cookie_name(zone))
}

/// The value of the request's cookie `name`, as sent.
pub(super) fn cookie_named(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"').to_owned())
}

/// The session secret the request's cookie holds, if any. A secret of another shape than
/// the zone's (43 URL-safe base64 characters) is no secret: it cannot name a session.
pub fn secret(headers: &HeaderMap, zone: &str) -> Option<String> {
    cookie(headers, zone).filter(|v| {
        v.len() == 43
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// Whether the request carries a session cookie at all (valid or not).
pub fn has_cookie(headers: &HeaderMap, zone: &str) -> bool {
    cookie(headers, zone).is_some()
}

/// The `Set-Cookie` value that gives the browser session `secret`.
pub fn set_cookie(zone: &str, secret: &str, https: bool) -> HeaderValue {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{}={secret}; Path=/; HttpOnly; SameSite=Lax{secure}",
        cookie_name(zone)
    ))
    .expect("cookie names and secrets are ASCII")
}

/// The `Set-Cookie` value that makes the browser forget the session cookie.
pub fn clear_cookie(zone: &str, https: bool) -> HeaderValue {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}",
        cookie_name(zone)
    ))
    .expect("ASCII")
}

/// The session of the request's cookie. Errors: `unauthenticated` (no cookie, or one that
/// names no live session).
pub async fn resolve(headers: &HeaderMap, state: &Arc<AppState>) -> Result<Session, Error> {
    let zone = &state.zone;
    let secret = secret(headers, zone.name().as_str()).ok_or_else(|| {
        Error::new(
            ErrorCode::Unauthenticated,
            "no session; log in, or send `Authorization: Bearer <token>`",
        )
    })?;
    zone.session(&secret).await
}

/// Whether `method` changes something, and so needs the CSRF token.
pub fn is_unsafe(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The CSRF rule for a state-changing request of `session`: `provided` (the form field or
/// the header) must be its token, and the request must come from this host when the
/// browser says where it comes from. Errors: `csrf_rejected`.
pub fn check_csrf(headers: &HeaderMap, session: &Session, provided: Option<&str>) -> Result<(), Error> {
    let provided = provided.or_else(|| headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()));
    match provided {
        Some(p) if constant_time_eq(p.as_bytes(), session.csrf.as_bytes()) => {}
        Some(_) => return Err(rejected("the CSRF token is not this session's; reload the page")),
        None => {
            return Err(rejected(
                "no CSRF token (form field `csrf` or header `X-CSRF-Token`); reload the page",
            ))
        }
    }
    same_origin(headers)
}

/// Refuses a request that a browser says comes from another origin than this host.
/// `Origin` is asked first (browsers send it on every POST); `Referer` when it is absent;
/// a request with neither (not from a browser) passes on its token alone.
pub fn same_origin(headers: &HeaderMap) -> Result<(), Error> {
    let host = headers.get(HOST).and_then(|v| v.to_str().ok());
    let from = match (headers.get(ORIGIN), headers.get(REFERER)) {
        (Some(o), _) => o.to_str().ok().map(|o| ("Origin", o)),
        (None, Some(r)) => r.to_str().ok().map(|r| ("Referer", r)),
        (None, None) => return Ok(()),
    };
    let Some((header, value)) = from else {
        return Err(rejected("the Origin or Referer header is not readable"));
    };
    match (authority_of(value), host) {
        (Some(a), Some(h)) if a.eq_ignore_ascii_case(h) => Ok(()),
        _ => Err(rejected(format!(
            "the request comes from another site ({header}: {}) than this zone's ({})",
            value.chars().take(200).collect::<String>(),
            host.unwrap_or("no Host header")
        ))),
    }
}

/// The `host[:port]` of an `http(s)://` URL or origin; `None` for anything else
/// (`null`, other schemes).
fn authority_of(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    (!authority.is_empty() && !authority.contains('@')).then_some(authority)
}

fn rejected(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::CsrfRejected, message)
}

/// Compares without stopping at the first difference, so that the time taken tells an
/// attacker nothing of how much of a guess was right.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session {
            caller: weft_zone::Caller {
                user_id: 1,
                name: weft_types::PrincipalName::parse("alice").unwrap(),
                is_admin: false,
                principal_ids: vec![1],
                via_zone: None,
            },
            csrf: "s3cret".into(),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_token_and_the_origin_are_both_checked() {
        let s = session();
        let host = ("host", "zone.example:8080");
        let ok = |h: &HeaderMap, p| check_csrf(h, &s, p).map_err(|e| e.code);
        assert_eq!(ok(&headers(&[host]), Some("s3cret")), Ok(()));
        assert_eq!(ok(&headers(&[host, (CSRF_HEADER, "s3cret")]), None), Ok(()));
        let csrf = Err(ErrorCode::CsrfRejected);
        assert_eq!(ok(&headers(&[host]), None), csrf);
        assert_eq!(ok(&headers(&[host]), Some("s3cre")), csrf);
        assert_eq!(ok(&headers(&[host]), Some("")), csrf);
        let from = |origin: &'static str, v: &str| headers(&[host, (origin, v)]);
        assert_eq!(
            ok(&from("origin", "http://zone.example:8080"), Some("s3cret")),
            Ok(())
        );
        assert_eq!(
            ok(&from("origin", "https://ZONE.example:8080"), Some("s3cret")),
            Ok(())
        );
        assert_eq!(
            ok(
                &from("referer", "http://zone.example:8080/data/t?x"),
                Some("s3cret")
            ),
            Ok(())
        );
        for bad in [
            "http://evil.example",
            "http://zone.example:8081",
            "http://zone.example:8080.evil.example",
            "http://zone.example:8080@evil.example",
            "null",
            "file://zone.example:8080",
        ] {
            assert_eq!(ok(&from("origin", bad), Some("s3cret")), csrf, "{bad}");
            assert_eq!(ok(&from("referer", bad), Some("s3cret")), csrf, "{bad}");
        }
        // Origin decides when both are there.
        let both = headers(&[
            host,
            ("origin", "http://evil.example"),
            ("referer", "http://zone.example:8080/"),
        ]);
        assert_eq!(ok(&both, Some("s3cret")), csrf);
    }

    #[test]
    fn only_the_zones_cookie_of_the_right_shape_is_a_secret() {
        let good = "a".repeat(43);
        let h = headers(&[("cookie", &format!("other=1; weft_session_t={good}; x=y"))]);
        assert_eq!(secret(&h, "t"), Some(good.clone()));
        assert_eq!(secret(&h, "u"), None);
        for bad in ["short", &"a".repeat(44), &format!("{}!", "a".repeat(42))] {
            let h = headers(&[("cookie", &format!("weft_session_t={bad}"))]);
            assert_eq!(secret(&h, "t"), None, "{bad}");
            assert!(has_cookie(&h, "t"));
        }
        let set = set_cookie("t", &good, true);
        let set = set.to_str().unwrap();
        for part in ["HttpOnly", "SameSite=Lax", "Path=/", "Secure"] {
            assert!(set.contains(part), "{set}");
        }
        assert!(!set_cookie("t", &good, false).to_str().unwrap().contains("Secure"));
    }
}
