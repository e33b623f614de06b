//! Data routes: whole-object put and ranged get, bundles of small files, checksums.

use crate::auth::Authed;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::extract::{body_stream, content_length, PathParam, QueryPairs};
use crate::frames::{Frames, FramesError};
use crate::AppState;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use futures::StreamExt;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use std::ops::Range;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{
    BundleHeader, BundleOutcome, ChecksumReport, ErrorBody, NodeStat, ReplicaCheck, BUNDLE_MAX_BYTES,
    BUNDLE_MAX_FILES, CHECKSUM_HEADER,
};
use weft_types::{Checksum, Error, ErrorCode, LogicalPath, ResourceName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(put, get))
        .routes(routes!(append))
        .routes(routes!(bundle))
        .routes(routes!(checksum))
}

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

#[utoipa::path(put, path = "/api/v1/data/{*path}", tag = "data",
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
        .data()
        .put_stream(
            &c,
            weft_zone::data::Put {
                path: &p,
                size,
                expected: expected.as_ref(),
                resource: resource.as_ref(),
                overwrite: q.flag("overwrite")?,
                parents: false,
                pack: false,
            },
            body_stream(body),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(convert::node(&out.node))))
}

/// Appends the body to the data object, which must hold `from` bytes now: its content
/// becomes the old bytes and then these (the zone copies the old ones), checked whole
/// against `x-weft-checksum` before it replaces the old content.
#[utoipa::path(post, path = "/api/v1/append/{*path}", tag = "data",
    params(("path" = String, Path), ("from" = u64, Query, description = "the object's size now: where the body goes"),
        ("x-weft-checksum" = String, Header, description = "blake3:<hex> of the whole new content")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 200, body = NodeStat), (status = 409, body = weft_types::wire::ErrorBody, description = "the object does not hold `from` bytes"),
        (status = 411)))]
pub async fn append(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    q: QueryPairs,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Json<NodeStat>> {
    let size = content_length(&headers)?;
    let from = q.number::<u64>("from")?.ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidArgument,
            "say where the bytes go: ?from=<the object's size>",
        )
    })?;
    let expected = expected_checksum(&headers)?.ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidArgument,
            format!("an append needs {CHECKSUM_HEADER}: the checksum of the whole new content"),
        )
    })?;
    let out = s
        .zone
        .data()
        .append(&c, &p, (from, size), &expected, body_stream(body))
        .await?;
    Ok(Json(convert::node(&out.node)))
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
    let all = Frames::read(body, limit).await.map_err(|e| {
        let why = match e {
            FramesError::TooLarge => "over".to_owned(),
            FramesError::Body(e) => format!("unreadable ({e}) or over"),
        };
        ApiError::new(
            ErrorCode::InvalidArgument,
            format!("bundle body {why} {limit} bytes"),
        )
    })?;
    let (header, data) = split_bundle(all)?;
    let resource = header.resource.as_deref().map(ResourceName::parse).transpose()?;
    // Entries that do not parse fail alone, like any other file of the bundle.
    let mut outcomes: Vec<Option<weft_types::Error>> = Vec::with_capacity(header.files.len());
    let mut items = Vec::new();
    for (f, data) in header.files.iter().zip(data) {
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
        .data()
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

/// A bundle body cut into its header line and the bytes of each file, in order: every
/// file lies within the body, and their sizes add up to exactly what follows the header.
/// Errors: `invalid_argument` (no header line within `BUNDLE_HEADER_MAX` bytes, a header
/// that is not JSON, too many files, sizes that do not match the body).
pub(crate) fn split_bundle(mut all: Frames) -> Result<(BundleHeader, Vec<Bytes>), Error> {
    let split = all.find(b'\n', BUNDLE_HEADER_MAX).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidArgument,
            format!(
                "bundle: no header line within its first {BUNDLE_HEADER_MAX} bytes \
                 (a bundle holds at most {BUNDLE_MAX_FILES} files; send more as several bundles)"
            ),
        )
    })?;
    let line = all.take(split + 1);
    let header: BundleHeader = serde_json::from_slice(&line[..split])
        .map_err(|e| Error::caused(ErrorCode::InvalidArgument, "bundle header", e))?;
    // Saturating: sizes come from the client, and a sum that overflows is simply wrong.
    let sizes = header
        .files
        .iter()
        .fold(0u64, |sum, f| sum.saturating_add(f.size));
    if header.files.len() > BUNDLE_MAX_FILES || sizes != all.len() as u64 {
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            format!(
                "bundle: {} files (at most {BUNDLE_MAX_FILES}) of {sizes} bytes, but {} bytes follow the header",
                header.files.len(),
                all.len()
            ),
        ));
    }
    // Each size is at most the sum, which is what the body holds: every take fits.
    let data = header.files.iter().map(|f| all.take(f.size as usize)).collect();
    Ok((header, data))
}

