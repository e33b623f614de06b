//! `GET /metrics` and the request counts behind it.

use crate::auth::Authed;
use crate::error::ApiResult;
use crate::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The OpenMetrics text format, which Prometheus scrapes.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[utoipa::path(get, path = "/metrics", tag = "zone",
    responses((status = 200, content_type = "application/openmetrics-text",
        description = "The zone's metrics for Prometheus (administrators): requests, bytes per resource, transfers, workers, leases, catalog")))]
pub async fn metrics(State(s): State<Arc<AppState>>, Authed(caller): Authed) -> ApiResult<Response> {
    let text = s.zone.metrics_text(&caller).await?;
    Ok(([(http::header::CONTENT_TYPE, OPENMETRICS)], text).into_response())
}

/// A route template as a label: `/api/v1/data/*path`, `/api/v1/uploads/:id/:index`
/// (without the braces of axum's syntax, which some text parsers of the exposition
/// format take for the end of a label set).
pub(crate) fn route_label(template: &str) -> String {
    template.replace("{*", "*").replace('{', ":").replace('}', "")
}

#[cfg(test)]
mod tests {
    #[test]
    fn route_labels_have_no_braces() {
        assert_eq!(super::route_label("/api/v1/data/{*path}"), "/api/v1/data/*path");
        assert_eq!(
            super::route_label("/api/v1/uploads/{id}/{index}"),
            "/api/v1/uploads/:id/:index"
        );
        assert_eq!(super::route_label("/metrics"), "/metrics");
    }
}
