//! Storage resources of the zone.

use crate::auth::Authed;
use crate::convert;
use crate::error::ApiResult;
use crate::extract::{WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{ImportReportWire, ImportWire, NewResourceWire, ResourceWire, SpaceWire};
use weft_types::{LogicalPath, ResourceKind, ResourceName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(list_resources, add_resource))
        .routes(routes!(default_space))
        .routes(routes!(remove_resource))
        .routes(routes!(import_in_place))
}

#[utoipa::path(get, path = "/api/v1/resources", tag = "resources", responses((status = 200, body = Vec<ResourceWire>)))]
pub async fn list_resources(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<ResourceWire>>> {
    Ok(Json(
        s.zone
            .resources()
            .list(&c)
            .await?
            .iter()
            .map(convert::resource)
            .collect(),
    ))
}

#[utoipa::path(get, path = "/api/v1/resources/default/space", tag = "resources",
    responses((status = 200, body = SpaceWire)))]
pub async fn default_space(State(s): State<Arc<AppState>>, Authed(c): Authed) -> ApiResult<Json<SpaceWire>> {
    let (resource, space) = s.zone.resources().default_space(&c).await?;
    Ok(Json(SpaceWire {
        resource: resource.name.to_string(),
        total_bytes: space.as_ref().map(|s| s.total),
        available_bytes: space.map(|s| s.available),
    }))
}

#[utoipa::path(post, path = "/api/v1/resources", tag = "resources", request_body = NewResourceWire,
    responses((status = 201, body = ResourceWire)))]
pub async fn add_resource(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<NewResourceWire>,
) -> ApiResult<(StatusCode, Json<ResourceWire>)> {
    let name = ResourceName::parse(&r.name)?;
    let kind = ResourceKind::parse(&r.kind)?;
    let info = s
        .zone
        .resources()
        .add(&c, &name, kind, &r.settings, &r.tier, r.default)
        .await?;
    Ok((StatusCode::CREATED, Json(convert::resource(&info))))
}

#[utoipa::path(delete, path = "/api/v1/resources/{name}", tag = "resources", params(("name" = String, Path)),
    responses((status = 204)))]
pub async fn remove_resource(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone
        .resources()
        .remove(&c, &ResourceName::parse(&name)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Registers the files below `path` of a file-system resource as data objects under `into`,
/// without copying them (administrators only). Run again, it registers what is new and
/// what changed.
#[utoipa::path(post, path = "/api/v1/resources/{name}/import", tag = "resources", params(("name" = String, Path)),
    request_body = ImportWire, responses((status = 200, body = ImportReportWire)))]
pub async fn import_in_place(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
    WireJson(req): WireJson<ImportWire>,
) -> ApiResult<Json<ImportReportWire>> {
    let report = s
        .zone
        .resources()
        .import(
            &c,
            &ResourceName::parse(&name)?,
            &req.path,
            &LogicalPath::parse(&req.into)?,
        )
        .await?;
    Ok(Json(convert::import_report(report)))
}
