//! The routes of API v1. Each file registers its handlers once, in its `router()`, with
//! utoipa-axum's `routes!`: the axum route and the OpenAPI operation both come from the
//! handler's `#[utoipa::path]`, so the document lists exactly what the server routes.
//! A `routes!` call holds the handlers of one path (one per method): it registers every
//! handler it is given at every path they name.

pub mod acl;
pub mod audit;
pub mod data;
pub mod federation;
pub mod meta;
pub mod namespace;
pub mod pids;
pub mod policies;
pub mod quotas;
pub mod replicas;
pub mod resources;
pub mod s3;
pub mod staging;
pub mod tokens;
pub mod transfers;
pub mod uploads;
pub mod users;

use crate::AppState;
use std::sync::Arc;
use utoipa::openapi::OpenApi as Document;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Every route of API v1 (and `/metrics`, `/pid/..`) with the OpenAPI document of them
/// all: `split_for_parts()` gives the axum router and the document `GET
/// /api/v1/openapi.json` serves. The document's info comes from [`crate::ApiDoc`].
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    let mut router = OpenApiRouter::with_openapi(crate::ApiDoc::openapi())
        .routes(routes!(crate::health))
        .routes(routes!(crate::openapi_json))
        .routes(routes!(crate::zone_status))
        .routes(routes!(crate::metrics::metrics))
        .merge(namespace::router())
        .merge(data::router())
        .merge(uploads::router())
        .merge(meta::router())
        .merge(users::router())
        .merge(tokens::router())
        .merge(acl::router())
        .merge(resources::router())
        .merge(audit::router())
        .merge(quotas::router())
        .merge(federation::router())
        .merge(staging::router())
        .merge(s3::router())
        .merge(transfers::router())
        .merge(replicas::router())
        .merge(pids::router())
        .merge(policies::router());
    openapi_templates(router.get_openapi_mut());
    router
}

/// Writes the document's paths in OpenAPI's template syntax: a wildcard of axum's,
/// `/api/v1/stat/{*path}` (one or more segments), is the parameter `{path}` there, which
/// the operation declares (OpenAPI has no wildcard; clients send the segments with their
/// slashes).
fn openapi_templates(doc: &mut Document) {
    let paths = std::mem::take(&mut doc.paths.paths);
    for (path, item) in paths {
        let path = path.replace("{*", "{");
        assert!(
            !doc.paths.paths.contains_key(&path),
            "{path} is routed both as a wildcard and not"
        );
        doc.paths.paths.insert(path, item);
    }
}
