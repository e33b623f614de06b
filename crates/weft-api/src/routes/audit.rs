//! The audit log of the zone's changes.

use crate::auth::Authed;
use crate::error::ApiError;
use crate::error::ApiResult;
use crate::extract::QueryPairs;
use crate::AppState;
use axum::extract::State;
use axum::Json;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{AuditWire, Page};
use weft_types::{ErrorCode, LogicalPath};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default().routes(routes!(audit))
}

#[utoipa::path(get, path = "/api/v1/audit", tag = "zone",
    params(("path" = Option<String>, Query, description = "entries about this path or below it"),
        ("user" = Option<String>, Query, description = "entries of this actor"),
        ("since" = Option<i64>, Query, description = "entries at or after this time (ms since the epoch)"),
        ("cursor" = Option<String>, Query), ("limit" = Option<u32>, Query, description = "at most 1000")),
    responses((status = 200, description = "newest first (administrators)", body = Page<AuditWire>)))]
pub async fn audit(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    q: QueryPairs,
) -> ApiResult<Json<Page<AuditWire>>> {
    let before = q
        .get("cursor")
        .map(|c| {
            c.parse::<i64>()
                .map_err(|_| ApiError::new(ErrorCode::InvalidArgument, "cursor is not one this zone issued"))
        })
        .transpose()?;
    let query = weft_zone::access::AuditQuery {
        path: q.get("path").map(LogicalPath::parse).transpose()?,
        actor: q.get("user").map(str::to_owned),
        since: q.number::<i64>("since")?,
        before: before.map(weft_zone::access::AuditEntryId),
        limit: q.number::<u32>("limit")?.unwrap_or(100),
    };
    let (entries, next) = s.zone.access().audit_log(&c, query).await?;
    Ok(Json(Page {
        items: entries
            .into_iter()
            .map(|e| AuditWire {
                id: e.id.0,
                at: e.at,
                actor: e.actor,
                origin: e.origin,
                request_id: e.request_id,
                action: e.action,
                path: e.path.map(|p| p.to_string()),
                detail: e.detail,
                items: e.items,
            })
            .collect(),
        next_cursor: next.map(|n| n.to_string()),
    }))
}
