//! Signing in with the zone's OIDC issuer: the authorization code flow with PKCE (RFC 7636)
//! for a public client (`web_client_id` of an `[[oidc]]` issuer).
//!
//! `/login/oidc/{n}` sends the browser to issuer n's authorization endpoint with a fresh
//! `state` and code challenge; what the callback needs to finish (issuer, state, code
//! verifier, redirect URI, the page to go back to) rides in a short-lived HttpOnly cookie,
//! so that any server of the zone can finish a sign-in another one began. The callback
//! takes the code only with the `state` of that cookie (a sign-in this browser began,
//! never one an attacker started and hands over), redeems it at the token endpoint with
//! the verifier, and checks the access token exactly as a bearer token of the API is
//! checked (signature, issuer, audience, expiry): the session acts for the same weft user.

use super::login;
use crate::extract::QueryPairs;
use crate::web::{session, WebError};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use http::{header, HeaderMap, HeaderValue};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::sync::Arc;
use weft_types::{Error, ErrorCode};

/// The pending sign-in: this long for the user to sign in at the issuer.
const PENDING_SECONDS: u32 = 600;
/// Where the issuer sends the browser back to.
const CALLBACK: &str = "/login/oidc/callback";

/// What the callback needs to finish a sign-in, kept in the browser between the two.
#[derive(Serialize, Deserialize)]
struct Pending {
    /// Index of the issuer in the zone's configuration.
    issuer: usize,
    state: String,
    verifier: String,
    redirect_uri: String,
    next: Option<String>,
}

/// The endpoints of the issuer's discovery document the flow uses.
struct Endpoints {
    authorization_endpoint: String,
    token_endpoint: String,
}

fn random() -> String {
    let mut raw = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut raw);
    b64(&raw)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 code challenge of `verifier`.
fn challenge(verifier: &str) -> String {
    b64(&sha2::Sha256::digest(verifier.as_bytes()))
}

/// The pending sign-in's cookie. `__Host-` when over HTTPS, so that no sibling host can
/// plant one; SameSite=Lax, as the issuer's redirect back is a top-level navigation.
fn cookie_name(zone: &str, https: bool) -> String {
    session::host_only(&format!("weft_sso_{zone}"), https)
}

fn pending_cookie(zone: &str, https: bool, value: &str, max_age: u32) -> HeaderValue {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}",
        cookie_name(zone, https)
    ))
    .expect("the value is base64url")
}

fn read_pending(headers: &HeaderMap, zone: &str, https: bool) -> Option<Pending> {
    // Sent twice, one was planted: no pending sign-in to trust.
    let value = session::cookie_named(headers, &cookie_name(zone, https)).only()?;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(value)
        .ok()?;
    serde_json::from_slice(&json).ok()
}

/// This zone's callback URL as the browser reaches the zone. The issuer sends the browser
/// only to a registered redirect URI, so a forged `Host` fails there.
fn redirect_uri(headers: &HeaderMap, https: bool) -> Result<String, Error> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        })
        .ok_or_else(|| Error::invalid("the request has no usable Host header"))?;
    let scheme = if https { "https" } else { "http" };
    Ok(format!("{scheme}://{host}{CALLBACK}"))
}

/// `/login/oidc/{n}`: off to issuer n's sign-in page.
pub async fn begin(
    State(s): State<Arc<AppState>>,
    Path(n): Path<usize>,
    headers: HeaderMap,
    q: QueryPairs,
) -> Response {
    let zone = s.zone.name().as_str();
    let Some(issuer) = s.oidc.issuers().get(n) else {
        return WebError::new(Error::not_found(format_args!("sign-in issuer {n}"))).into_response();
    };
    let Some(client_id) = issuer.web_client_id.as_deref() else {
        return WebError::new(Error::not_found(format_args!(
            "sign-in with {} (it has no web_client_id)",
            issuer.label()
        )))
        .into_response();
    };
    let started = async {
        let endpoints = endpoints(&s, n).await?;
        let pending = Pending {
            issuer: n,
            state: random(),
            verifier: random(),
            redirect_uri: redirect_uri(&headers, s.https)?,
            next: login::next_page(q.get("next")).map(str::to_owned),
        };
        let mut url = reqwest::Url::parse(&endpoints.authorization_endpoint).map_err(|e| {
            unavailable(
                issuer.label(),
                format!("its authorization endpoint is no URL: {e}"),
            )
        })?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", &pending.redirect_uri)
            .append_pair("scope", "openid")
            .append_pair("state", &pending.state)
            .append_pair("code_challenge", &challenge(&pending.verifier))
            .append_pair("code_challenge_method", "S256");
        Ok::<_, Error>((url, pending))
    };
    match started.await {
        Ok((url, pending)) => {
            let value = b64(&serde_json::to_vec(&pending).expect("serializes"));
            let mut resp = Redirect::to(url.as_str()).into_response();
            resp.headers_mut().insert(
                header::SET_COOKIE,
                pending_cookie(zone, s.https, &value, PENDING_SECONDS),
            );
            resp
        }
        Err(e) => login::page_with(&s, None, &e.message, crate::error::status_of(e.code)),
    }
}

