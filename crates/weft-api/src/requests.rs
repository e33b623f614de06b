//! What every request goes through first: its id (taken from `x-request-id` when a peer
//! zone or a load balancer sent a usable one, else a new one), a tracing span carrying it
//! around the handler and the requests it makes to peers, the id in the answer, one log
//! line at its end (debug level: `RUST_LOG=weft_api=debug` for an access log), the
//! zone's request metrics, and the actor its changes are audited under (where it comes
//! from here; who, once authentication has decided).

use crate::AppState;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderValue;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;
use weft_client::request_id::{self, REQUEST_ID_HEADER};

/// Longest id taken from a request; longer ones (or with other characters than letters,
/// digits, `.`, `_` and `-`) are replaced, so that no client writes what it likes into the
/// logs.
const ID_MAX: usize = 128;

fn usable(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= ID_MAX
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The route a request is counted under where no route of the router matched it (the S3
/// listener's requests, which have no routes of their own).
#[derive(Debug, Clone, Copy)]
pub struct RouteLabel(pub &'static str);

pub async fn observe(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| usable(v))
        .map_or_else(|| uuid::Uuid::new_v4().simple().to_string(), str::to_owned);
    let route = match (
        req.extensions().get::<MatchedPath>(),
        req.extensions().get::<RouteLabel>(),
    ) {
        (Some(m), _) => crate::metrics::route_label(m.as_str()),
        (None, Some(label)) => label.0.to_owned(),
        (None, None) => "unmatched".to_owned(),
    };
    let method = req.method().as_str().to_owned();
    let span = tracing::info_span!("request", id = %id, method = %method, route = %route);
    let actor = weft_zone::access::Actor {
        user: "anonymous".into(),
        origin: origin(&req),
        request_id: Some(id.clone()),
    };
    let started = Instant::now();
    let mut resp = weft_zone::access::acting(actor, request_id::scope(id.as_str().into(), next.run(req)))
        .instrument(span.clone())
        .await;
    let elapsed = started.elapsed();
    let status = resp.status().as_u16();
    span.in_scope(|| tracing::debug!(status, ms = elapsed.as_secs_f64() * 1e3, "answered"));
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    let m = s.zone.metrics();
    m.http_requests
        .get_or_create(&vec![
            ("route", route.clone()),
            ("method", method.clone()),
            ("status", status.to_string()),
        ])
        .inc();
    m.http_duration
        .get_or_create(&vec![("route", route), ("method", method)])
        .observe(elapsed.as_secs_f64());
    resp
}

/// Where a request comes from: the peer's address, and what a proxy in front says it
/// forwarded for (`x-forwarded-for`, shown as claimed: any client may send it).
fn origin(req: &Request) -> String {
    let peer = req
        .extensions()
        .get::<ConnectInfo<crate::PeerAddr>>()
        .map(|c| c.0 .0.ip().to_string());
    let forwarded: Option<String> = req
        .headers()
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.chars()
                .filter(|c| c.is_ascii_hexdigit() || matches!(c, '.' | ':' | ',' | ' '))
                .take(ID_MAX)
                .collect()
        });
    match (peer, forwarded) {
        (Some(p), Some(f)) if !f.trim().is_empty() => format!("{} via {p}", f.trim()),
        (Some(p), _) => p,
        (None, _) => "unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    /// What a client claims in `x-forwarded-for` reaches the audit log only as address
    /// characters, beside the address the connection really came from.
    #[test]
    fn forwarded_for_is_shown_as_claimed_and_cleaned() {
        let req = |xff: Option<&str>| {
            let mut b = http::Request::builder();
            if let Some(v) = xff {
                b = b.header("x-forwarded-for", v);
            }
            let mut r = b.body(axum::body::Body::empty()).unwrap();
            r.extensions_mut()
                .insert(axum::extract::ConnectInfo(crate::PeerAddr(
                    "10.0.0.2:5000".parse().unwrap(),
                )));
            r
        };
        assert_eq!(super::origin(&req(None)), "10.0.0.2");
        assert_eq!(
            super::origin(&req(Some("203.0.113.5"))),
            "203.0.113.5 via 10.0.0.2"
        );
        let hostile = super::origin(&req(Some("<script>alert(1)</script> zone ../..")));
        assert!(hostile.ends_with(" via 10.0.0.2"), "{hostile}");
        assert!(
            hostile
                .chars()
                .all(|c| c.is_ascii_hexdigit() || " .:,via".contains(c)),
            "{hostile}"
        );
        let long = super::origin(&req(Some(&"1".repeat(10_000))));
        assert!(long.len() < 200, "{}", long.len());
        let no_peer = axum::extract::Request::new(axum::body::Body::empty());
        assert_eq!(super::origin(&no_peer), "unknown");
    }

    #[test]
    fn only_plain_ids_are_taken() {
        for ok in ["abc", "0f1e-2d.3c_4b", &"a".repeat(128)] {
            assert!(super::usable(ok), "{ok}");
        }
        for bad in ["", "a b", "a\nb", "a\"b", "ä", &"a".repeat(129), "x;y"] {
            assert!(!super::usable(bad), "{bad:?}");
        }
    }
}
