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

/// The HTTP status of each code: the one table (S3's answers have their own, in
/// `s3::errors`, as S3 clients expect S3's codes).
pub fn status_of(code: ErrorCode) -> StatusCode {
    use ErrorCode as C;
    match code {
        C::InvalidPath
        | C::InvalidName
        | C::InvalidArgument
        | C::InvalidJson
        | C::InvalidPolicy
        | C::PathTooLong
        | C::NameTooLong
        | C::UnknownZone
        | C::UnknownResource
        | C::ChecksumMismatch
        | C::SizeMismatch
        | C::IncompleteBody => StatusCode::BAD_REQUEST,
        C::Unauthenticated | C::TokenExpired => StatusCode::UNAUTHORIZED,
        // A quota is a permission of size: a retry does not help until space is freed.
        C::Forbidden | C::CsrfRejected | C::QuotaExceeded => StatusCode::FORBIDDEN,
        C::NotFound => StatusCode::NOT_FOUND,
        C::AlreadyExists | C::NotACollection | C::IsACollection | C::CollectionNotEmpty | C::Conflict => {
            StatusCode::CONFLICT
        }
        C::LengthRequired => StatusCode::LENGTH_REQUIRED,
        C::RangeNotSatisfiable => StatusCode::RANGE_NOT_SATISFIABLE,
        C::LimitExceeded => StatusCode::TOO_MANY_REQUESTS,
        C::UnsupportedFormat => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        C::ExtractFailed => StatusCode::UNPROCESSABLE_ENTITY,
        C::StorageUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        // Another server (a peer zone, a PID registry) failed us: a gateway's error.
        C::ZoneUnreachable | C::ServiceUnavailable => StatusCode::BAD_GATEWAY,
        C::StorageError | C::CatalogError | C::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = status_of(self.0.code);
        if status.is_server_error() {
            // The whole chain of causes (the message may carry only the first's text).
            let causes = weft_types::with_causes(&self.0);
            tracing::error!(code = %self.0.code, error = %causes, "request failed");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_an_error_status() {
        for &c in ErrorCode::ALL {
            let s = status_of(c);
            assert!(s.is_client_error() || s.is_server_error(), "{c}: {s}");
            // Temporary faults are the server's or a gateway's, or a limit to wait out.
            if c.is_temporary() && c != ErrorCode::IncompleteBody {
                assert!(
                    s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS,
                    "{c}: {s}"
                );
            }
        }
    }
}
