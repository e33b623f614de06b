//! Logging in (an API token pasted into a form opens a session; `sso.rs` signs in with the
//! zone's OIDC issuers) and out.

use crate::extract::QueryPairs;
use crate::web::templates;
use crate::web::{paths, session, FormFields, WebError, WebUser};
use crate::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use http::{header, HeaderMap, StatusCode};
use std::sync::Arc;
use weft_types::{ErrorCode, LogicalPath};

/// `/`: the user's home collection, or the login page.
pub async fn home(State(s): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    match session::resolve(&headers, &s).await {
        Ok(session) => Redirect::to(&home_of(&s, &session.caller)).into_response(),
        Err(_) => Redirect::to("/login").into_response(),
    }
}

/// The Data page of `caller`'s home collection.
pub fn home_of(s: &AppState, caller: &weft_zone::Caller) -> String {
    home_path(s.zone.name().as_str(), caller.name.as_str())
}

/// The Data page of the home collection of `user` of `zone` (the zone root if that is
/// no path).
pub fn home_path(zone: &str, user: &str) -> String {
    let root = LogicalPath::parse(&format!("/{zone}"));
    match root.as_ref().map(|r| r.join("home").and_then(|h| h.join(user))) {
        Ok(Ok(h)) => paths::to_url("/data", &h),
        Ok(Err(_)) => paths::to_url("/data", root.as_ref().expect("parsed")),
        Err(_) => "/".to_owned(),
    }
}

/// Where to go after logging in: a page of this interface, never another site
/// (`//evil.example`, `/\evil.example`) or an API route.
pub(in crate::web) fn next_page(q: Option<&str>) -> Option<&str> {
    let next = q?;
    let local = next.starts_with('/')
        && !next.starts_with("//")
        && !next.starts_with("/\\")
        && !next.chars().any(|c| c.is_control() || c == '\\');
    let page = next == "/"
        || ["/data", "/transfers", "/zones", "/policies", "/admin"]
            .iter()
            .any(|p| next.starts_with(p));
    (local && page).then_some(next)
}

pub async fn page(State(s): State<Arc<AppState>>, headers: HeaderMap, q: QueryPairs) -> Response {
    let next = next_page(q.get("next"));
    match session::resolve(&headers, &s).await {
        Ok(session) => {
            let to = next.map_or_else(|| home_of(&s, &session.caller), str::to_owned);
            Redirect::to(&to).into_response()
        }
        Err(e) if session::twice(&headers, &s) => refused_twice(&s, &headers, "/login", next, &e.message),
        Err(_) => login_page(&s, next, None).into_response(),
    }
}

/// The login page for a request that carried the session cookie twice: it says why, with
/// 401, and makes the browser forget every cookie of the name it can reach from `path`.
pub(in crate::web) fn refused_twice(
    s: &AppState,
    headers: &HeaderMap,
    path: &str,
    next: Option<&str>,
    why: &str,
) -> Response {
    let mut resp = page_with(s, next, why, StatusCode::UNAUTHORIZED);
    for clear in session::forget(headers, path, s.zone.name().as_str(), s.https) {
        resp.headers_mut().append(header::SET_COOKIE, clear);
    }
    resp
}

/// The sign-in page: the token form, and a button per issuer the web can sign in with.
fn login_page(s: &AppState, next: Option<&str>, problem: Option<&str>) -> axum::response::Html<String> {
    let issuers: Vec<(usize, &str)> = s
        .oidc
        .issuers()
        .iter()
        .enumerate()
        .filter(|(_, i)| i.web_client_id.is_some())
        .map(|(n, i)| (n, i.label()))
        .collect();
    templates::login(s.zone.name().as_str(), next, &issuers, problem)
}

/// The sign-in page telling what went wrong, with `status`.
pub(in crate::web) fn page_with(
    s: &AppState,
    next: Option<&str>,
    problem: &str,
    status: StatusCode,
) -> Response {
    (status, login_page(s, next, Some(problem))).into_response()
}

pub async fn submit(State(s): State<Arc<AppState>>, headers: HeaderMap, form: FormFields) -> Response {
    let zone = s.zone.name().as_str();
    let next = next_page(form.get("next"));
    // No session yet to carry a CSRF token; another site must not log the browser in
    // (as the attacker, to collect what the victim then uploads).
    if let Err(e) = session::same_origin(&headers) {
        return WebError::new(e).into_response();
    }
    let token = form.get("token").map(str::trim).unwrap_or("");
    if token.is_empty() {
        return page_with(
            &s,
            next,
            "Paste an API token to sign in.",
            StatusCode::BAD_REQUEST,
        );
    }
    match s.zone.access().open_session(token).await {
        Ok(opened) => {
            let to = next.map_or_else(|| home_of(&s, &opened.caller), str::to_owned);
            let mut resp = Redirect::to(&to).into_response();
            resp.headers_mut().insert(
                header::SET_COOKIE,
                session::set_cookie(zone, &opened.secret, s.https),
            );
            resp
        }
        Err(e) if matches!(e.code, ErrorCode::Unauthenticated | ErrorCode::TokenExpired) => {
            page_with(&s, next, &e.message, StatusCode::UNAUTHORIZED)
        }
        Err(e) => WebError::new(e).into_response(),
    }
}

pub async fn logout(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    user: Result<WebUser, Response>,
    form: FormFields,
) -> Response {
    let zone = s.zone.name().as_str();
    let mut resp = match user {
        Ok(user) => {
            if let Err(e) = session::check_csrf(&headers, &user.session, form.get("csrf")) {
                return WebError::of(&user, e).into_response();
            }
            // One cookie: the session resolved from it.
            let secret = session::secret(&headers, zone, s.https)
                .ok()
                .flatten()
                .unwrap_or_default();
            if let Err(e) = s.zone.access().close_session(&secret).await {
                return WebError::of(&user, e).into_response();
            }
            Redirect::to("/login").into_response()
        }
        // Two cookies: the login page saying so, forgetting both.
        Err(refused) if session::twice(&headers, &s) => return refused,
        // Already ended: nothing to close, but the browser still forgets its cookie.
        Err(_) => Redirect::to("/login").into_response(),
    };
    resp.headers_mut()
        .insert(header::SET_COOKIE, session::clear_cookie(zone, s.https));
    resp
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_pages_of_this_interface_are_gone_back_to() {
        for ok in ["/", "/data/t/home/a", "/data/t?sort=size"] {
            assert_eq!(super::next_page(Some(ok)), Some(ok));
        }
        for bad in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example",
            "/api/v1/nodes/t",
            "/logout",
            "data/t",
            "/data/t\n",
            "",
        ] {
            assert_eq!(super::next_page(Some(bad)), None, "{bad:?}");
        }
    }
}
