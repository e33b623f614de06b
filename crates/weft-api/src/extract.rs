//! Extractors that turn malformed input into stable error codes instead of axum's plain
//! text rejections.

use crate::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts, Request};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::request::Parts;
use serde::de::DeserializeOwned;
use weft_types::{Error, ErrorCode, LogicalPath};

/// A JSON body; malformed JSON is `invalid_json`.
pub struct WireJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for WireJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            ApiError::new(
                ErrorCode::IncompleteBody,
                format!("cannot read the request body: {e}"),
            )
        })?;
        serde_json::from_slice(&bytes).map(WireJson).map_err(|e| {
            ApiError::new(
                ErrorCode::InvalidJson,
                format!("the request body is not valid JSON for this route: {e}"),
            )
        })
    }
}

/// Route parameters other than logical paths (`{id}`, `{name}`, `{index}`); one that does
/// not decode (bad percent-encoding, not UTF-8, not a number) is `invalid_argument` with
/// the usual `{"code","message"}` body, where axum's own rejection was plain text.
pub struct WirePath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for WirePath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| WirePath(v))
            .map_err(|e| ApiError::new(ErrorCode::InvalidArgument, format!("bad route parameter: {e}")))
    }
}

/// The logical path of a `{*path}` route parameter (given without its leading slash).
pub struct PathParam(pub LogicalPath);

impl<S: Send + Sync> FromRequestParts<S> for PathParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(raw): axum::extract::Path<String> =
            axum::extract::Path::from_request_parts(parts, state)
                .await
                .map_err(|e| {
                    ApiError::new(
                        ErrorCode::InvalidPath,
                        format!("the path is not valid UTF-8 or badly encoded: {e}"),
                    )
                })?;
        Ok(PathParam(LogicalPath::parse(&format!("/{raw}"))?))
    }
}

/// Query parameters, including repeated keys (`meta=a&meta=b`).
pub struct QueryPairs(pub Vec<(String, String)>);

impl QueryPairs {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    pub fn flag(&self, key: &str) -> Result<bool, ApiError> {
        match self.get(key) {
            None => Ok(false),
            Some("" | "true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(v) => Err(ApiError::new(
                ErrorCode::InvalidArgument,
                format!("{key}={v:?} is not true or false"),
            )),
        }
    }
    pub fn number<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse().map_err(|_| {
                    ApiError::new(ErrorCode::InvalidArgument, format!("{key}={v:?} is not a number"))
                })
            })
            .transpose()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let q = parts.uri.query().unwrap_or("");
        Ok(QueryPairs(
            form_urlencoded::parse(q.as_bytes()).into_owned().collect(),
        ))
    }
}

/// The declared length of a data body; streaming without one is refused, so that a body
/// cut short can always be told from a complete one.
pub fn content_length(headers: &http::HeaderMap) -> Result<u64, ApiError> {
    let v = headers.get(http::header::CONTENT_LENGTH).ok_or_else(|| {
        ApiError::new(
            ErrorCode::LengthRequired,
            "data uploads need a Content-Length header",
        )
    })?;
    v.to_str()
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidArgument, "Content-Length is not a number"))
}

/// The request body as a stream of buffers; a connection that ends early surfaces as
/// `incomplete_body`.
pub fn body_stream(body: axum::body::Body) -> impl Stream<Item = Result<Bytes, Error>> + Send {
    body.into_data_stream().map(|r| {
        r.map_err(|e| {
            Error::new(
                ErrorCode::IncompleteBody,
                format!("the connection ended before the whole body arrived: {e}"),
            )
        })
    })
}
