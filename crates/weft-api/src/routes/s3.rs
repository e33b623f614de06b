//! Managing the S3 gateway: access keys (each user their own; administrators anyone's)
//! and buckets (administrators).

use crate::auth::Authed;
use crate::error::ApiResult;
use crate::extract::{QueryPairs, WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{NewS3Bucket, NewS3Key, S3BucketWire, S3KeyCreated, S3KeyWire};
use weft_types::{LogicalPath, PrincipalName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(list_keys, create_key))
        .routes(routes!(remove_key))
        .routes(routes!(list_buckets, add_bucket))
        .routes(routes!(remove_bucket))
}

fn key(k: weft_zone::s3::S3Key) -> S3KeyWire {
    S3KeyWire {
        access_key: k.access_key,
        user: k.user.to_string(),
        created: k.created,
    }
}

fn bucket(b: weft_zone::s3::BucketInfo) -> S3BucketWire {
    S3BucketWire {
        name: b.name,
        path: b.path.to_string(),
        public_read: b.public_read,
        home: b.home,
        created: b.created,
    }
}

#[utoipa::path(get, path = "/api/v1/s3/keys", tag = "s3",
    params(("user" = Option<String>, Query, description = "another user's keys (administrators)"),
           ("all" = Option<bool>, Query, description = "every user's keys (administrators)")),
    responses((status = 200, body = Vec<S3KeyWire>)))]
pub async fn list_keys(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    q: QueryPairs,
) -> ApiResult<Json<Vec<S3KeyWire>>> {
    let user = q.get("user").map(PrincipalName::parse).transpose()?;
    let keys = s.zone.s3().keys(&c, user.as_ref(), q.flag("all")?).await?;
    Ok(Json(keys.into_iter().map(key).collect()))
}

#[utoipa::path(post, path = "/api/v1/s3/keys", tag = "s3", request_body = NewS3Key,
    responses((status = 201, body = S3KeyCreated)))]
pub async fn create_key(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<NewS3Key>,
) -> ApiResult<(StatusCode, Json<S3KeyCreated>)> {
    let user = r.user.as_deref().map(PrincipalName::parse).transpose()?;
    let k = s.zone.s3().create_key(&c, user.as_ref()).await?;
    Ok((
        StatusCode::CREATED,
        Json(S3KeyCreated {
            access_key: k.key.access_key,
            secret_key: k.secret,
            user: k.key.user.to_string(),
            home_bucket: k.home_bucket,
            created: k.key.created,
        }),
    ))
}

#[utoipa::path(delete, path = "/api/v1/s3/keys/{access_key}", tag = "s3",
    params(("access_key" = String, Path)), responses((status = 204)))]
pub async fn remove_key(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(access_key): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone.s3().remove_key(&c, &access_key).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/s3/buckets", tag = "s3",
    responses((status = 200, body = Vec<S3BucketWire>, description = "the buckets the caller may read")))]
pub async fn list_buckets(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<S3BucketWire>>> {
    let buckets = s.zone.s3().buckets(&c).await?;
    Ok(Json(buckets.into_iter().map(bucket).collect()))
}

#[utoipa::path(post, path = "/api/v1/s3/buckets", tag = "s3", request_body = NewS3Bucket,
    responses((status = 201, body = S3BucketWire)))]
pub async fn add_bucket(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<NewS3Bucket>,
) -> ApiResult<(StatusCode, Json<S3BucketWire>)> {
    let path = LogicalPath::parse(&r.path)?;
    let b = s.zone.s3().add_bucket(&c, &r.name, &path, r.public_read).await?;
    Ok((StatusCode::CREATED, Json(bucket(b))))
}

#[utoipa::path(delete, path = "/api/v1/s3/buckets/{name}", tag = "s3",
    params(("name" = String, Path)), responses((status = 204)))]
pub async fn remove_bucket(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone.s3().remove_bucket(&c, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
