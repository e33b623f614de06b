//! Persistent identifiers: minting (authenticated) and resolving (public, JSON or an HTML
//! landing page for browsers).

use crate::auth::Authed;
use crate::convert;
use crate::error::ApiResult;
use crate::extract::{WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use http::{HeaderMap, StatusCode};
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{MintPidRequest, PidWire};
use weft_types::LogicalPath;
use weft_zone::namespace::PidInfo;

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(mint))
        .routes(routes!(resolve))
        .routes(routes!(landing))
}

fn wire(p: &PidInfo) -> PidWire {
    PidWire {
        pid: p.pid.clone(),
        path: p.path.to_string(),
        node: p.node.as_ref().map(convert::node_info),
        metadata: p.metadata.iter().map(convert::avu).collect(),
        created: p.created,
        removed: p.removed,
    }
}

/// The public record of a resolved PID: no owner (the zone leaves the rest out).
fn public(p: &PidInfo) -> PidWire {
    let mut w = wire(p);
    if let Some(node) = &mut w.node {
        node.owner.clear();
    }
    w
}

#[utoipa::path(post, path = "/api/v1/pids", tag = "pids", request_body = MintPidRequest,
    responses((status = 201, body = PidWire, description = "minted"),
        (status = 200, body = PidWire, description = "the PID it already had")))]
pub async fn mint(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<MintPidRequest>,
) -> ApiResult<(StatusCode, Json<PidWire>)> {
    let path = LogicalPath::parse(&r.path)?;
    let had = s.zone.namespace().stat(&c, &path).await?.pid.is_some();
    let info = s.zone.namespace().mint_pid(&c, &path).await?;
    let status = if had { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(wire(&info))))
}

#[utoipa::path(get, path = "/api/v1/pids/{prefix}/{suffix}", tag = "pids",
    params(("prefix" = String, Path), ("suffix" = String, Path)),
    responses((status = 200, body = PidWire, description = "public; `removed` is set once the node is gone"),
        (status = 404, body = weft_types::wire::ErrorBody)))]
pub async fn resolve(
    State(s): State<Arc<AppState>>,
    WirePath((prefix, suffix)): WirePath<(String, String)>,
) -> ApiResult<Json<PidWire>> {
    Ok(Json(public(
        &s.zone
            .namespace()
            .resolve_pid(&format!("{prefix}/{suffix}"))
            .await?,
    )))
}

#[utoipa::path(get, path = "/pid/{prefix}/{suffix}", tag = "pids",
    params(("prefix" = String, Path), ("suffix" = String, Path)),
    responses((status = 200, body = PidWire, description = "JSON, or an HTML landing page for `Accept: text/html`")))]
pub async fn landing(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    WirePath((prefix, suffix)): WirePath<(String, String)>,
) -> ApiResult<Response> {
    let info = s
        .zone
        .namespace()
        .resolve_pid(&format!("{prefix}/{suffix}"))
        .await?;
    let wants_html = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    if wants_html {
        return Ok(Html(page(&public(&info))).into_response());
    }
    Ok(Json(public(&info)).into_response())
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The landing page: what a reader following a citation sees.
fn page(p: &PidWire) -> String {
    let mut rows = vec![("Path", esc(&p.path))];
    match &p.node {
        Some(n) => {
            rows.push(("Kind", esc(&n.kind)));
            rows.push(("Size", format!("{} bytes", n.size)));
            rows.push(("Checksum", esc(n.checksum.as_deref().unwrap_or("-"))));
            rows.push(("Owner", esc(&n.owner)));
            for r in &n.replicas {
                rows.push((
                    "Replica",
                    esc(&format!("{}:{} ({})", r.zone, r.resource, r.state)),
                ));
            }
        }
        None => rows.push(("Status", "removed; this record remains".into())),
    }
    for a in &p.metadata {
        rows.push(("Metadata", esc(&format!("{} = {} {}", a.attr, a.value, a.unit))));
    }
    let table: String = rows
        .iter()
        .map(|(k, v)| format!("<tr><th>{k}</th><td>{v}</td></tr>\n"))
        .collect();
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{pid}</title></head>\n\
         <body><h1>{pid}</h1>\n<table>\n{table}</table></body></html>\n",
        pid = esc(&p.pid)
    )
}