#[utoipa::path(get, path = "/api/v1/data/{*path}", tag = "data",
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
        .data()
        .read_with(&c, &p, |size| {
            ranged.map(|v| parse_range(v.as_bytes(), size)).transpose()
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
    // The bytes are anyone's upload, served on the web interface's own origin: a browser
    // saves them, and never reads them as a page of this site.
    crate::sandboxed(h);
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment"),
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

/// One `bytes=` range of an object of `size` bytes: `a-b`, `a-` or `-n` (the last n
/// bytes), as RFC 9110 §14.1.2 spells them (digits only). The range returned is never
/// empty and lies within the object; a last position past the object (or past `u64`) is
/// its end. Errors: `range_not_satisfiable`, for what is not one satisfiable range.
pub(crate) fn parse_range(v: &[u8], size: u64) -> Result<Range<u64>, Error> {
    let bad = || {
        Error::new(
            ErrorCode::RangeNotSatisfiable,
            format!(
                "unsupported or unsatisfiable Range {:?} (object of {size} bytes)",
                String::from_utf8_lossy(&v[..v.len().min(256)])
            ),
        )
    };
    // A number of RFC 9110's grammar: digits only (no sign, no space inside); `None` for
    // anything else, `u64::MAX` for more digits than `u64` holds.
    let number = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(s.parse().unwrap_or(u64::MAX))
    };
    let spec = std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.trim().strip_prefix("bytes="))
        .ok_or_else(bad)?;
    if spec.contains(',') {
        return Err(bad());
    }
    let (a, b) = spec.split_once('-').ok_or_else(bad)?;
    let r = match (a.trim(), b.trim()) {
        ("", n) => {
            let n = number(n).ok_or_else(bad)?;
            size.saturating_sub(n)..size
        }
        (a, "") => number(a).ok_or_else(bad)?..size,
        (a, b) => {
            let (a, b) = (number(a).ok_or_else(bad)?, number(b).ok_or_else(bad)?);
            if b < a {
                return Err(bad());
            }
            // Saturating: `bytes=0-18446744073709551615` overflowed `b + 1` (a panic in
            // debug builds, an empty range and a 416 in release; found writing fuzz/range_header).
            a..b.saturating_add(1).min(size)
        }
    };
    if r.start >= r.end {
        return Err(bad());
    }
    Ok(r)
}

#[utoipa::path(post, path = "/api/v1/checksum/{*path}", tag = "data",
    params(("path" = String, Path), ("verify" = Option<bool>, Query, description = "re-read every replica (needs own on the object)")),
    responses((status = 200, body = ChecksumReport)))]
pub async fn checksum(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    q: QueryPairs,
) -> ApiResult<Json<ChecksumReport>> {
    let stat = s.zone.namespace().stat(&c, &p).await?;
    let checksum = stat.node.checksum.as_ref().map(|c| c.to_string());
    let checks = if q.flag("verify")? {
        s.zone
            .data()
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
        parse_range(s.as_bytes(), size).ok()
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
        // Found writing fuzz/range_header: `b + 1` overflowed.
        assert_eq!(r("bytes=0-18446744073709551615", 100), Some(0..100));
        assert_eq!(r("bytes=5-99999999999999999999999", 100), Some(5..100));
        assert_eq!(r("bytes=999999999999999999999-", 100), None);
        assert_eq!(r("bytes=-99999999999999999999999", 100), Some(0..100));
        assert_eq!(r("bytes=+1-2", 100), None);
        assert_eq!(r("bytes=1-+2", 100), None);
        assert_eq!(r("bytes=-0", 100), None);
        assert_eq!(r("bytes=0-0", 0), None);
        assert_eq!(r("bytes=-", 100), None);
        assert_eq!(r("bytes=", 100), None);
    }
}
