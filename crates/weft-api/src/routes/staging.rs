//! Staging areas: object stores where transfers may stage data on their way.

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
use weft_types::wire::{NewStagingArea, StagingAreaWire};
use weft_types::{PrincipalName, StagingName};
use weft_zone::transfers::StagingSpec;

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(list_staging, add_staging))
        .routes(routes!(remove_staging))
}

#[utoipa::path(get, path = "/api/v1/staging", tag = "federation",
    responses((status = 200, body = Vec<StagingAreaWire>, description = "where transfers may stage data")))]
pub async fn list_staging(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<StagingAreaWire>>> {
    Ok(Json(
        s.zone
            .transfers()
            .list_staging(&c)
            .await?
            .iter()
            .map(convert::staging)
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/staging", tag = "federation", request_body = NewStagingArea,
    responses((status = 201, body = StagingAreaWire)))]
pub async fn add_staging(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(a): WireJson<NewStagingArea>,
) -> ApiResult<(StatusCode, Json<StagingAreaWire>)> {
    let spec = StagingSpec {
        name: StagingName::parse(&a.name)?,
        url: a.url,
        endpoint: a.endpoint,
        region: a.region,
        access_key: a.access_key,
        secret_key: a.secret_key,
        allow: a
            .allow
            .iter()
            .map(|p| PrincipalName::parse(p))
            .collect::<Result<_, _>>()?,
    };
    let info = s
        .zone
        .transfers()
        .add_staging(&c, &spec, a.check.unwrap_or(true))
        .await?;
    Ok((StatusCode::CREATED, Json(convert::staging(&info))))
}

#[utoipa::path(delete, path = "/api/v1/staging/{name}", tag = "federation", params(("name" = String, Path)),
    responses((status = 204)))]
pub async fn remove_staging(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone
        .transfers()
        .remove_staging(&c, &StagingName::parse(&name)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
