//! The session cookie and the CSRF rule, for the web pages and for the REST API when a
//! page's script calls it with the cookie instead of a bearer token.
//!
//! The cookie holds a random secret (the catalog only its hash; weft-zone `sessions.rs`).
//! It is HttpOnly (no script reads it), SameSite=Lax (other sites' forms and scripts do not
//! send it on POST), Path=/, and Secure when the zone serves HTTPS. Its name carries the
//! zone's, because browsers share cookies between the ports of one host: two zones on one
//! machine would otherwise log each other out.
//!
//! Cookies ignore ports, so any page of this host (the S3 gateway's port, another service)
//! can plant a cookie of the session's name, and a sibling host one for the parent domain.
//! Over HTTPS the name is `__Host-weft_session_<zone>`: browsers take such a cookie only
//! Secure, host-only and for Path=/, so plain HTTP and sibling hosts cannot plant it. Over
//! plain HTTP browsers refuse that prefix and the name stays `weft_session_<zone>`.
//! A planted cookie for a narrower path or a domain comes along with the user's own; the
//! browser sends the more specific first, and taking it would log the user into the
//! attacker's account (login CSRF: what they upload then lands there). So a request that
//! carries the session's cookie twice, whatever the values, is refused as unauthenticated
//! and acts as neither; the pages answer it with the login page naming the cause and with
//! `Set-Cookie`s that forget the name for every path of the request and for the host and its
//! parent domains (what a planted cookie can have been set for), so that logging in again
//! is enough. The login form itself reads no session cookie and works as ever. A cookie
//! planted for `Path=/` host-only replaces the user's own instead, which no server can tell
//! apart: that is why the S3 gateway answers with a sandboxing CSP (no script of a stored
//! page runs, `s3/sandbox.rs`) and belongs on a host name of its own (README).
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
use weft_zone::access::Session;

/// The header a page's script sends its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The name of the session cookie of `zone`.
pub fn cookie_name(zone: &str, https: bool) -> String {
    host_only(&format!("weft_session_{zone}"), https)
}

/// The cookie name `stem` with the prefix `__Host-` over HTTPS, where browsers accept it:
/// they take such a cookie only Secure, host-only and for `Path=/`.
pub(super) fn host_only(stem: &str, https: bool) -> String {
    if https {
        format!("__Host-{stem}")
    } else {
        stem.to_owned()
    }
}

/// What a request carries of one cookie name.
#[derive(Debug, PartialEq)]
pub enum Sent {
    Nothing,
    /// The value, as sent.
    One(String),
    /// Two or more cookies of the name: at least one planted, none to be trusted.
    Several,
}

impl Sent {
    /// The value of a name sent exactly once.
    pub fn only(self) -> Option<String> {
        match self {
            Sent::One(v) => Some(v),
            Sent::Nothing | Sent::Several => None,
        }
    }
}

/// The request's cookies named `name`.
pub(super) fn cookie_named(headers: &HeaderMap, name: &str) -> Sent {
    let mut values = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"').to_owned());
    match (values.next(), values.next()) {
        (None, _) => Sent::Nothing,
        (Some(v), None) => Sent::One(v),
        (Some(_), Some(_)) => Sent::Several,
    }
}

/// The zone's session cookies in the request.
fn sent(headers: &HeaderMap, zone: &str, https: bool) -> Sent {
    cookie_named(headers, &cookie_name(zone, https))
}

/// Whether the request carries the session cookie of `s`'s zone more than once.
pub fn twice(headers: &HeaderMap, s: &AppState) -> bool {
    sent(headers, s.zone.name().as_str(), s.https) == Sent::Several
}

/// The session secret the request's cookie holds, if any. A secret of another shape than
/// the zone's (43 URL-safe base64 characters) is no secret: it cannot name a session.
/// Errors: `unauthenticated` (the cookie came twice).
pub fn secret(headers: &HeaderMap, zone: &str, https: bool) -> Result<Option<String>, Error> {
    let value = match sent(headers, zone, https) {
        Sent::Nothing => return Ok(None),
        Sent::One(v) => v,
        Sent::Several => {
            return Err(Error::new(
                ErrorCode::Unauthenticated,
                "two session cookies of this zone came with the request (another page of this \
                 host may have planted one); neither is used. Log in again; if this comes back, \
                 clear this site's cookies",
            ))
        }
    };
    Ok(Some(value).filter(|v| {
        v.len() == 43
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }))
}

