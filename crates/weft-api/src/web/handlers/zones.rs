//! The Zones page, through weft-zone's federation use case (which probes each peer's
//! health, a few seconds at most) and, for administrators, the space of resources and
//! staging areas.

use crate::web::templates::{self, Zones};
use crate::web::{WebError, WebUser};
use crate::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// `GET /zones`.
pub async fn page(State(s): State<Arc<AppState>>, user: WebUser) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let caller = &user.session.caller;
    let peers = s.zone.federation().zones(caller).await.map_err(fail)?;
    let (resources, staging) = if caller.is_admin {
        let (r, st) = tokio::try_join!(
            s.zone.resources().space(caller),
            s.zone.resources().staging_space(caller)
        )
        .map_err(fail)?;
        (Some(r), Some(st))
    } else {
        (None, None)
    };
    let v = Zones {
        peers: &peers,
        resources: resources.as_deref(),
        staging: staging.as_deref(),
    };
    Ok(templates::zones(&user.page(), &v).into_response())
}
