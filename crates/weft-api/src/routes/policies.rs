//! Policies (administrators) and QoS requirements (anyone with `write` on the path).

use crate::auth::Authed;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryPairs, WireJson, WirePath};
use crate::AppState;
use axum::extract::State;
use axum::Json;
use http::StatusCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use weft_types::wire::{
    ActionTestWire, PlannedTransferWire, PolicyFailureWire, PolicyRequest, PolicyRuleWire, PolicyStatusWire,
    QosRequest, QosWire, RuleTestWire,
};
use weft_types::{ErrorCode, LogicalPath, TaskState};
use weft_zone::policy::{describe, describe_trigger, PolicyRuleInfo, QosInfo, RuleStatus, RuleTest};

/// This file's routes, each with its OpenAPI entry.
pub fn router() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::default()
        .routes(routes!(list, apply))
        .routes(routes!(remove))
        .routes(routes!(try_rules))
        .routes(routes!(rule_status))
        .routes(routes!(add_qos, list_qos))
        .routes(routes!(remove_qos))
}

fn rule(r: &PolicyRuleInfo) -> PolicyRuleWire {
    PolicyRuleWire {
        name: r.rule.name.clone(),
        trigger: describe_trigger(&r.rule.trigger),
        actions: r.rule.actions.iter().map(describe).collect(),
        definition: serde_json::to_value(&r.rule).unwrap_or_default(),
        updated: r.updated,
        last_run: r.last_run,
    }
}

fn status(s: &RuleStatus) -> PolicyStatusWire {
    let count = |state: TaskState| {
        s.counts
            .iter()
            .find(|(st, _)| *st == state)
            .map_or(0, |(_, n)| *n)
    };
    PolicyStatusWire {
        rule: s.rule.clone(),
        last_run: s.last_run,
        pending: count(TaskState::Pending),
        waiting: count(TaskState::Waiting),
        done: count(TaskState::Done),
        failed: count(TaskState::Failed),
        failures: s
            .failures
            .iter()
            .map(|t| PolicyFailureWire {
                path: t.path.to_string(),
                action: t
                    .action
                    .decode()
                    .map(|a| describe(&a))
                    .unwrap_or_else(|_| t.action.as_str().to_owned()),
                error: t.error.clone().unwrap_or_default(),
                attempts: t.attempts,
                at: t.updated,
            })
            .collect(),
    }
}

fn test(t: &RuleTest) -> RuleTestWire {
    RuleTestWire {
        rule: t.rule.clone(),
        trigger: t.trigger.clone(),
        objects: t.objects,
        bytes: t.bytes,
        actions: t
            .actions
            .iter()
            .map(|a| ActionTestWire {
                action: a.action.clone(),
                objects: a.objects,
                bytes: a.bytes,
                transfers: a
                    .transfers
                    .iter()
                    .map(|(to, files, bytes)| PlannedTransferWire {
                        to: to.clone(),
                        files: *files,
                        bytes: *bytes,
                    })
                    .collect(),
                errors: a.errors.clone(),
            })
            .collect(),
    }
}

fn qos(q: &QosInfo) -> QosWire {
    QosWire {
        id: q.record.id.0,
        path: q.record.path.to_string(),
        expression: q.record.expression.clone(),
        replicas: q.expression.replicas,
        status: q.record.status.to_string(),
        reason: q.record.reason.clone(),
        evaluated: q.record.evaluated,
        created: q.record.created,
    }
}

#[utoipa::path(get, path = "/api/v1/policies", tag = "policies",
    responses((status = 200, body = Vec<PolicyRuleWire>)))]
pub async fn list(State(s): State<Arc<AppState>>, Authed(c): Authed) -> ApiResult<Json<Vec<PolicyRuleWire>>> {
    Ok(Json(s.zone.policy().list(&c).await?.iter().map(rule).collect()))
}

#[utoipa::path(post, path = "/api/v1/policies", tag = "policies", request_body = PolicyRequest,
    responses((status = 201, body = Vec<PolicyRuleWire>, description = "the rules loaded"),
        (status = 400, body = weft_types::wire::ErrorBody, description = "`invalid_policy` naming line and field; nothing is loaded")))]
pub async fn apply(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<PolicyRequest>,
) -> ApiResult<(StatusCode, Json<Vec<PolicyRuleWire>>)> {
    let rules = s.zone.policy().apply(&c, &r.source).await?;
    Ok((StatusCode::CREATED, Json(rules.iter().map(rule).collect())))
}

#[utoipa::path(delete, path = "/api/v1/policies/{name}", tag = "policies",
    params(("name" = String, Path)), responses((status = 204)))]
pub async fn remove(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(name): WirePath<String>,
) -> ApiResult<StatusCode> {
    s.zone.policy().remove(&c, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/policies/test", tag = "policies", request_body = PolicyRequest,
    responses((status = 200, body = Vec<RuleTestWire>, description = "what would fire; nothing is done")))]
pub async fn try_rules(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<PolicyRequest>,
) -> ApiResult<Json<Vec<RuleTestWire>>> {
    let path = r
        .path
        .as_deref()
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidArgument, "name the path to test the rules on"))?;
    let path = LogicalPath::parse(path)?;
    let tests = s.zone.policy().test(&c, &r.source, &path).await?;
    Ok(Json(tests.iter().map(test).collect()))
}

#[utoipa::path(get, path = "/api/v1/policies/status", tag = "policies",
    responses((status = 200, body = Vec<PolicyStatusWire>)))]
pub async fn rule_status(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
) -> ApiResult<Json<Vec<PolicyStatusWire>>> {
    Ok(Json(
        s.zone.policy().status(&c).await?.iter().map(status).collect(),
    ))
}

#[utoipa::path(post, path = "/api/v1/qos", tag = "qos", request_body = QosRequest,
    responses((status = 201, body = QosWire)))]
pub async fn add_qos(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WireJson(r): WireJson<QosRequest>,
) -> ApiResult<(StatusCode, Json<QosWire>)> {
    let path = LogicalPath::parse(&r.path)?;
    let info = s.zone.policy().add_qos(&c, &path, &r.expression).await?;
    Ok((StatusCode::CREATED, Json(qos(&info))))
}

#[utoipa::path(get, path = "/api/v1/qos", tag = "qos",
    params(("path" = String, Query, description = "requirements on it, above it and below it")),
    responses((status = 200, body = Vec<QosWire>)))]
pub async fn list_qos(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    q: QueryPairs,
) -> ApiResult<Json<Vec<QosWire>>> {
    let path = q
        .get("path")
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidArgument, "name a path: ?path=/ZONE/..."))?;
    let path = LogicalPath::parse(path)?;
    Ok(Json(
        s.zone.policy().qos(&c, &path).await?.iter().map(qos).collect(),
    ))
}

#[utoipa::path(delete, path = "/api/v1/qos/{id}", tag = "qos",
    params(("id" = i64, Path)), responses((status = 204)))]
pub async fn remove_qos(
    State(s): State<Arc<AppState>>,
    Authed(c): Authed,
    WirePath(id): WirePath<String>,
) -> ApiResult<StatusCode> {
    let id: i64 = id.parse().map_err(|_| {
        ApiError::new(
            ErrorCode::InvalidArgument,
            format!("{id:?} is not a QoS requirement id"),
        )
    })?;
    s.zone
        .policy()
        .remove_qos(&c, weft_zone::policy::QosId(id))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
