//! One namespace over federated zones: a request about another zone's paths (`/it4i/...`)
//! is relayed to that zone, acting for the caller with a freshly minted zone token, and the
//! answer (status, headers, streamed body) comes back as the peer gave it, but for what
//! would let the peer act on this zone's origin ([`relayed_headers`]). The peer enforces
//! its own ACLs for `user#thiszone`; this zone only authenticates the caller.
//!
//! Which zone a request is about: the first component of the logical path for routes
//! `…/{*path}`, the `path` query parameter of `find`, the `<zone>.` prefix of an upload id,
//! and the `path`/`from`/`to` fields of the small JSON bodies of `uploads`, `move`, `copy`,
//! `replicas` and `pids`. Everything else is this zone's.

use crate::auth::Authed;
use crate::error::ApiError;
use crate::AppState;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use std::sync::Arc;
use weft_types::{ErrorCode, LogicalPath};

/// Routes whose path parameter is a logical path.
const PATH_ROUTES: &[&str] = &[
    "stat", "list", "mkdir", "nodes", "data", "checksum", "meta", "acl",
];
/// Routes whose JSON body names the paths; such bodies are small.
const BODY_ROUTES: &[&str] = &["uploads", "move", "copy", "replicas", "pids"];
const BODY_LIMIT: usize = 64 * 1024;

pub async fn relay_remote(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    match relay(&s, req, next).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn relay(s: &Arc<AppState>, req: Request, next: Next) -> Result<Response, ApiError> {
    let local = s.zone.name().as_str();
    let Some(rest) = req.uri().path().strip_prefix(weft_client::API_PREFIX) else {
        return Ok(next.run(req).await);
    };
    let mut segments = rest.trim_start_matches('/').splitn(3, '/');
    let route = segments.next().unwrap_or("");
    let second = segments.next();
    // `replicas` names its path in the URL to trim, in the body to replicate.
    let (req, zone) = if PATH_ROUTES.contains(&route) || (route == "replicas" && second.is_some()) {
        let zone = second.map(decode).unwrap_or_default();
        (req, zone)
    } else if route == "find" {
        let zone = req
            .uri()
            .query()
            .and_then(|q| form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "path"))
            .map(|(_, v)| zone_of(&v).to_owned())
            .unwrap_or_default();
        (req, zone)
    } else if route == "uploads" && second.is_some() {
        let zone = second
            .and_then(|id| id.split_once('.'))
            .map(|(z, _)| z.to_owned());
        (req, zone.unwrap_or_default())
    } else if BODY_ROUTES.contains(&route) && req.method() == http::Method::POST {
        body_zone(req).await?
    } else {
        return Ok(next.run(req).await);
    };
    if zone.is_empty() || zone == local {
        return Ok(next.run(req).await);
    }
    // Not a federated zone: the local handler gives the usual `unknown_zone` answer.
    if s.zone.federation().peer(&zone).await.is_err() {
        return Ok(next.run(req).await);
    }
    forward(s, &zone, req).await
}

/// Percent-decoded path segment (zone names are plain ASCII; anything else is no zone).
fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

fn zone_of(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

/// Reads a small JSON body to find the zone its paths name, and puts it back. A move or copy
/// across zones is refused here: that is a transfer.
async fn body_zone(req: Request) -> Result<(Request, String), ApiError> {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, BODY_LIMIT).await.map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidArgument,
            format!("request body unreadable or over 64 KiB: {e}"),
        )
    })?;
    let zones: Vec<String> = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(v) => ["path", "from", "to"]
            .iter()
            .filter_map(|k| v.get(k).and_then(|p| p.as_str()))
            .filter_map(|p| LogicalPath::parse(p).ok())
            .map(|p| p.zone().to_owned())
            .collect(),
        // Malformed JSON and paths are the handler's to report.
        Err(_) => Vec::new(),
    };
    let zone = match zones.as_slice() {
        [] => String::new(),
        [first, others @ ..] => {
            if let Some(other) = others.iter().find(|z| *z != first) {
                return Err(ApiError::new(
                    ErrorCode::InvalidArgument,
                    format!(
                        "{} between zones {first} and {other} is a transfer: use `weft transfer start`",
                        parts.uri.path().rsplit('/').next().unwrap_or("this")
                    ),
                ));
            }
            first.clone()
        }
    };
    Ok((Request::from_parts(parts, Body::from(bytes)), zone))
}

async fn forward(s: &Arc<AppState>, zone: &str, req: Request) -> Result<Response, ApiError> {
    let (mut parts, body) = req.into_parts();
    let Authed(caller) = Authed::from_request_parts(&mut parts, s).await?;
    // The web session's secrets are this zone's: the peer gets a zone token instead.
    parts.headers.remove(http::header::COOKIE);
    parts.headers.remove(crate::web::session::CSRF_HEADER);
    let client = s.zone.federation().peer_client(zone, &caller).await?;
    let path_and_query = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let body = reqwest::Body::wrap_stream(body.into_data_stream());
    let answer = client
        .forward(parts.method.clone(), path_and_query, &parts.headers, body)
        .await
        .map_err(|e| {
            ApiError::new(
                ErrorCode::ZoneUnreachable,
                format!("zone {zone} ({}) did not answer: {e}", client.zone_url()),
            )
        })?;
    let status = answer.status();
    let headers = relayed_headers(answer.headers());
    let stream = answer.bytes_stream().map_err(std::io::Error::other);
    let mut out = Response::new(Body::from_stream(stream));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    Ok(out)
}

/// The headers of a peer's answer that go on to the caller. The answer is served on this
/// zone's origin, where the web session's cookie lives: a peer's `Set-Cookie` would set
/// cookies of this origin (a session of the peer's choosing), and a peer's `text/html`
/// would be a page of it; so cookies are dropped, and the body is sandboxed whatever type
/// the peer says ([`crate::sandboxed`]).
fn relayed_headers(peer: &http::HeaderMap) -> http::HeaderMap {
    let mut out = http::HeaderMap::with_capacity(peer.len() + 2);
    for (name, value) in peer {
        let cookie = name == http::header::SET_COOKIE || name.as_str() == "set-cookie2";
        if !cookie && !weft_client::is_hop_by_hop(name) {
            out.append(name, value.clone());
        }
    }
    crate::sandboxed(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};

    #[test]
    fn a_peers_cookies_stay_out_and_its_body_is_sandboxed() {
        let mut peer = HeaderMap::new();
        for (k, v) in [
            ("set-cookie", "weft_session_lrz=planted; Path=/"),
            ("set-cookie", "other=1"),
            ("set-cookie2", "old=1"),
            ("content-type", "text/html"),
            ("x-content-type-options", "sniff-away"),
            ("content-security-policy", "script-src *"),
            ("connection", "close"),
            ("etag", "\"abc\""),
            ("x-weft-checksum", "blake3:00"),
        ] {
            peer.append(k, HeaderValue::from_static(v));
        }
        let out = super::relayed_headers(&peer);
        assert!(
            !out.contains_key("set-cookie") && !out.contains_key("set-cookie2"),
            "{out:?}"
        );
        assert!(!out.contains_key("connection"));
        assert_eq!(out["x-content-type-options"], "nosniff");
        assert_eq!(
            out.get_all("content-security-policy").iter().collect::<Vec<_>>(),
            ["sandbox"]
        );
        for kept in ["content-type", "etag", "x-weft-checksum"] {
            assert_eq!(out[kept], peer[kept], "{kept}");
        }
    }
}
