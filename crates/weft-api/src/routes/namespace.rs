//! Namespace routes: stat, list, mkdir, rm, mv, cp.

use crate::auth::Authed;
use crate::convert;
use crate::error::ApiResult;
use crate::extract::{PathParam, QueryPairs, WireJson};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{CopyRequest, MoveRequest, NodeStat, Page};
use weft_types::{LogicalPath, ResourceName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(stat))
        .routes(routes!(list))
        .routes(routes!(mkdir))
        .routes(routes!(remove))
        .routes(routes!(rename))
        .routes(routes!(copy))
}

#[utoipa::path(get, path = "/api/v1/stat/{*path}", tag = "namespace",
    params(("path" = String, Path, description = "logical path without the leading slash")),
    responses((status = 200, body = NodeStat), (status = 404, body = weft_types::wire::ErrorBody)))]
pub async fn stat(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
) -> ApiResult<Json<NodeStat>> {
    Ok(Json(convert::node_info(&s.zone.namespace().stat(&c, &p).await?)))
}

#[utoipa::path(get, path = "/api/v1/list/{*path}", tag = "namespace",
    params(("path" = String, Path, description = "collection"),
        ("cursor" = Option<String>, Query, description = "from the previous page"),
        ("limit" = Option<u32>, Query, description = "at most 1000, default 1000")),
    responses((status = 200, body = Page<NodeStat>)))]
pub async fn list(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    q: QueryPairs,
) -> ApiResult<Json<Page<NodeStat>>> {
    let limit = q.number::<u32>("limit")?.unwrap_or(1000);
    let l = s.zone.namespace().list(&c, &p, q.get("cursor"), limit).await?;
    Ok(Json(Page {
        items: l.items.iter().map(convert::node).collect(),
        next_cursor: l.next_cursor,
    }))
}

#[utoipa::path(post, path = "/api/v1/mkdir/{*path}", tag = "namespace",
    params(("path" = String, Path), ("parents" = Option<bool>, Query, description = "create missing parents; no error if it exists")),
    responses((status = 201, body = NodeStat), (status = 409, body = weft_types::wire::ErrorBody)))]
pub async fn mkdir(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    q: QueryPairs,
) -> ApiResult<(StatusCode, Json<NodeStat>)> {
    let n = s.zone.namespace().mkdir(&c, &p, q.flag("parents")?).await?;
    Ok((StatusCode::CREATED, Json(convert::node(&n))))
}

#[utoipa::path(delete, path = "/api/v1/nodes/{*path}", tag = "namespace",
    params(("path" = String, Path), ("recursive" = Option<bool>, Query)),
    responses((status = 204), (status = 409, body = weft_types::wire::ErrorBody)))]
pub async fn remove(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    q: QueryPairs,
) -> ApiResult<StatusCode> {
    s.zone.namespace().remove(&c, &p, q.flag("recursive")?).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/move", tag = "namespace", request_body = MoveRequest,
    responses((status = 200, body = NodeStat)))]
pub async fn rename(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<MoveRequest>,
) -> ApiResult<Json<NodeStat>> {
    let n = s
        .zone
        .namespace()
        .rename(
            &c,
            &LogicalPath::parse(&r.from)?,
            &LogicalPath::parse(&r.to)?,
            r.replace,
        )
        .await?;
    Ok(Json(convert::node(&n)))
}

#[utoipa::path(post, path = "/api/v1/copy", tag = "namespace", request_body = CopyRequest,
    responses((status = 201, body = NodeStat)))]
pub async fn copy(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<CopyRequest>,
) -> ApiResult<(StatusCode, Json<NodeStat>)> {
    let resource = r.resource.as_deref().map(ResourceName::parse).transpose()?;
    let from = LogicalPath::parse(&r.from)?;
    let to = LogicalPath::parse(&r.to)?;
    let out = s
        .zone
        .data()
        .copy(&c, &from, &to, resource.as_ref(), r.overwrite)
        .await?;
    Ok((StatusCode::CREATED, Json(convert::node(&out.node))))
}
