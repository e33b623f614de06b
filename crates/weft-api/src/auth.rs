//! Authentication: every request but health and the OpenAPI document carries
//! `Authorization: Bearer <token>`: a zone-issued API token (`weft_…`), a zone-to-zone token
//! of a federated peer (`weftz_…`), or an OIDC access token (JWT) from a configured issuer.
//! Without that header, the session cookie of the web interface stands for the token it was
//! opened with (its pages' scripts call these routes), with the CSRF rule for changes.

use crate::error::ApiError;
use crate::AppState;
use axum::extract::FromRequestParts;
use http::request::Parts;
use std::sync::Arc;
use weft_types::ErrorCode;
use weft_zone::Caller;

/// The authenticated caller of a request.
pub struct Authed(pub Caller);

impl FromRequestParts<Arc<AppState>> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Self, ApiError> {
        let caller = Self::decide(parts, state).await?;
        // The changes this request makes are audited as this caller's.
        weft_zone::access::act_as(caller.name.as_str());
        if let (Some(peer), Some(slot)) = (
            &caller.via_zone,
            parts.extensions.get::<crate::peer_traffic::PeerOf>(),
        ) {
            slot.set(peer);
        }
        Ok(Authed(caller))
    }
}

impl Authed {
    async fn decide(parts: &Parts, state: &Arc<AppState>) -> Result<Caller, ApiError> {
        let Some(header) = parts.headers.get(http::header::AUTHORIZATION) else {
            if !crate::web::session::has_cookie(&parts.headers, state.zone.name().as_str(), state.https) {
                return Err(ApiError::new(
                    ErrorCode::Unauthenticated,
                    "no Authorization header; send `Authorization: Bearer <token>`",
                ));
            }
            let session = crate::web::session::resolve(&parts.headers, state).await?;
            if crate::web::session::is_unsafe(&parts.method) {
                crate::web::session::check_csrf(&parts.headers, &session, None)?;
            }
            return Ok(session.caller);
        };
        let token = bearer_token(header.as_bytes())?;
        let zone = &state.zone;
        if token.starts_with("weft_") {
            return Ok(zone.access().caller_for_token(token).await?);
        }
        if token.starts_with(weft_zone::federation::ZONE_TOKEN_PREFIX) {
            return Ok(zone.federation().caller_for_zone_token(token).await?);
        }
        if state.oidc.is_empty() {
            return Err(ApiError::new(
                ErrorCode::Unauthenticated,
                "the token is not known to this zone (no OIDC issuer is configured)",
            ));
        }
        // The token's issuer and subject name the user, never its user name (weft-zone).
        let login = state.oidc.verify(token).await?;
        Ok(zone.access().caller_for_oidc(&login).await?)
    }
}

/// The token of an `Authorization: Bearer <token>` header value. Errors:
/// `unauthenticated` (not ASCII, not `Bearer`, no token).
pub(crate) fn bearer_token(value: &[u8]) -> Result<&str, ApiError> {
    // What `HeaderValue::to_str` accepts: visible ASCII, space and tab.
    let value = std::str::from_utf8(value)
        .ok()
        .filter(|v| v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::Unauthenticated,
                "the Authorization header is not ASCII",
            )
        })?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::Unauthenticated,
                "the Authorization header is not `Bearer <token>`",
            )
        })
}
