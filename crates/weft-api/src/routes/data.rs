//! Data routes: whole-object put and ranged get, uploads in pieces, checksums.

use crate::auth::Authed;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::extract::{body_stream, content_length, PathParam, QueryPairs, WireJson};
use crate::frames::{Frames, FramesError};
use crate::AppState;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::StreamExt;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use std::ops::Range;
use std::sync::Arc;
use weft_types::wire::{
    BundleHeader, BundleOutcome, ChecksumReport, CompleteUpload, ErrorBody, NodeStat, PieceReceipt,
    ReplicaCheck, Upload, UploadRequest, BUNDLE_MAX_BYTES, BUNDLE_MAX_FILES, CHECKSUM_HEADER,
};
use weft_types::{Checksum, ErrorCode, LogicalPath, ResourceName};

fn expected_checksum(headers: &HeaderMap) -> ApiResult<Option<Checksum>> {
    headers
        .get(CHECKSUM_HEADER)
        .map(|v| {
            let s = v
                .to_str()
                .map_err(|_| ApiError::new(ErrorCode::InvalidArgument, "checksum header is not ASCII"))?;
            Ok(Checksum::parse(s)?)
        })
        .transpose()
}

fn resource_param(q: &QueryPairs) -> ApiResult<Option<ResourceName>> {
    Ok(q.get("resource").map(ResourceName::parse).transpose()?)
}

#[utoipa::path(put, path = "/api/v1/data/{path}", tag = "data",
    params(("path" = String, Path), ("resource" = Option<String>, Query), ("overwrite" = Option<bool>, Query),
        ("x-weft-checksum" = Option<String>, Header, description = "blake3:<hex> of the body; checked before the object becomes visible")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 201, body = NodeStat), (status = 400, body = weft_types::wire::ErrorBody), (status = 411)))]
pub async fn put(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    q: QueryPairs,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<(StatusCode, Json<NodeStat>)> {
    let size = content_length(&headers)?;
    let expected = expected_checksum(&headers)?;
    let resource = resource_param(&q)?;
    let out = s
        .zone
        .put_stream(
            &c,
            &p,
            size,
            expected.as_ref(),
            resource.as_ref(),
            q.flag("overwrite")?,
            body_stream(body),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(convert::node(&out.node))))
}

/// Bounds the header line of a bundle (paths and checksums of up to BUNDLE_MAX_FILES).
const BUNDLE_HEADER_MAX: usize = 1 << 20;

#[utoipa::path(post, path = "/api/v1/bundles", tag = "data",
    request_body(content = Vec<u8>, content_type = "application/octet-stream",
        description = "a BundleHeader as one line of JSON, a newline, then the files' bytes back to back"),
    responses((status = 200, body = Vec<BundleOutcome>, description = "one outcome per file, in order"),
        (status = 400, body = weft_types::wire::ErrorBody)))]
pub async fn bundle(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    body: Body,
) -> ApiResult<Json<Vec<BundleOutcome>>> {
    let limit = BUNDLE_HEADER_MAX + BUNDLE_MAX_BYTES as usize;
    let mut all = Frames::read(body, limit).await.map_err(|e| {
        let why = match e {
            FramesError::TooLarge => "over".to_owned(),
            FramesError::Body(e) => format!("unreadable ({e}) or over"),
        };
        ApiError::new(
            ErrorCode::InvalidArgument,
            format!("bundle body {why} {limit} bytes"),
        )
    })?;
    let split = all.find(b'\n', BUNDLE_HEADER_MAX).ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidArgument,
            format!(
                "bundle: no header line within its first {BUNDLE_HEADER_MAX} bytes \
                 (a bundle holds at most {BUNDLE_MAX_FILES} files; send more as several bundles)"
            ),
        )
    })?;
    let line = all.take(split + 1);
    let header: BundleHeader = serde_json::from_slice(&line[..split])
        .map_err(|e| ApiError::new(ErrorCode::InvalidArgument, format!("bundle header: {e}")))?;
    let resource = header.resource.as_deref().map(ResourceName::parse).transpose()?;
    // Saturating: sizes come from the client, and a sum that overflows is simply wrong.
    let sizes = header
        .files
        .iter()
        .fold(0u64, |sum, f| sum.saturating_add(f.size));
    if header.files.len() > BUNDLE_MAX_FILES || sizes != all.len() as u64 {
        return Err(ApiError::new(
            ErrorCode::InvalidArgument,
            format!(
                "bundle: {} files (at most {BUNDLE_MAX_FILES}) of {sizes} bytes, but {} bytes follow the header",
                header.files.len(),
                all.len()
            ),
        ));
    }
    // Entries that do not parse fail alone, like any other file of the bundle.
    let mut outcomes: Vec<Option<weft_types::Error>> = Vec::with_capacity(header.files.len());
    let mut items = Vec::new();
    for f in &header.files {
        let data = all.take(f.size as usize);
        match LogicalPath::parse(&f.path).and_then(|p| Ok((p, Checksum::parse(&f.checksum)?))) {
            Ok((path, sum)) => {
                items.push((path, data, sum));
                outcomes.push(None);
            }
            Err(e) => outcomes.push(Some(e)),
        }
    }
    let mut stored = s
        .zone
        .put_bundle(&c, items, header.overwrite, resource.as_ref())
        .await
        .into_iter();
    let answer = header
        .files
        .iter()
        .zip(outcomes)
        .map(|(f, bad)| {
            let error = match bad {
                Some(e) => Some(e),
                None => stored.next().expect("one outcome per stored file").err(),
            };
            BundleOutcome {
                path: f.path.clone(),
                error: error.map(|e| ErrorBody {
                    code: e.code.as_str().to_owned(),
                    message: e.message,
                }),
            }
        })
        .collect();
    Ok(Json(answer))
}

