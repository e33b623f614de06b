//! The web interface, served at `/` by the API's own router: server-rendered HTML (maud
//! escapes every value it interpolates), one stylesheet and one small script embedded in
//! the binary. It is one more front door over weft-zone's use cases, acting as the
//! session's `Caller`; no check of its own decides what a user may see or do.
//!
//! Layout:
//! - `mod.rs` (here): the one router listing every page and action, the headers every
//!   answer carries, and what every handler takes and gives back: the session of a page's
//!   request ([`WebUser`]), a failure as a page ([`WebError`]), a posted form
//!   ([`FormFields`]).
//! - `handlers/`: one file per page with its actions (Data, a node's page and its actions,
//!   search, Transfers, Zones, Policies, Admin, logging in, OIDC sign-in): read the
//!   request, call the zone's use cases, hand the result to a template.
//! - `templates/`: the HTML, one file per page, in one layout with shared components.
//! - `svg/`: the drawings (throughput charts, map of zones).
//! - `assets.rs` and `assets/`: the stylesheet, script and icon, served under hashed names.
//! - `session.rs` the cookie and the CSRF rule (shared with `auth.rs`), `paths.rs` logical
//!   paths in URLs, `format.rs` sizes and times.

mod assets;
mod format;
mod handlers;
mod paths;
pub mod session;
mod svg;
mod templates;

use crate::AppState;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use http::request::Parts;
use http::{header, HeaderValue};
use std::sync::Arc;
use weft_types::{Error, ErrorCode};
use weft_zone::access::Session;

/// The pages and their actions. None of these is an API route: they are not in
/// `routes::router()` nor in the OpenAPI document.
pub fn router() -> Router<Arc<AppState>> {
    use handlers::{actions, admin, data, login, node, policies, search, sso, transfers, zones};
    Router::new()
        // Logging in and out (handlers/login.rs, sso.rs).
        .route("/", get(login::home))
        .route("/login", get(login::page).post(login::submit))
        .route("/login/oidc/callback", get(sso::finish))
        .route("/login/oidc/{n}", get(sso::begin))
        .route("/logout", post(login::logout))
        // Data: a collection's listing or an object's page, and the listing's actions.
        .route("/data", get(data::show))
        .route("/data/", get(data::show))
        .route("/data/{*path}", get(data::show))
        .route("/new-collection/{*path}", post(data::new_collection))
        .route("/delete/{*path}", get(data::confirm_delete).post(data::delete))
        // A node's details and search, and the actions of a node's page.
        .route("/details/{*path}", get(node::details))
        .route("/search/{*path}", get(search::show))
        .route("/meta/{*path}", post(actions::meta))
        .route("/acl/{*path}", post(actions::acl))
        .route("/mint-pid/{*path}", post(actions::mint_pid))
        .route("/replicate/{*path}", post(actions::replicate))
        .route("/trim/{*path}", post(actions::trim))
        .route("/move/{*path}", post(actions::rename))
        // Transfers: the history, map and charts, a transfer's page, starting, cancelling.
        .route("/transfers", get(transfers::history))
        .route("/transfers/map", get(transfers::map_fragment))
        .route("/transfers/start", post(transfers::start))
        .route("/transfers/{id}", get(transfers::detail))
        .route("/transfers/{id}/cancel", post(transfers::cancel))
        .route("/zones", get(zones::page))
        .route("/policies", get(policies::page))
        // Admin: users, groups and tokens.
        .route("/admin", get(admin::page))
        .route("/admin/tokens", post(admin::create_token))
        .route("/admin/tokens/{id}/delete", post(admin::delete_token))
        .route("/assets/{file}", get(assets::serve))
        .layer(axum::middleware::from_fn(headers))
}

/// What every answer of the interface carries. The content security policy lets the page
/// run only this zone's own script and style, so markup that escaped escaping still runs
/// nothing; pages are not cached (a page of a logged-out session must not come back with
/// the Back button) nor framed.
async fn headers(req: Request, next: Next) -> Response {
    let mut resp = ADMIN_NAV.scope(std::cell::Cell::new(false), next.run(req)).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

tokio::task_local! {
    /// Whether the request's session is an administrator's, for the top bar's Admin entry:
    /// set where the session is resolved ([`WebUser`]) and read by the layout, so that every
    /// page's bar says the same without each page passing it along.
    static ADMIN_NAV: std::cell::Cell<bool>;
}

/// Whether the top bar of this request's page offers the Admin page.
pub fn admin_nav() -> bool {
    ADMIN_NAV.try_with(|c| c.get()).unwrap_or(false)
}

/// The session of a page's request. Without one (no cookie, a forged, expired or
/// logged-out one) the browser is sent to the login page, and a stale cookie is cleared.
pub struct WebUser {
    pub session: Session,
    pub zone: String,
}

impl WebUser {
    /// The CSRF rule for a form this session posted: what every action checks before it
    /// changes anything.
    pub fn check_csrf(&self, headers: &http::HeaderMap, form: &FormFields) -> Result<(), Error> {
        session::check_csrf(headers, &self.session, form.get("csrf"))
    }

    /// The top bar's zone and user, and the token the page's forms carry.
    pub fn page(&self) -> templates::PageUser<'_> {
        templates::PageUser {
            zone: &self.zone,
            name: self.session.caller.name.as_str(),
            csrf: &self.session.csrf,
        }
    }
}

