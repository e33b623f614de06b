//! The Policies page, through weft-zone's policy and QoS use cases: the rules and their
//! status for administrators, the QoS requirements the user may read.

use crate::web::templates::{self, Policies};
use crate::web::{WebError, WebUser};
use crate::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use weft_types::LogicalPath;

/// `GET /policies`.
pub async fn page(State(s): State<Arc<AppState>>, user: WebUser) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let caller = &user.session.caller;
    let rules = if caller.is_admin {
        let (rules, status) =
            tokio::try_join!(s.zone.policy().list(caller), s.zone.policy().status(caller)).map_err(fail)?;
        Some((rules, status))
    } else {
        None
    };
    // An administrator reads every requirement of the zone; a user those on and below
    // their home, and above it.
    let root = LogicalPath::zone_root(s.zone.name());
    let scope = if caller.is_admin {
        root
    } else {
        root.join("home")
            .and_then(|h| h.join(caller.name.as_str()))
            .map_err(fail)?
    };
    let qos = s.zone.policy().qos(caller, &scope).await.map_err(fail)?;
    let v = Policies {
        rules: rules.as_ref().map(|(r, st)| (r.as_slice(), st.as_slice())),
        qos: &qos,
        qos_scope: scope.as_str(),
    };
    Ok(templates::policies(&user.page(), &v).into_response())
}
