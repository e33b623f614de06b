//! API tokens: created for oneself (or, by an administrator, for another user), listed, deleted.

use crate::auth::Authed;
use crate::error::ApiError;
use crate::error::ApiResult;
use crate::extract::{WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{TokenCreated, TokenRequest, TokenWire};
use weft_types::{ErrorCode, PrincipalName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(create_token, list_tokens))
        .routes(routes!(delete_token))
}

#[utoipa::path(post, path = "/api/v1/tokens", tag = "principals", request_body = TokenRequest,
    responses((status = 201, body = TokenCreated)))]
pub async fn create_token(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<TokenRequest>,
) -> ApiResult<(StatusCode, Json<TokenCreated>)> {
    let user = r.user.as_deref().map(PrincipalName::parse).transpose()?;
    let t = s
        .zone
        .access()
        .create_token(&c, user.as_ref(), &r.label, r.ttl_seconds)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            user: t.user.to_string(),
            token: t.secret,
            expires: t.expires,
        }),
    ))
}

#[utoipa::path(get, path = "/api/v1/tokens", tag = "principals",
    responses((status = 200, body = Vec<TokenWire>, description = "newest first: the caller's, an administrator's everyone's")))]
pub async fn list_tokens(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<TokenWire>>> {
    let tokens = s.zone.access().tokens(&c).await?;
    Ok(Json(
        tokens
            .into_iter()
            .map(|t| TokenWire {
                id: t.token.id.0,
                user: t.user.to_string(),
                label: t.token.label,
                created: t.token.created,
                expires: t.token.expires,
            })
            .collect(),
    ))
}

#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "principals", params(("id" = i64, Path)),
    responses((status = 204, description = "deleted, with the web sessions opened with it")))]
pub async fn delete_token(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
) -> ApiResult<StatusCode> {
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::new(ErrorCode::InvalidArgument, format!("{id:?} is not a token id")))?;
    s.zone
        .access()
        .delete_token(&c, weft_zone::access::TokenId(id))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