impl FromRequestParts<Arc<AppState>> for WebUser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Self, Response> {
        match session::resolve(&parts.headers, state).await {
            Ok(s) => {
                weft_zone::access::act_as(s.caller.name.as_str());
                let _ = ADMIN_NAV.try_with(|c| c.set(s.caller.is_admin));
                Ok(WebUser {
                    session: s,
                    zone: state.zone.name().to_string(),
                })
            }
            Err(e) if session::twice(&parts.headers, state) => {
                let next = (parts.method == http::Method::GET)
                    .then(|| parts.uri.path_and_query().map(|p| p.as_str()))
                    .flatten();
                let next = handlers::login::next_page(next);
                Err(handlers::login::refused_twice(
                    state,
                    &parts.headers,
                    parts.uri.path(),
                    next,
                    &e.message,
                ))
            }
            Err(e) if e.code == ErrorCode::Unauthenticated => Err(to_login(parts, state)),
            Err(e) => Err(WebError::new(e).into_response()),
        }
    }
}

/// A redirection to the login page that comes back here after (for a page; an action
/// comes back to the start), forgetting a cookie that named no session.
fn to_login(parts: &Parts, state: &Arc<AppState>) -> Response {
    let zone = state.zone.name().as_str();
    let back = (parts.method == http::Method::GET)
        .then(|| parts.uri.path_and_query().map(|p| p.as_str()))
        .flatten()
        .unwrap_or("/");
    let target = format!(
        "/login?{}",
        form_urlencoded::Serializer::new(String::new())
            .append_pair("next", back)
            .finish()
    );
    let mut resp = Redirect::to(&target).into_response();
    if session::has_cookie(&parts.headers, zone, state.https) {
        resp.headers_mut()
            .insert(header::SET_COOKIE, session::clear_cookie(zone, state.https));
    }
    resp
}

/// A failure shown as a page: its status, stable code and message, and where to go next.
pub struct WebError {
    error: Error,
    /// The zone, user and CSRF token of the session, for the top bar (none on the login
    /// side).
    session: Option<(String, String, String)>,
}

impl WebError {
    pub fn new(error: Error) -> Self {
        WebError { error, session: None }
    }

    /// The error on a page with `user`'s top bar.
    pub fn of(user: &WebUser, error: Error) -> Self {
        WebError {
            error,
            session: Some((
                user.zone.clone(),
                user.session.caller.name.to_string(),
                user.session.csrf.clone(),
            )),
        }
    }
}

impl From<Error> for WebError {
    fn from(e: Error) -> Self {
        WebError::new(e)
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let status = crate::error::status_of(self.error.code);
        if status.is_server_error() {
            tracing::error!(code = %self.error.code, message = %self.error.message, "page failed");
        }
        let user = self
            .session
            .as_ref()
            .map(|(zone, name, csrf)| templates::PageUser { zone, name, csrf });
        (status, templates::error(user.as_ref(), &self.error)).into_response()
    }
}

/// The fields of a form a page posted (`application/x-www-form-urlencoded`), at most 64 KiB.
pub struct FormFields(Vec<(String, String)>);

const FORM_LIMIT: usize = 64 * 1024;

impl FormFields {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// What the user typed, to fill a refused form again: every field but the CSRF token.
    pub fn typed(&self) -> Vec<(String, String)> {
        self.0.iter().filter(|(k, _)| k != "csrf").cloned().collect()
    }
}

impl<S: Send + Sync> FromRequest<S> for FormFields {
    type Rejection = WebError;

    async fn from_request(req: Request, _: &S) -> Result<Self, WebError> {
        let body = axum::body::to_bytes(req.into_body(), FORM_LIMIT)
            .await
            .map_err(|_| Error::invalid("the form is unreadable or larger than 64 KiB"))?;
        Ok(FormFields(form_urlencoded::parse(&body).into_owned().collect()))
    }
}
