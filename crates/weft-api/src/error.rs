//! Errors on the wire: `{"code": "...", "message": "..."}` with the status of the code.

use axum::response::{IntoResponse, Response};
use axum::Json;
use http::StatusCode;
use weft_types::wire::ErrorBody;
use weft_types::{Error, ErrorCode};

/// A domain error on its way out as an HTTP response.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError(Error::new(code, message))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::error!(code = %self.0.code, message = %self.0.message, "request failed");
        }
        let body = ErrorBody {
            code: self.0.code.as_str().to_owned(),
            message: self.0.message,
        };
        let mut resp = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
        }
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
