//! `GET /metrics` and the request counts behind it.

use crate::auth::Authed;
use crate::error::ApiResult;
use crate::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;

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
fn route_label(template: &str) -> String {
    template.replace("{*", "*").replace('{', ":").replace('}', "")
}

/// Counts every request by route template (never the path itself: a label per file would
/// be unbounded), method and status, and times it until its answer's head.
pub async fn count_requests(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| route_label(m.as_str()));
    let method = req.method().as_str().to_owned();
    let started = Instant::now();
    let resp = next.run(req).await;
    let m = s.zone.metrics();
    let status = resp.status().as_u16().to_string();
    m.http_requests
        .get_or_create(&vec![
            ("route", route.clone()),
            ("method", method.clone()),
            ("status", status),
        ])
        .inc();
    m.http_duration
        .get_or_create(&vec![("route", route), ("method", method)])
        .observe(started.elapsed().as_secs_f64());
    resp
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
