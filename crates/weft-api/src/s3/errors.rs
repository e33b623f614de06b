//! weft's stable error codes as S3's. Where S3 distinguishes what was not found (a key, a
//! bucket, an upload), the operation says which.

use s3s::{S3Error, S3ErrorCode};
use weft_types::{Error, ErrorCode};

/// `e` as the S3 error a client expects, its message kept.
pub(super) fn from_weft(e: Error) -> S3Error {
    use S3ErrorCode as S;
    let code = match e.code {
        ErrorCode::NotFound => S::NoSuchKey,
        ErrorCode::Forbidden | ErrorCode::Unauthenticated | ErrorCode::TokenExpired => S::AccessDenied,
        ErrorCode::RangeNotSatisfiable => S::InvalidRange,
        ErrorCode::ChecksumMismatch => S::BadDigest,
        ErrorCode::IncompleteBody | ErrorCode::SizeMismatch => S::IncompleteBody,
        ErrorCode::LengthRequired => S::MissingContentLength,
        ErrorCode::PathTooLong | ErrorCode::NameTooLong => S::KeyTooLongError,
        ErrorCode::InvalidPath
        | ErrorCode::InvalidName
        | ErrorCode::InvalidArgument
        | ErrorCode::InvalidJson => S::InvalidArgument,
        ErrorCode::ServiceUnavailable | ErrorCode::StorageUnavailable => S::SlowDown,
        // A bound of the zone (open uploads): waiting does not help, finishing some does.
        ErrorCode::LimitExceeded => return custom("LimitExceeded", http::StatusCode::BAD_REQUEST, e),
        ErrorCode::QuotaExceeded => return custom("QuotaExceeded", http::StatusCode::FORBIDDEN, e),
        // S3 lets `a` and `a/b` be keys side by side; a namespace cannot (MinIO's codes,
        // which clients already know).
        ErrorCode::NotACollection => return custom("XMinioParentIsObject", http::StatusCode::BAD_REQUEST, e),
        ErrorCode::IsACollection => {
            return custom("XMinioObjectExistsAsDirectory", http::StatusCode::CONFLICT, e)
        }
        ErrorCode::AlreadyExists | ErrorCode::Conflict | ErrorCode::CollectionNotEmpty => S::OperationAborted,
        ErrorCode::UnknownZone => S::InvalidArgument,
        _ => S::InternalError,
    };
    S3Error::with_message(code, e.message)
}

/// A code s3s does not know: it needs its status set, else it answers 500.
pub(super) fn custom(code: &'static str, status: http::StatusCode, e: Error) -> S3Error {
    let mut out = S3Error::with_message(S3ErrorCode::Custom(code.into()), e.message);
    out.set_status_code(status);
    out
}

/// As [`from_weft`], with `not_found` meaning the bucket.
pub(super) fn bucket(e: Error) -> S3Error {
    if e.code == ErrorCode::NotFound {
        S3Error::with_message(S3ErrorCode::NoSuchBucket, e.message)
    } else {
        from_weft(e)
    }
}

/// As [`from_weft`], with `not_found` meaning the upload.
pub(super) fn upload(e: Error) -> S3Error {
    if e.code == ErrorCode::NotFound {
        S3Error::with_message(S3ErrorCode::NoSuchUpload, e.message)
    } else {
        from_weft(e)
    }
}