#[utoipa::path(get, path = "/api/v1/data/{path}", tag = "data",
    params(("path" = String, Path), ("Range" = Option<String>, Header, description = "bytes=START-END (one range)")),
    responses((status = 200, description = "the object's bytes"), (status = 206, description = "the requested range"),
        (status = 416, body = weft_types::wire::ErrorBody)))]
pub async fn get(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let ranged = headers.get(header::RANGE);
    let read = s
        .zone
        .read_with(&c, &p, |size| {
            ranged.map(|v| parse_range(v, size).map_err(|e| e.0)).transpose()
        })
        .await?;
    let size = read.node.size as u64;
    let status = if ranged.is_some() {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let len = read.range.end - read.range.start;
    let body = Body::from_stream(
        read.stream
            .map(|r| r.map_err(|e| std::io::Error::other(e.to_string()))),
    );
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some(sum) = &read.node.checksum {
        h.insert(
            CHECKSUM_HEADER,
            HeaderValue::from_str(&sum.to_string()).expect("hex is ASCII"),
        );
        h.insert(
            header::ETAG,
            HeaderValue::from_str(&format!("\"{}\"", sum.hex)).expect("hex is ASCII"),
        );
    }
    if ranged.is_some() {
        let cr = format!("bytes {}-{}/{size}", read.range.start, read.range.end - 1);
        h.insert(header::CONTENT_RANGE, HeaderValue::from_str(&cr).expect("ASCII"));
    }
    Ok(resp)
}

/// One `bytes=` range: `a-b`, `a-` or `-n` (the last n bytes).
fn parse_range(v: &HeaderValue, size: u64) -> ApiResult<Range<u64>> {
    let bad = || {
        ApiError::new(
            ErrorCode::RangeNotSatisfiable,
            format!("unsupported or unsatisfiable Range {v:?} (object of {size} bytes)"),
        )
    };
    let spec = v
        .to_str()
        .ok()
        .and_then(|s| s.strip_prefix("bytes="))
        .ok_or_else(bad)?;
    if spec.contains(',') {
        return Err(bad());
    }
    let (a, b) = spec.split_once('-').ok_or_else(bad)?;
    let r = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: u64 = n.parse().map_err(|_| bad())?;
            size.saturating_sub(n)..size
        }
        (a, "") => a.parse().map_err(|_| bad())?..size,
        (a, b) => {
            let (a, b): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
            if b < a {
                return Err(bad());
            }
            a..(b + 1).min(size)
        }
    };
    if r.start >= r.end {
        return Err(bad());
    }
    Ok(r)
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
        .begin_upload(&c, &path, r.size, r.piece_size, resource.as_ref(), r.overwrite)
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

#[utoipa::path(put, path = "/api/v1/uploads/{id}/{index}", tag = "data",
    params(("id" = String, Path), ("index" = u64, Path)),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 200, body = PieceReceipt)))]
pub async fn upload_piece(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    Path((id, index)): Path<(String, u64)>,
    body: Body,
) -> ApiResult<Json<PieceReceipt>> {
    let cv = s.zone.upload_piece(&c, &id, index, body_stream(body)).await?;
    Ok(Json(PieceReceipt { index, cv }))
}

#[utoipa::path(post, path = "/api/v1/uploads/{id}/complete", tag = "data", params(("id" = String, Path)),
    request_body = CompleteUpload, responses((status = 201, body = NodeStat)))]
pub async fn complete_upload(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    Path(id): Path<String>,
    WireJson(r): WireJson<CompleteUpload>,
) -> ApiResult<(StatusCode, Json<NodeStat>)> {
    let expected = r.checksum.as_deref().map(Checksum::parse).transpose()?;
    let out = s.zone.complete_upload(&c, &id, expected.as_ref()).await?;
    Ok((StatusCode::CREATED, Json(convert::node(&out.node))))
}

#[utoipa::path(delete, path = "/api/v1/uploads/{id}", tag = "data", params(("id" = String, Path)),
    responses((status = 204)))]
pub async fn abort_upload(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    s.zone.abort_upload(&c, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/checksum/{path}", tag = "data",
    params(("path" = String, Path), ("verify" = Option<bool>, Query, description = "re-read every replica")),
    responses((status = 200, body = ChecksumReport)))]
pub async fn checksum(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    q: QueryPairs,
) -> ApiResult<Json<ChecksumReport>> {
    let stat = s.zone.stat(&c, &p).await?;
    let checksum = stat.node.checksum.as_ref().map(|c| c.to_string());
    let checks = if q.flag("verify")? {
        s.zone
            .verify(&c, &p)
            .await?
            .into_iter()
            .map(|(r, computed)| ReplicaCheck {
                ok: r.checksum.as_ref() == Some(&computed),
                replica: convert::replica(&r),
                computed: computed.to_string(),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Json(ChecksumReport {
        path: p.to_string(),
        checksum,
        checks,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str, size: u64) -> Option<Range<u64>> {
        parse_range(&HeaderValue::from_str(s).unwrap(), size).ok()
    }

    #[test]
    fn ranges() {
        assert_eq!(r("bytes=0-9", 100), Some(0..10));
        assert_eq!(r("bytes=90-", 100), Some(90..100));
        assert_eq!(r("bytes=-10", 100), Some(90..100));
        assert_eq!(r("bytes=50-500", 100), Some(50..100));
        assert_eq!(r("bytes=100-", 100), None);
        assert_eq!(r("bytes=5-1", 100), None);
        assert_eq!(r("bytes=0-1,3-4", 100), None);
        assert_eq!(r("items=0-1", 100), None);
    }
}
