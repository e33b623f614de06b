//! The S3 gateway: a second front door on its own listener (`weft serve --s3-listen`).
//! s3s parses requests, checks SigV4 signatures (headers, presigned URLs, aws-chunked
//! bodies, clock skew) and writes S3's XML; weft decides who the caller is (an access key
//! acts as its user, an unsigned request as the group `anonymous`) and runs every
//! operation through the zone's use cases, so the permission checks are REST's.

mod auth;
mod body;
mod errors;
mod host;
mod multipart;
mod names;
mod ops;
mod sandbox;

use crate::{requests, AppState, OidcVerifier};
use axum::Router;
use std::sync::Arc;
use weft_zone::Zone;

/// The S3 service of `zone`, as a router to serve on the S3 listener: every request gets
/// the id, span, log line and metrics of a REST one. With `domain`, a request to
/// `BUCKET.domain` names its bucket in the host (virtual-hosted style). Errors:
/// `invalid_argument` (not a domain name).
pub fn router(zone: Arc<Zone>, domain: Option<&str>) -> Result<Router, weft_types::Error> {
    let state = Arc::new(AppState {
        oidc: OidcVerifier::new(Vec::new(), zone.trusted_cas()),
        zone: zone.clone(),
        // Only the request middleware reads this state; no cookie is set on this listener.
        https: false,
    });
    let mut builder = s3s::service::S3ServiceBuilder::new(ops::Gateway { zone: zone.clone() });
    builder.set_auth(auth::Keys { zone: zone.clone() });
    builder.set_access(auth::Access { zone });
    builder.set_host(host::Hosts::new(domain)?);
    builder.set_config(Arc::new(s3s::config::StaticConfigProvider::new(Arc::new(
        config(),
    ))));
    let service = builder.build();
    Ok(Router::new()
        .fallback_service(axum::error_handling::HandleError::new(
            service,
            |e: s3s::HttpError| async move {
                tracing::warn!(error = ?s3s::StdError::from(e), "S3 request failed");
                http::StatusCode::INTERNAL_SERVER_ERROR
            },
        ))
        .layer(axum::middleware::from_fn(auth::refuse_unverifiable))
        .layer(axum::middleware::from_fn(crate::drain::unread_bodies))
        .layer(axum::middleware::from_fn_with_state(state, requests::observe))
        .layer(axum::middleware::from_fn(label_s3))
        .layer(axum::middleware::from_fn(sandbox::sandbox)))
}

/// What s3s buffers is kept small: POST-object (browser form uploads) is refused before
/// it is read (see `auth.rs`), and XML bodies (DeleteObjects of 1000 keys, a multipart
/// completion of 10,000 parts) stay well under 4 MiB.
fn config() -> s3s::config::S3Config {
    let mut c = s3s::config::S3Config::default();
    c.xml_max_body_size = 4 << 20;
    c.post_object_max_file_size = 0;
    c
}

/// Requests of this listener are counted under the route `s3`.
async fn label_s3(mut req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    req.extensions_mut().insert(requests::RouteLabel("s3"));
    next.run(req).await
}
