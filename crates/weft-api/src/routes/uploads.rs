//! Upload sessions: an object sent in pieces, in any order and over several connections, then completed.

use crate::auth::Authed;
use crate::convert;
use crate::error::ApiResult;
use crate::extract::{body_stream, WireJson, WirePath};
use crate::AppState;
use axum::body::Body;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{
    CompleteUpload, ErrorBody, NodeStat, PieceReceipt, Upload, UploadRequest, UploadStatus,
};
use weft_types::{Checksum, LogicalPath, ResourceName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(begin_upload))
        .routes(routes!(upload_status, abort_upload))
        .routes(routes!(upload_piece))
        .routes(routes!(complete_upload))
}

#[utoipa::path(post, path = "/api/v1/uploads", tag = "data", request_body = UploadRequest,
    responses((status = 201, body = Upload)))]
pub async fn begin_upload(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<UploadRequest>,
) -> ApiResult<(StatusCode, Json<Upload>)> {
    let path = LogicalPath::parse(&r.path)?;
    let resource = r.resource.as_deref().map(ResourceName::parse).transpose()?;
    let u = s
        .zone
        .uploads()
        .begin(&c, &path, r.size, r.piece_size, resource.as_ref(), r.overwrite)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(Upload {
            id: u.id,
            path: u.path.to_string(),
            size: u.size,
            piece_size: u.piece_size,
            pieces: u.pieces,
        }),
    ))
}

#[utoipa::path(get, path = "/api/v1/uploads/{id}", tag = "data", params(("id" = String, Path)),
    responses((status = 200, body = UploadStatus), (status = 404, body = ErrorBody)))]
pub async fn upload_status(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
) -> ApiResult<Json<UploadStatus>> {
    let (u, received) = s.zone.uploads().status(&c, &id).await?;
    Ok(Json(UploadStatus {
        id: u.id,
        path: u.path.to_string(),
        size: u.size,
        piece_size: u.piece_size,
        pieces: u.pieces,
        received,
    }))
}

#[utoipa::path(put, path = "/api/v1/uploads/{id}/{index}", tag = "data",
    params(("id" = String, Path), ("index" = u64, Path)),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 200, body = PieceReceipt)))]
pub async fn upload_piece(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath((id, index)): WirePath<(String, u64)>,
    body: Body,
) -> ApiResult<Json<PieceReceipt>> {
    let cv = s
        .zone
        .uploads()
        .put_piece(&c, &id, index, body_stream(body))
        .await?;
    Ok(Json(PieceReceipt { index, cv }))
}

#[utoipa::path(post, path = "/api/v1/uploads/{id}/complete", tag = "data", params(("id" = String, Path)),
    request_body = CompleteUpload, responses((status = 201, body = NodeStat)))]
pub async fn complete_upload(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
    WireJson(r): WireJson<CompleteUpload>,
) -> ApiResult<(StatusCode, Json<NodeStat>)> {
    let expected = r.checksum.as_deref().map(Checksum::parse).transpose()?;
    let out = s.zone.uploads().complete(&c, &id, expected.as_ref()).await?;
    Ok((StatusCode::CREATED, Json(convert::node(&out.node))))
}

#[utoipa::path(delete, path = "/api/v1/uploads/{id}", tag = "data", params(("id" = String, Path)),
    responses((status = 204)))]
pub async fn abort_upload(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone.uploads().abort(&c, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
