//! Federated peer zones and the users of theirs mapped to local ones.

use crate::auth::Authed;
use crate::convert;
use crate::error::ApiResult;
use crate::extract::{WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{NewPeerZone, PeerZoneWire, UserMapWire};
use weft_types::{PrincipalName, ZoneName};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(list_zones, add_zone))
        .routes(routes!(remove_zone))
        .routes(routes!(user_maps, map_user))
        .routes(routes!(unmap_user))
}

#[utoipa::path(get, path = "/api/v1/zones", tag = "federation",
    responses((status = 200, body = Vec<PeerZoneWire>, description = "each peer, probed for reachability")))]
pub async fn list_zones(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<PeerZoneWire>>> {
    Ok(Json(
        s.zone
            .federation()
            .zones(&c)
            .await?
            .iter()
            .map(convert::peer_zone)
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/zones", tag = "federation", request_body = NewPeerZone,
    responses((status = 201, body = PeerZoneWire)))]
pub async fn add_zone(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(z): WireJson<NewPeerZone>,
) -> ApiResult<(StatusCode, Json<PeerZoneWire>)> {
    let name = ZoneName::parse(&z.name)?;
    let info = s
        .zone
        .federation()
        .add_zone(&c, &name, &z.url, &z.secret, z.replace, z.insecure)
        .await?;
    Ok((StatusCode::CREATED, Json(convert::peer_zone(&info))))
}

#[utoipa::path(delete, path = "/api/v1/zones/{name}", tag = "federation", params(("name" = String, Path)),
    responses((status = 204)))]
pub async fn remove_zone(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone
        .federation()
        .remove_zone(&c, &ZoneName::parse(&name)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/zones/{name}/users", tag = "federation", params(("name" = String, Path)),
    responses((status = 200, body = Vec<UserMapWire>, description = "users of that zone mapped to local users")))]
pub async fn user_maps(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<Json<Vec<UserMapWire>>> {
    let maps = s
        .zone
        .federation()
        .user_maps(&c, &ZoneName::parse(&name)?)
        .await?;
    Ok(Json(
        maps.into_iter()
            .map(|(remote, local)| UserMapWire {
                remote_user: remote.to_string(),
                local_user: local.to_string(),
            })
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/zones/{name}/users", tag = "federation", params(("name" = String, Path)),
    request_body = UserMapWire, responses((status = 204)))]
pub async fn map_user(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
    WireJson(m): WireJson<UserMapWire>,
) -> ApiResult<StatusCode> {
    let (remote, local) = (
        PrincipalName::parse(&m.remote_user)?,
        PrincipalName::parse(&m.local_user)?,
    );
    s.zone
        .federation()
        .map_user(&c, &ZoneName::parse(&name)?, &remote, &local)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/v1/zones/{name}/users/{user}", tag = "federation",
    params(("name" = String, Path), ("user" = String, Path)), responses((status = 204)))]
pub async fn unmap_user(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath((name, user)): WirePath<(String, String)>,
) -> ApiResult<StatusCode> {
    s.zone
        .federation()
        .unmap_user(&c, &ZoneName::parse(&name)?, &PrincipalName::parse(&user)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
