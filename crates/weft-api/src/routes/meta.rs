//! Metadata and search routes.

use crate::auth::Authed;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::extract::{PathParam, QueryPairs, WireJson};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{AvuWire, ExtractedWire, MetaBatch, MetaRequest, NodeStat, Page, META_BATCH_MAX};
use weft_types::{ErrorCode, LogicalPath, MetaCondition, NodeKind};
use weft_zone::namespace::{Avu, FindQuery, MetaEdit};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(list, edit, edit_many))
        .routes(routes!(find))
        .routes(routes!(export_datacite))
        .routes(routes!(extract))
}

/// Reads the object's header (MRC, TIFF, FITS, NetCDF classic, .mdoc, or what a plugin
/// of the zone reads) into its metadata, replacing the values it had from the same
/// source. Needs write permission on the object.
#[utoipa::path(post, path = "/api/v1/extract/{*path}", tag = "metadata", params(("path" = String, Path)),
    responses((status = 200, body = ExtractedWire),
        (status = 415, body = weft_types::wire::ErrorBody, description = "no extractor reads the file (unsupported_format)"),
        (status = 422, body = weft_types::wire::ErrorBody, description = "the header is corrupt or truncated, or the plugin failed (extract_failed); nothing changed")))]
pub async fn extract(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
) -> ApiResult<Json<ExtractedWire>> {
    let x = s.zone.extract().run(&c, &p).await?;
    Ok(Json(ExtractedWire {
        path: x.path.to_string(),
        source: x.source,
        avus: x.avus.iter().map(convert::avu).collect(),
    }))
}

#[utoipa::path(get, path = "/api/v1/meta/{*path}", tag = "metadata", params(("path" = String, Path)),
    responses((status = 200, body = Vec<AvuWire>)))]
pub async fn list(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
) -> ApiResult<Json<Vec<AvuWire>>> {
    Ok(Json(
        s.zone
            .namespace()
            .list_meta(&c, &p)
            .await?
            .iter()
            .map(convert::avu)
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/meta/{*path}", tag = "metadata", params(("path" = String, Path)),
    request_body = MetaRequest, responses((status = 204), (status = 409, body = weft_types::wire::ErrorBody)))]
pub async fn edit(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    WireJson(r): WireJson<MetaRequest>,
) -> ApiResult<StatusCode> {
    s.zone.namespace().edit_meta(&c, &p, to_edit(&r)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(patch, path = "/api/v1/meta/{*path}", tag = "metadata", params(("path" = String, Path)),
    request_body = MetaBatch,
    responses((status = 204, description = "every edit applied"),
        (status = 409, body = weft_types::wire::ErrorBody, description = "one edit failed (its number is in the message); nothing changed")))]
pub async fn edit_many(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    WireJson(b): WireJson<MetaBatch>,
) -> ApiResult<StatusCode> {
    if b.ops.is_empty() || b.ops.len() > META_BATCH_MAX {
        return Err(ApiError::new(
            ErrorCode::InvalidArgument,
            format!("a batch holds 1 to {META_BATCH_MAX} edits, not {}", b.ops.len()),
        ));
    }
    let edits = b
        .ops
        .iter()
        .enumerate()
        .map(|(i, r)| {
            to_edit(r).map_err(|e| {
                ApiError::new(
                    ErrorCode::InvalidArgument,
                    format!("edit {}: {}", i + 1, e.0.message),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    s.zone.namespace().edit_meta_many(&c, &p, edits).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn to_edit(r: &MetaRequest) -> Result<MetaEdit, ApiError> {
    let need_value = || {
        r.value
            .clone()
            .ok_or_else(|| ApiError::new(ErrorCode::InvalidArgument, format!("`{}` needs a value", r.op)))
    };
    Ok(match r.op.as_str() {
        "add" => MetaEdit::Add(Avu {
            attr: r.attr.clone(),
            value: need_value()?,
            unit: r.unit.clone(),
        }),
        "set" => MetaEdit::Set(Avu {
            attr: r.attr.clone(),
            value: need_value()?,
            unit: r.unit.clone(),
        }),
        "rm" => MetaEdit::Remove {
            attr: r.attr.clone(),
            value: r.value.clone(),
        },
        other => {
            return Err(ApiError::new(
                ErrorCode::InvalidArgument,
                format!("unknown metadata op {other:?}; use add, set or rm"),
            ))
        }
    })
}

#[utoipa::path(get, path = "/api/v1/find", tag = "metadata",
    params(("path" = String, Query, description = "search below this collection"),
        ("name" = Option<String>, Query, description = "glob over the last component: * and ?"),
        ("meta" = Option<Vec<String>>, Query, description = "repeatable: attr=value, attr!=value, attr>number, <, <=, >="),
        ("kind" = Option<String>, Query, description = "collection or object"),
        ("cursor" = Option<String>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = Page<NodeStat>)))]
pub async fn find(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    q: QueryPairs,
) -> ApiResult<Json<Page<NodeStat>>> {
    let root = q
        .get("path")
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidArgument, "find needs `path`"))?;
    let meta = q
        .all("meta")
        .map(MetaCondition::parse)
        .collect::<Result<Vec<_>, _>>()?;
    let after_id = q
        .get("cursor")
        .map(|c| {
            c.parse::<i64>()
                .map_err(|_| ApiError::new(ErrorCode::InvalidArgument, "cursor is not one this zone issued"))
        })
        .transpose()?;
    let query = FindQuery {
        root: LogicalPath::parse(root)?,
        name_glob: q.get("name").map(str::to_owned),
        meta,
        kind: q.get("kind").map(NodeKind::parse).transpose()?,
        after_id: after_id.map(weft_zone::namespace::NodeId),
        limit: q.number::<u32>("limit")?.unwrap_or(1000),
    };
    let (items, next_cursor) = s.zone.namespace().find(&c, query).await?;
    Ok(Json(Page {
        items: items.iter().map(convert::node).collect(),
        next_cursor,
    }))
}

#[utoipa::path(get, path = "/api/v1/export/datacite/{*path}", tag = "metadata",
    params(("path" = String, Path, description = "collection or data object, without the leading slash")),
    responses((status = 200, description = "DataCite (kernel 4.3) JSON from the `datacite.*` metadata and the PID", body = Object),
        (status = 400, body = weft_types::wire::ErrorBody, description = "mandatory fields or the PID missing")))]
pub async fn export_datacite(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
) -> ApiResult<Json<serde_json::Value>> {
    Ok(Json(s.zone.namespace().export_datacite(&c, &p).await?))
}
