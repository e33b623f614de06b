//! Principals: the caller (`whoami`), users, groups and the members of a group.

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
use weft_types::wire::{NewGroup, NewUser, PrincipalWire, WhoAmI};
use weft_types::PrincipalName;
use weft_zone::access::PrincipalKind;

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(whoami))
        .routes(routes!(list_users, add_user))
        .routes(routes!(remove_user))
        .routes(routes!(list_groups, add_group))
        .routes(routes!(remove_group))
        .routes(routes!(members))
        .routes(routes!(add_member, remove_member))
}

#[utoipa::path(get, path = "/api/v1/whoami", tag = "principals", responses((status = 200, body = WhoAmI)))]
pub async fn whoami(State(s): State<Arc<AppState>>, Authed(c): Authed) -> ApiResult<Json<WhoAmI>> {
    let groups = s.zone.access().group_names(&c).await?;
    Ok(Json(WhoAmI {
        user: c.name.to_string(),
        zone: s.zone.name().to_string(),
        admin: c.is_admin,
        home: format!("/{}/home/{}", s.zone.name(), c.name),
        groups,
    }))
}

#[utoipa::path(get, path = "/api/v1/users", tag = "principals", responses((status = 200, body = Vec<PrincipalWire>)))]
pub async fn list_users(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<PrincipalWire>>> {
    Ok(Json(
        s.zone
            .access()
            .principals(&c, PrincipalKind::User)
            .await?
            .iter()
            .map(convert::principal)
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/users", tag = "principals", request_body = NewUser,
    responses((status = 201, body = PrincipalWire), (status = 403, body = weft_types::wire::ErrorBody)))]
pub async fn add_user(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<NewUser>,
) -> ApiResult<(StatusCode, Json<PrincipalWire>)> {
    let p = s
        .zone
        .access()
        .add_user(&c, &PrincipalName::parse(&r.name)?, r.admin)
        .await?;
    Ok((StatusCode::CREATED, Json(convert::principal(&p))))
}

#[utoipa::path(delete, path = "/api/v1/users/{name}", tag = "principals", params(("name" = String, Path)),
    responses((status = 204)))]
pub async fn remove_user(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone
        .access()
        .remove_principal(&c, &PrincipalName::parse(&name)?, PrincipalKind::User)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/groups", tag = "principals", responses((status = 200, body = Vec<PrincipalWire>)))]
pub async fn list_groups(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<PrincipalWire>>> {
    Ok(Json(
        s.zone
            .access()
            .principals(&c, PrincipalKind::Group)
            .await?
            .iter()
            .map(convert::principal)
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/groups", tag = "principals", request_body = NewGroup,
    responses((status = 201, body = PrincipalWire)))]
pub async fn add_group(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<NewGroup>,
) -> ApiResult<(StatusCode, Json<PrincipalWire>)> {
    let p = s
        .zone
        .access()
        .add_group(&c, &PrincipalName::parse(&r.name)?)
        .await?;
    Ok((StatusCode::CREATED, Json(convert::principal(&p))))
}

#[utoipa::path(delete, path = "/api/v1/groups/{name}", tag = "principals", params(("name" = String, Path)),
    responses((status = 204)))]
pub async fn remove_group(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone
        .access()
        .remove_principal(&c, &PrincipalName::parse(&name)?, PrincipalKind::Group)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/groups/{name}/members", tag = "principals", params(("name" = String, Path)),
    responses((status = 200, body = Vec<PrincipalWire>)))]
pub async fn members(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<Json<Vec<PrincipalWire>>> {
    Ok(Json(
        s.zone
            .access()
            .members(&c, &PrincipalName::parse(&name)?)
            .await?
            .iter()
            .map(convert::principal)
            .collect(),
    ))
}

#[utoipa::path(put, path = "/api/v1/groups/{name}/members/{user}", tag = "principals",
    params(("name" = String, Path), ("user" = String, Path)), responses((status = 204)))]
pub async fn add_member(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath((group, user)): WirePath<(String, String)>,
) -> ApiResult<StatusCode> {
    s.zone
        .access()
        .edit_membership(
            &c,
            &PrincipalName::parse(&group)?,
            &PrincipalName::parse(&user)?,
            true,
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/v1/groups/{name}/members/{user}", tag = "principals",
    params(("name" = String, Path), ("user" = String, Path)), responses((status = 204)))]
pub async fn remove_member(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath((group, user)): WirePath<(String, String)>,
) -> ApiResult<StatusCode> {
    s.zone
        .access()
        .edit_membership(
            &c,
            &PrincipalName::parse(&group)?,
            &PrincipalName::parse(&user)?,
            false,
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
