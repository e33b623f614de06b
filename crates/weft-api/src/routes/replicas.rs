//! Replicas: made by replication (a managed transfer to `replica://TARGET`) and trimmed.

use crate::auth::Authed;
use crate::convert;
use crate::error::ApiError;
use crate::error::ApiResult;
use crate::extract::{PathParam, QueryPairs, WireJson};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{ReplicaWire, ReplicateRequest, TransferWire};
use weft_types::{ErrorCode, LogicalPath};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(replicate))
        .routes(routes!(trim))
}

#[utoipa::path(post, path = "/api/v1/replicas", tag = "replication", request_body = ReplicateRequest,
    responses((status = 201, body = TransferWire, description = "accepted: a managed transfer to replica://TARGET")))]
pub async fn replicate(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<ReplicateRequest>,
) -> ApiResult<(StatusCode, Json<TransferWire>)> {
    let path = LogicalPath::parse(&r.path)?;
    let record = s
        .zone
        .transfers()
        .replicate(&c, &path, r.recursive, &r.target)
        .await?;
    let info = s.zone.transfers().get(&c, &record.id).await?;
    Ok((StatusCode::CREATED, Json(convert::transfer(&info))))
}

#[utoipa::path(delete, path = "/api/v1/replicas/{*path}", tag = "replication",
    params(("path" = String, Path, description = "data object, without the leading slash"),
        ("from" = String, Query, description = "ZONE or ZONE:RESOURCE")),
    responses((status = 200, body = ReplicaWire, description = "the replica removed"),
        (status = 409, body = weft_types::wire::ErrorBody, description = "its last good replica")))]
pub async fn trim(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    q: QueryPairs,
) -> ApiResult<Json<ReplicaWire>> {
    let from = q.get("from").ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidArgument,
            "name the replica to remove: ?from=ZONE or ?from=ZONE:RESOURCE",
        )
    })?;
    Ok(Json(convert::replica(
        &s.zone.transfers().trim(&c, &p, from).await?,
    )))
}
