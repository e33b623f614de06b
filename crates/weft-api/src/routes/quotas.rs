//! Quotas of users and groups, on one resource or on all.

use crate::auth::Authed;
use crate::error::ApiResult;
use crate::extract::{QueryPairs, WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{QuotaRequest, QuotaWire};
use weft_types::{PrincipalName, ResourceName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(list_quotas, set_quota))
        .routes(routes!(remove_quota))
}

#[utoipa::path(get, path = "/api/v1/quotas", tag = "quotas", responses((status = 200, body = Vec<QuotaWire>)))]
pub async fn list_quotas(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<QuotaWire>>> {
    Ok(Json(
        s.zone
            .access()
            .quotas(&c)
            .await?
            .into_iter()
            .map(|q| QuotaWire {
                principal: q.quota.principal.name.to_string(),
                kind: q.quota.principal.kind.as_str().to_owned(),
                resource: q.quota.resource.map(|r| r.to_string()),
                max_bytes: q.quota.max_bytes,
                max_objects: q.quota.max_objects,
                used_bytes: q.used.bytes,
                used_objects: q.used.objects,
                reserved_bytes: q.used.reserved,
            })
            .collect(),
    ))
}

#[utoipa::path(put, path = "/api/v1/quotas", tag = "quotas", request_body = QuotaRequest, responses((status = 204)))]
pub async fn set_quota(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(q): WireJson<QuotaRequest>,
) -> ApiResult<StatusCode> {
    let principal = PrincipalName::parse(&q.principal)?;
    let resource = q.resource.as_deref().map(ResourceName::parse).transpose()?;
    s.zone
        .access()
        .set_quota(&c, &principal, resource.as_ref(), q.max_bytes, q.max_objects)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/v1/quotas/{principal}", tag = "quotas",
    params(("principal" = String, Path), ("resource" = Option<String>, Query, description = "the quota on this resource; absent: the one on all")),
    responses((status = 204)))]
pub async fn remove_quota(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(principal): WirePath<String>,
    q: QueryPairs,
) -> ApiResult<StatusCode> {
    let principal = PrincipalName::parse(&principal)?;
    let resource = q.get("resource").map(ResourceName::parse).transpose()?;
    s.zone
        .access()
        .remove_quota(&c, &principal, resource.as_ref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
