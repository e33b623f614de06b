//! Managed transfers: started (or only planned), listed, followed file by file, cancelled.

use crate::auth::Authed;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryPairs, WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{TransferFileWire, TransferPlanWire, TransferRequest, TransferWire};
use weft_types::{ErrorCode, FileState, TransferId};
use weft_zone::transfers::{TransferSpec, Verify};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(start, list))
        .routes(routes!(plan))
        .routes(routes!(show))
        .routes(routes!(files))
        .routes(routes!(cancel))
}

fn spec(r: TransferRequest) -> Result<TransferSpec, ApiError> {
    let verify = match r.verify.as_deref() {
        None | Some("default") => Verify::Default,
        Some("strong") => Verify::Strong,
        Some(v) => {
            return Err(ApiError::new(
                ErrorCode::InvalidArgument,
                format!("verify={v:?}: use default or strong"),
            ))
        }
    };
    Ok(TransferSpec {
        sources: r.sources,
        destination: r.destination,
        recursive: r.recursive,
        sync: r.sync,
        verify,
        streams: r.streams.unwrap_or(TransferSpec::STREAMS_DEFAULT),
        concurrency: r.concurrency.unwrap_or(TransferSpec::CONCURRENCY_DEFAULT),
    })
}

#[utoipa::path(post, path = "/api/v1/transfers", tag = "transfers", request_body = TransferRequest,
    responses((status = 201, body = TransferWire, description = "accepted: checked, planned and queued")))]
pub async fn start(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<TransferRequest>,
) -> ApiResult<(StatusCode, Json<TransferWire>)> {
    let record = s.zone.transfers().start(&c, spec(r)?).await?;
    let info = s.zone.transfers().get(&c, &record.id).await?;
    Ok((StatusCode::CREATED, Json(convert::transfer(&info))))
}

#[utoipa::path(post, path = "/api/v1/transfers/plan", tag = "transfers", request_body = TransferRequest,
    responses((status = 200, body = TransferPlanWire, description = "what would move; nothing is moved")))]
pub async fn plan(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<TransferRequest>,
) -> ApiResult<Json<TransferPlanWire>> {
    let files = s.zone.transfers().plan(&c, &spec(r)?).await?;
    let moving: Vec<_> = files.iter().filter(|f| f.state != FileState::Skipped).collect();
    Ok(Json(TransferPlanWire {
        files_to_move: moving.len() as u64,
        bytes_to_move: moving.iter().map(|f| f.size).sum(),
        files_skipped: (files.len() - moving.len()) as u64,
        files: files.iter().map(convert::transfer_file).collect(),
    }))
}

#[utoipa::path(get, path = "/api/v1/transfers", tag = "transfers", params(("limit" = Option<u32>, Query)),
    responses((status = 200, body = Vec<TransferWire>, description = "newest first")))]
pub async fn list(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    q: QueryPairs,
) -> ApiResult<Json<Vec<TransferWire>>> {
    let limit = q.number::<u32>("limit")?.unwrap_or(50).min(1000);
    let list = s.zone.transfers().list(&c, limit).await?;
    Ok(Json(list.iter().map(convert::transfer).collect()))
}

#[utoipa::path(get, path = "/api/v1/transfers/{id}", tag = "transfers", params(("id" = String, Path)),
    responses((status = 200, body = TransferWire)))]
pub async fn show(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
) -> ApiResult<Json<TransferWire>> {
    Ok(Json(convert::transfer(
        &s.zone.transfers().get(&c, &TransferId::new(id)).await?,
    )))
}

#[utoipa::path(get, path = "/api/v1/transfers/{id}/files", tag = "transfers",
    params(("id" = String, Path), ("state" = Option<String>, Query), ("cursor" = Option<u64>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = Vec<TransferFileWire>, description = "by seq; the cursor is the last seq seen")))]
pub async fn files(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
    q: QueryPairs,
) -> ApiResult<Json<Vec<TransferFileWire>>> {
    let limit = q.number::<u32>("limit")?.unwrap_or(1000).min(10_000);
    let state = q.get("state").map(FileState::parse).transpose()?;
    let files = s
        .zone
        .transfers()
        .files(&c, &TransferId::new(id), state, q.number::<u64>("cursor")?, limit)
        .await?;
    Ok(Json(files.iter().map(convert::transfer_file).collect()))
}

#[utoipa::path(post, path = "/api/v1/transfers/{id}/cancel", tag = "transfers", params(("id" = String, Path)),
    responses((status = 204)))]
pub async fn cancel(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone.transfers().cancel(&c, &TransferId::new(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}
