//! Access control lists of collections and data objects.

use crate::auth::Authed;
use crate::convert;
use crate::error::ApiResult;
use crate::extract::{PathParam, WireJson};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{AclRequest, AclWire};
use weft_types::{Permission, PrincipalName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default().routes(routes!(list_acl, set_acl))
}

#[utoipa::path(get, path = "/api/v1/acl/{*path}", tag = "access", params(("path" = String, Path)),
    responses((status = 200, body = Vec<AclWire>)))]
pub async fn list_acl(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
) -> ApiResult<Json<Vec<AclWire>>> {
    Ok(Json(
        s.zone
            .access()
            .acl(&c, &p)
            .await?
            .iter()
            .map(convert::acl)
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/acl/{*path}", tag = "access", params(("path" = String, Path)),
    request_body = AclRequest, responses((status = 204), (status = 403, body = weft_types::wire::ErrorBody)))]
pub async fn set_acl(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    WireJson(r): WireJson<AclRequest>,
) -> ApiResult<StatusCode> {
    let principal = PrincipalName::parse(&r.principal)?;
    s.zone
        .access()
        .set_acl(&c, &p, &principal, Permission::parse(&r.permission)?, r.recursive)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