/// Whether the request carries a session cookie at all (valid or not, once or more).
pub fn has_cookie(headers: &HeaderMap, zone: &str, https: bool) -> bool {
    sent(headers, zone, https) != Sent::Nothing
}

/// The `Set-Cookie` value that gives the browser session `secret`.
pub fn set_cookie(zone: &str, secret: &str, https: bool) -> HeaderValue {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{}={secret}; Path=/; HttpOnly; SameSite=Lax{secure}",
        cookie_name(zone, https)
    ))
    .expect("cookie names and secrets are ASCII")
}

/// The `Set-Cookie` value that makes the browser forget the session cookie.
pub fn clear_cookie(zone: &str, https: bool) -> HeaderValue {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}",
        cookie_name(zone, https)
    ))
    .expect("ASCII")
}

/// The `Set-Cookie` values that make the browser forget every session cookie the request
/// to `path` can have carried: none without one, the user's own for one; for several, also
/// every cookie of the name another page could have planted and that reaches `path` (one
/// for each of its leading paths, host-only or for the host or a parent domain of it).
/// Over HTTPS only the one `__Host-` cookie can exist.
pub fn forget(headers: &HeaderMap, path: &str, zone: &str, https: bool) -> Vec<HeaderValue> {
    match sent(headers, zone, https) {
        Sent::Nothing => Vec::new(),
        Sent::One(_) => vec![clear_cookie(zone, https)],
        Sent::Several if https => vec![clear_cookie(zone, https)],
        Sent::Several => {
            let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
            let mut domains = vec![String::new()];
            domains.extend(parent_domains(host).map(|d| format!("; Domain={d}")));
            let name = cookie_name(zone, false);
            cookie_paths(path)
                .flat_map(|p| domains.iter().map(move |d| (p, d)))
                .filter_map(|(p, d)| HeaderValue::from_str(&format!("{name}=; Path={p}; Max-Age=0{d}")).ok())
                .collect()
        }
    }
}

/// The paths a cookie that reaches `path` can have been set for (RFC 6265 §5.1.4): `/` and
/// each leading part of `path`, ending at a `/` or before one. At most 64: a deeper planted
/// cookie is left for the user to clear (the message says so).
fn cookie_paths(path: &str) -> impl Iterator<Item = &str> {
    let ends = path
        .char_indices()
        .filter(|(_, c)| *c == '/')
        .flat_map(|(i, _)| [i, i + 1])
        .chain([path.len()]);
    ends.filter(|&end| end > 0)
        .map(move |end| &path[..end])
        .filter(|p| p.starts_with('/') && !p.contains([';', ',', ' ']))
        .scan(None, |last, p| {
            let fresh = *last != Some(p);
            *last = Some(p);
            Some(fresh.then_some(p))
        })
        .flatten()
        .take(64)
}

/// The host of a `Host` header value and each parent domain of it with a dot (browsers
/// refuse public suffixes themselves); nothing for an IP address, whose cookies are
/// host-only.
fn parent_domains(host: &str) -> impl Iterator<Item = &str> {
    let name = match host.rsplit_once(':') {
        Some((n, port)) if port.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => host,
    };
    let usable = !name.is_empty()
        && !name.starts_with('[')
        && name.parse::<std::net::Ipv4Addr>().is_err()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    let starts = usable.then(move || {
        std::iter::once(0).chain(name.char_indices().filter(|(_, c)| *c == '.').map(|(i, _)| i + 1))
    });
    starts
        .into_iter()
        .flatten()
        .map(move |i| &name[i..])
        .filter(move |d| d.len() == name.len() || d.contains('.'))
}

