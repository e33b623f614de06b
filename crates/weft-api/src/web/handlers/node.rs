//! The page of one node, a data object's (`/data/<object>`) or a collection's details
//! (`/details/<collection>`): everything on it read through the zone's use cases as the
//! session's caller, and what it offers decided by the caller's permission.

use super::data::{is_protected, named_path, page_user};
use crate::extract::QueryPairs;
use crate::web::templates::{self, AclView, Crumbs, Done, NodeView, Outcome, Part};
use crate::web::{FormFields, WebError, WebUser};
use crate::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::Uri;
use std::sync::Arc;
use weft_types::{Error, ErrorCode, LogicalPath, NodeKind, Permission};

/// `/details/<path>`.
pub async fn details(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    uri: Uri,
    q: QueryPairs,
) -> Result<Response, WebError> {
    let path = named_path(&uri, "/details", "details of what").map_err(|e| WebError::of(&user, e))?;
    show(&s, &user, &path, &q).await
}

/// The page of `path` as a GET shows it: `done=` names the action just taken, `edit=` the
/// metadata row to show as a form.
pub async fn show(
    s: &Arc<AppState>,
    user: &WebUser,
    path: &LogicalPath,
    q: &QueryPairs,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(user, e);
    let outcome = q
        .get("done")
        .and_then(Done::parse)
        .map_or(Outcome::Nothing, Outcome::Done);
    let editing = q
        .get("edit")
        .map(|e| {
            e.parse::<usize>()
                .map_err(|_| Error::invalid(format!("edit={e:?} is not a row of the metadata")))
        })
        .transpose()
        .map_err(fail)?;
    render(s, user, path, &outcome, editing).await.map_err(fail)
}

/// The page of `path` after an action the zone refused: the error in the section it
/// belongs to, the form as it was filled, and the error's status. When the page itself
/// cannot be shown (the user may not read the node) the refusal is the plain error page.
pub async fn refused(
    s: &Arc<AppState>,
    user: &WebUser,
    path: &LogicalPath,
    section: Part,
    error: Error,
    form: &FormFields,
) -> Response {
    let status = crate::error::status_of(error.code);
    let outcome = Outcome::Failed {
        section,
        error: error.clone(),
        form: form.typed(),
    };
    match render(s, user, path, &outcome, None).await {
        Ok(page) => (status, page).into_response(),
        Err(_) => WebError::of(user, error).into_response(),
    }
}

async fn render(
    s: &Arc<AppState>,
    user: &WebUser,
    path: &LogicalPath,
    outcome: &Outcome,
    editing: Option<usize>,
) -> Result<Response, Error> {
    let caller = &user.session.caller;
    let info = s.zone.namespace().stat(caller, path).await?;
    let held = s.zone.access().permission(caller, path).await?;
    let meta = s.zone.namespace().list_meta(caller, path).await?;
    let acl = match held {
        Permission::Own => Some(acl_view(s, user, path).await?),
        _ => None,
    };
    let targets = if held >= Permission::Write {
        s.zone.namespace().replica_targets(caller).await?
    } else {
        Vec::new()
    };
    let distribution = match info.node.kind {
        NodeKind::Collection => Some(s.zone.namespace().distribution(caller, path).await?),
        NodeKind::Object => None,
    };
    let view = NodeView {
        info: &info,
        held,
        meta: &meta,
        acl: acl.as_ref(),
        targets: &targets,
        distribution: distribution.as_ref(),
        editing,
        outcome,
        protected: is_protected(s, path),
    };
    let page_user = page_user(s, user);
    let crumbs = Crumbs::of(path);
    Ok(match info.node.kind {
        NodeKind::Object => templates::object(&page_user, &crumbs, &view).into_response(),
        NodeKind::Collection => templates::details(&page_user, &crumbs, &view).into_response(),
    })
}

/// The node's own ACL entries and those of the collections above it that the user may
/// read: a permission on a collection holds below it.
async fn acl_view(s: &Arc<AppState>, user: &WebUser, path: &LogicalPath) -> Result<AclView, Error> {
    let caller = &user.session.caller;
    let own = s.zone.access().acl(caller, path).await?;
    let mut inherited = Vec::new();
    let mut above = path.parent();
    while let Some(p) = above {
        match s.zone.access().acl(caller, &p).await {
            Ok(entries) if !entries.is_empty() => inherited.push((p.clone(), entries)),
            Ok(_) => {}
            // What the user may not read of the collections above stays unshown.
            Err(e) if e.code == ErrorCode::Forbidden => {}
            Err(e) => return Err(e),
        }
        above = p.parent();
    }
    Ok(AclView { own, inherited })
}
