//! Principals, tokens, ACLs and resources.

use crate::auth::Authed;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::extract::{PathParam, QueryPairs, WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use weft_types::wire::{
    AclRequest, AclWire, AuditWire, NewGroup, NewResourceWire, NewUser, Page, PrincipalWire, QuotaRequest,
    QuotaWire, ResourceWire, TokenCreated, TokenRequest, TokenWire, WhoAmI,
};
use weft_types::{ErrorCode, LogicalPath, Permission, PrincipalName, ResourceKind, ResourceName};
use weft_zone::PrincipalKind;

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

#[utoipa::path(post, path = "/api/v1/tokens", tag = "principals", request_body = TokenRequest,
    responses((status = 201, body = TokenCreated)))]
pub async fn create_token(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<TokenRequest>,
) -> ApiResult<(StatusCode, Json<TokenCreated>)> {
    let user = r.user.as_deref().map(PrincipalName::parse).transpose()?;
    let t = s
        .zone
        .access()
        .create_token(&c, user.as_ref(), &r.label, r.ttl_seconds)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            user: t.user.to_string(),
            token: t.secret,
            expires: t.expires,
        }),
    ))
}

#[utoipa::path(get, path = "/api/v1/tokens", tag = "principals",
    responses((status = 200, body = Vec<TokenWire>, description = "newest first: the caller's, an administrator's everyone's")))]
pub async fn list_tokens(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<TokenWire>>> {
    let tokens = s.zone.access().tokens(&c).await?;
    Ok(Json(
        tokens
            .into_iter()
            .map(|t| TokenWire {
                id: t.token.id,
                user: t.user.to_string(),
                label: t.token.label,
                created: t.token.created,
                expires: t.token.expires,
            })
            .collect(),
    ))
}

#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "principals", params(("id" = i64, Path)),
    responses((status = 204, description = "deleted, with the web sessions opened with it")))]
pub async fn delete_token(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
) -> ApiResult<StatusCode> {
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::new(ErrorCode::InvalidArgument, format!("{id:?} is not a token id")))?;
    s.zone.access().delete_token(&c, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/acl/{path}", tag = "access", params(("path" = String, Path)),
    responses((status = 200, body = Vec<AclWire>)))]
pub async fn list_acl(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
) -> ApiResult<Json<Vec<AclWire>>> {
    Ok(Json(
        s.zone
            .access()
            .acl(&c, &p)
            .await?
            .iter()
            .map(convert::acl)
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/acl/{path}", tag = "access", params(("path" = String, Path)),
    request_body = AclRequest, responses((status = 204), (status = 403, body = weft_types::wire::ErrorBody)))]
pub async fn set_acl(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    PathParam(p): PathParam,
    WireJson(r): WireJson<AclRequest>,
) -> ApiResult<StatusCode> {
    let principal = PrincipalName::parse(&r.principal)?;
    s.zone
        .access()
        .set_acl(&c, &p, &principal, Permission::parse(&r.permission)?, r.recursive)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/resources", tag = "resources", responses((status = 200, body = Vec<ResourceWire>)))]
pub async fn list_resources(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<ResourceWire>>> {
    Ok(Json(
        s.zone
            .resources()
            .list(&c)
            .await?
            .iter()
            .map(convert::resource)
            .collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/resources", tag = "resources", request_body = NewResourceWire,
    responses((status = 201, body = ResourceWire)))]
pub async fn add_resource(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<NewResourceWire>,
) -> ApiResult<(StatusCode, Json<ResourceWire>)> {
    let name = ResourceName::parse(&r.name)?;
    let kind = ResourceKind::parse(&r.kind)?;
    let info = s
        .zone
        .resources()
        .add(&c, &name, kind, &r.settings, &r.tier, r.default)
        .await?;
    Ok((StatusCode::CREATED, Json(convert::resource(&info))))
}

#[utoipa::path(get, path = "/api/v1/quotas", tag = "quotas", responses((status = 200, body = Vec<QuotaWire>)))]
pub async fn list_quotas(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<QuotaWire>>> {
    Ok(Json(
        s.zone
            .access()
            .quotas(&c)
            .await?
            .into_iter()
            .map(|q| QuotaWire {
                principal: q.quota.principal.name.to_string(),
                kind: q.quota.principal.kind.as_str().to_owned(),
                resource: q.quota.resource.map(|r| r.to_string()),
                max_bytes: q.quota.max_bytes,
                max_objects: q.quota.max_objects,
                used_bytes: q.used.bytes,
                used_objects: q.used.objects,
                reserved_bytes: q.used.reserved,
            })
            .collect(),
    ))
}

#[utoipa::path(put, path = "/api/v1/quotas", tag = "quotas", request_body = QuotaRequest, responses((status = 204)))]
pub async fn set_quota(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(q): WireJson<QuotaRequest>,
) -> ApiResult<StatusCode> {
    let principal = PrincipalName::parse(&q.principal)?;
    let resource = q.resource.as_deref().map(ResourceName::parse).transpose()?;
    s.zone
        .access()
        .set_quota(&c, &principal, resource.as_ref(), q.max_bytes, q.max_objects)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/v1/quotas/{principal}", tag = "quotas",
    params(("principal" = String, Path), ("resource" = Option<String>, Query, description = "the quota on this resource; absent: the one on all")),
    responses((status = 204)))]
pub async fn remove_quota(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(principal): WirePath<String>,
    q: QueryPairs,
) -> ApiResult<StatusCode> {
    let principal = PrincipalName::parse(&principal)?;
    let resource = q.get("resource").map(ResourceName::parse).transpose()?;
    s.zone
        .access()
        .remove_quota(&c, &principal, resource.as_ref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/v1/resources/{name}", tag = "resources", params(("name" = String, Path)),
    responses((status = 204)))]
pub async fn remove_resource(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone
        .resources()
        .remove(&c, &ResourceName::parse(&name)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/audit", tag = "zone",
    params(("path" = Option<String>, Query, description = "entries about this path or below it"),
        ("user" = Option<String>, Query, description = "entries of this actor"),
        ("since" = Option<i64>, Query, description = "entries at or after this time (ms since the epoch)"),
        ("cursor" = Option<String>, Query), ("limit" = Option<u32>, Query, description = "at most 1000")),
    responses((status = 200, description = "newest first (administrators)", body = Page<AuditWire>)))]
pub async fn audit(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    q: QueryPairs,
) -> ApiResult<Json<Page<AuditWire>>> {
    let before = q
        .get("cursor")
        .map(|c| {
            c.parse::<i64>()
                .map_err(|_| ApiError::new(ErrorCode::InvalidArgument, "cursor is not one this zone issued"))
        })
        .transpose()?;
    let query = weft_zone::AuditQuery {
        path: q.get("path").map(LogicalPath::parse).transpose()?,
        actor: q.get("user").map(str::to_owned),
        since: q.number::<i64>("since")?,
        before,
        limit: q.number::<u32>("limit")?.unwrap_or(100),
    };
    let (entries, next) = s.zone.access().audit_log(&c, query).await?;
    Ok(Json(Page {
        items: entries
            .into_iter()
            .map(|e| AuditWire {
                id: e.id,
                at: e.at,
                actor: e.actor,
                origin: e.origin,
                request_id: e.request_id,
                action: e.action,
                path: e.path.map(|p| p.to_string()),
                detail: e.detail,
                items: e.items,
            })
            .collect(),
        next_cursor: next.map(|n| n.to_string()),
    }))
}