/// The session of the request's cookie. Errors: `unauthenticated` (no cookie, two, or one
/// that names no live session).
pub async fn resolve(headers: &HeaderMap, state: &Arc<AppState>) -> Result<Session, Error> {
    let zone = &state.zone;
    let secret = secret(headers, zone.name().as_str(), state.https)?.ok_or_else(|| {
        Error::new(
            ErrorCode::Unauthenticated,
            "no session; log in, or send `Authorization: Bearer <token>`",
        )
    })?;
    zone.access().session(&secret).await
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
                user_id: weft_zone::access::PrincipalId(1),
                name: weft_types::PrincipalName::parse("alice").unwrap(),
                is_admin: false,
                principal_ids: vec![weft_zone::access::PrincipalId(1)],
                via_zone: None,
                oidc: None,
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
        assert_eq!(secret(&h, "t", false), Ok(Some(good.clone())));
        assert_eq!(secret(&h, "u", false), Ok(None));
        for bad in ["short", &"a".repeat(44), &format!("{}!", "a".repeat(42))] {
            let h = headers(&[("cookie", &format!("weft_session_t={bad}"))]);
            assert_eq!(secret(&h, "t", false), Ok(None), "{bad}");
            assert!(has_cookie(&h, "t", false));
        }
        let set = set_cookie("t", &good, true);
        let set = set.to_str().unwrap();
        for part in ["HttpOnly", "SameSite=Lax", "Path=/", "Secure"] {
            assert!(set.contains(part), "{set}");
        }
        assert!(!set_cookie("t", &good, false).to_str().unwrap().contains("Secure"));
    }

    #[test]
    fn over_https_only_the_host_only_cookie_counts() {
        let good = "a".repeat(43);
        let set = set_cookie("t", &good, true);
        assert!(
            set.to_str()
                .unwrap()
                .starts_with(&format!("__Host-weft_session_t={good}; Path=/;")),
            "{set:?}"
        );
        assert!(clear_cookie("t", true)
            .to_str()
            .unwrap()
            .starts_with("__Host-weft_session_t=;"));
        let plain = headers(&[("cookie", &format!("weft_session_t={good}"))]);
        assert_eq!(secret(&plain, "t", true), Ok(None));
        assert!(!has_cookie(&plain, "t", true));
        let host = headers(&[("cookie", &format!("__Host-weft_session_t={good}"))]);
        assert_eq!(secret(&host, "t", true), Ok(Some(good.clone())));
        assert_eq!(secret(&host, "t", false), Ok(None));
    }

    #[test]
    fn a_cookie_sent_twice_is_no_session_whatever_the_values() {
        let good = "a".repeat(43);
        let other = "b".repeat(43);
        for (cookies, https) in [
            (
                vec![format!("weft_session_t={other}; weft_session_t={good}")],
                false,
            ),
            (
                vec![format!("weft_session_t={good}; x=1; weft_session_t={good}")],
                false,
            ),
            // Split over two Cookie headers (HTTP/2 sends one per cookie).
            (
                vec![format!("weft_session_t={good}"), "weft_session_t=x".into()],
                false,
            ),
            (
                vec![format!(
                    "__Host-weft_session_t={good}; __Host-weft_session_t={other}"
                )],
                true,
            ),
        ] {
            let pairs: Vec<_> = cookies.iter().map(|c| ("cookie", c.as_str())).collect();
            let h = headers(&pairs);
            let e = secret(&h, "t", https).unwrap_err();
            assert_eq!(e.code, ErrorCode::Unauthenticated);
            assert!(e.message.contains("two session cookies"), "{}", e.message);
            assert!(has_cookie(&h, "t", https));
        }
    }

    #[test]
    fn a_planted_cookie_is_forgotten_for_every_path_and_domain_it_can_have() {
        let good = "a".repeat(43);
        let one = headers(&[("cookie", &format!("weft_session_t={good}"))]);
        assert_eq!(
            forget(&one, "/data/t", "t", false),
            vec![clear_cookie("t", false)]
        );
        assert!(forget(&headers(&[]), "/data/t", "t", false).is_empty());
        let two = |host: &str| {
            headers(&[
                ("host", host),
                ("cookie", &format!("weft_session_t={good}; weft_session_t=x")),
            ])
        };
        let set: Vec<String> = forget(&two("weft.example.org:8080"), "/data/t", "t", false)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        for path in ["/", "/data", "/data/", "/data/t"] {
            for domain in ["", "; Domain=weft.example.org", "; Domain=example.org"] {
                let want = format!("weft_session_t=; Path={path}; Max-Age=0{domain}");
                assert!(set.contains(&want), "{want} in {set:?}");
            }
        }
        assert_eq!(set.len(), 12, "{set:?}");
        let ip = forget(&two("127.0.0.1:8080"), "/", "t", false);
        assert_eq!(
            ip,
            vec![HeaderValue::from_static("weft_session_t=; Path=/; Max-Age=0")]
        );
        let https = headers(&[(
            "cookie",
            &format!("__Host-weft_session_t={good}; __Host-weft_session_t=x"),
        )]);
        assert_eq!(
            forget(&https, "/data/t", "t", true),
            vec![clear_cookie("t", true)]
        );
        let odd: Vec<&str> = cookie_paths("/a;b/c").collect();
        // A path with `;` cannot be a cookie's (the `;` would end the attribute).
        assert_eq!(odd, ["/"]);
    }
}