/// `/login/oidc/callback`: the issuer sends the browser back with a code (or an error).
pub async fn finish(State(s): State<Arc<AppState>>, headers: HeaderMap, q: QueryPairs) -> Response {
    let zone = s.zone.name().as_str();
    let pending = read_pending(&headers, zone, s.https);
    let next = pending.as_ref().and_then(|p| p.next.clone());
    let mut resp = match signed_in(&s, pending, &q).await {
        Ok(opened) => {
            let to = next.unwrap_or_else(|| login::home_of(&s, &opened.caller));
            let mut resp = Redirect::to(&to).into_response();
            resp.headers_mut().insert(
                header::SET_COOKIE,
                session::set_cookie(zone, &opened.secret, s.https),
            );
            resp
        }
        Err(e) => login::page_with(&s, next.as_deref(), &e.message, crate::error::status_of(e.code)),
    };
    // Used or refused, a pending sign-in is over.
    resp.headers_mut()
        .append(header::SET_COOKIE, pending_cookie(zone, s.https, "", 0));
    resp
}

async fn signed_in(
    s: &AppState,
    pending: Option<Pending>,
    q: &QueryPairs,
) -> Result<weft_zone::access::NewSession, Error> {
    let pending = pending.ok_or_else(|| {
        rejected("this sign-in was not started in this browser, or it took over 10 minutes; sign in again")
    })?;
    let state_ok = q
        .get("state")
        .is_some_and(|st| session::constant_time_eq(st.as_bytes(), pending.state.as_bytes()));
    if !state_ok {
        return Err(rejected(
            "the sign-in answer does not belong to the sign-in this browser began; sign in again",
        ));
    }
    let issuer = s
        .oidc
        .issuers()
        .get(pending.issuer)
        .ok_or_else(|| rejected("the sign-in's issuer is no longer configured; sign in again"))?;
    let label = issuer.label();
    if let Some(error) = q.get("error") {
        let why = q.get("error_description").unwrap_or(error);
        return Err(Error::new(
            ErrorCode::Unauthenticated,
            format!("{label} did not sign you in: {why}"),
        ));
    }
    let code = q
        .get("code")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Error::invalid(format!("{label} sent no authorization code back")))?;
    let client_id = issuer.web_client_id.as_deref().unwrap_or_default();
    let endpoints = endpoints(s, pending.issuer).await?;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", &pending.redirect_uri),
        ("client_id", client_id),
        ("code_verifier", &pending.verifier),
    ];
    let resp = s
        .oidc
        .http
        .post(&endpoints.token_endpoint)
        .form(&form)
        .send()
        .await
        .map_err(|e| unavailable(label, e.to_string()))?;
    let status = resp.status();
    let body: serde_json::Value = resp
        .json()
        .await
        .map_err(|e| unavailable(label, format!("its token answer is not JSON: {e}")))?;
    if !status.is_success() {
        let why = body["error_description"]
            .as_str()
            .or(body["error"].as_str())
            .unwrap_or("no reason given");
        return Err(Error::new(
            ErrorCode::Unauthenticated,
            format!("{label} refused the sign-in code: {why}; sign in again"),
        ));
    }
    let token = body["access_token"]
        .as_str()
        .ok_or_else(|| unavailable(label, "its token answer has no access_token".into()))?;
    let login = s.oidc.verify(token).await?;
    s.zone.access().open_oidc_session(&login).await
}

/// Issuer n's endpoints, from its discovery document (as the verifier keeps it, so that
/// loading the sign-in page costs the issuer no request of its own).
async fn endpoints(s: &AppState, n: usize) -> Result<Endpoints, Error> {
    let label = s.oidc.issuers()[n].label();
    let d = s.oidc.discovery(n).await.map_err(|e| unavailable(label, e))?;
    match (d.authorization_endpoint, d.token_endpoint) {
        (Some(authorization_endpoint), Some(token_endpoint)) => Ok(Endpoints {
            authorization_endpoint,
            token_endpoint,
        }),
        _ => Err(unavailable(
            label,
            "its discovery document names no authorization_endpoint or token_endpoint".into(),
        )),
    }
}

fn unavailable(label: &str, why: String) -> Error {
    Error::new(
        ErrorCode::StorageUnavailable,
        format!("cannot reach the sign-in service {label}: {why}; try again, or sign in with a token"),
    )
}

fn rejected(message: &str) -> Error {
    Error::new(ErrorCode::CsrfRejected, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn a_pending_sign_in_is_read_back_from_its_cookie_only() {
        let p = Pending {
            issuer: 1,
            state: "st".into(),
            verifier: "v".into(),
            redirect_uri: "http://h/login/oidc/callback".into(),
            next: Some("/data/t".into()),
        };
        let value = b64(&serde_json::to_vec(&p).unwrap());
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("x=1; weft_sso_t={value}")).unwrap(),
        );
        let back = read_pending(&h, "t", false).unwrap();
        assert_eq!((back.issuer, back.state.as_str()), (1, "st"));
        assert!(read_pending(&h, "u", false).is_none());
        // Over HTTPS only the __Host- cookie counts.
        assert!(read_pending(&h, "t", true).is_none());
        h.insert(header::COOKIE, HeaderValue::from_static("weft_sso_t=!!!"));
        assert!(read_pending(&h, "t", false).is_none());
        let set = pending_cookie("t", true, "v", 600);
        assert!(set
            .to_str()
            .unwrap()
            .starts_with("__Host-weft_sso_t=v; Path=/; HttpOnly"));
    }

    #[test]
    fn the_callback_url_is_built_from_a_plain_host_only() {
        let with = |host: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
            redirect_uri(&h, false).ok()
        };
        assert_eq!(
            with("127.0.0.1:8640").as_deref(),
            Some("http://127.0.0.1:8640/login/oidc/callback")
        );
        assert_eq!(
            with("[::1]:80").as_deref(),
            Some("http://[::1]:80/login/oidc/callback")
        );
        for bad in ["evil.example/x", "a b", "h@evil", ""] {
            assert_eq!(with(bad), None, "{bad:?}");
        }
    }
}
