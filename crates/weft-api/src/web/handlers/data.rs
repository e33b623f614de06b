//! The Data pages: a collection's listing (sorted, paged by key; an object's page is
//! `node.rs`'s), and the listing's actions (new collection, delete after a confirmation),
//! with what every posted action goes through first (`Posted`). Uploads and downloads go
//! through the REST routes from the page, with the session's cookie.

use super::login;
use crate::extract::QueryPairs;
use crate::web::templates::{self, Crumbs, Listed, PageUser};
use crate::web::{paths, session, FormFields, WebError, WebUser};
use crate::AppState;
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::Uri;
use std::sync::Arc;
use weft_types::{Error, LogicalPath, NodeKind, Permission};
use weft_zone::namespace::{ChildKey, ChildOrder, ChildSort};

/// Entries per page of a listing.
pub const PAGE: u32 = 100;

/// The logical path a request's URL names after `prefix`; `None` for none at all.
fn path_of(uri: &Uri, prefix: &str) -> Result<Option<LogicalPath>, Error> {
    let rest = uri.path().strip_prefix(prefix).unwrap_or("");
    paths::from_url(rest)
}

/// The order and page a listing's query asks for: `sort` (`name`, `size`, `modified`),
/// `desc=1`, and the key of the last entry of the page before (`after`, a name, with
/// `key`, its size or time, when not sorted by name).
pub fn list_query(q: &QueryPairs) -> Result<(ChildOrder, Option<ChildKey>), Error> {
    let by = match q.get("sort").unwrap_or("name") {
        "name" => ChildSort::Name,
        "size" => ChildSort::Size,
        "modified" => ChildSort::Modified,
        other => {
            return Err(Error::invalid(format!(
                "sort={other:?}: sort by name, size or modified"
            )))
        }
    };
    let descending = match q.get("desc").unwrap_or("0") {
        "0" => false,
        "1" => true,
        other => return Err(Error::invalid(format!("desc={other:?} is not 0 or 1"))),
    };
    let after = match (q.get("after"), q.get("key")) {
        (None, None) => None,
        (Some(name), key) => {
            let key = match (by, key) {
                (ChildSort::Name, _) => 0,
                (_, Some(k)) => k
                    .parse()
                    .map_err(|_| Error::invalid(format!("key={k:?} is not a number")))?,
                (_, None) => return Err(Error::invalid("after= needs key= when not sorted by name")),
            };
            Some(ChildKey {
                key,
                name: name.to_owned(),
            })
        }
        (None, Some(_)) => return Err(Error::invalid("key= needs after=")),
    };
    Ok((ChildOrder { by, descending }, after))
}

/// `/data/<path>`: a collection's listing or an object's details.
pub async fn show(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    uri: Uri,
    q: QueryPairs,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let Some(path) = path_of(&uri, "/data").map_err(fail)? else {
        return Ok(Redirect::to(&login::home_of(&s, &user.session.caller)).into_response());
    };
    let caller = &user.session.caller;
    let info = s.zone.namespace().stat(caller, &path).await.map_err(fail)?;
    let held = s.zone.access().permission(caller, &path).await.map_err(fail)?;
    let page_user = page_user(&s, &user);
    let crumbs = Crumbs::of(&path);
    match info.node.kind {
        NodeKind::Collection => {
            let (order, after) = list_query(&q).map_err(fail)?;
            let listing = s
                .zone
                .namespace()
                .list_in(caller, &path, order, after.as_ref(), PAGE)
                .await
                .map_err(fail)?;
            // What the instrument side says of it: its dataset's state, extraction on.
            let meta = s.zone.namespace().list_meta(caller, &path).await.map_err(fail)?;
            let value_of = |attr: &str| meta.iter().find(|a| a.attr == attr).map(|a| a.value.as_str());
            let view = Listed {
                node: &info.node,
                dataset: value_of(weft_types::meta::DATASET),
                extract_on: value_of(weft_types::meta::EXTRACT_ON.0) == Some(weft_types::meta::EXTRACT_ON.1),
                pid: info.pid.as_deref(),
                items: &listing.items,
                order,
                first_page: after.is_none(),
                next: listing.next.as_ref(),
                can_write: held >= Permission::Write,
                can_delete: held >= Permission::Write && !is_protected(&s, &path),
            };
            Ok(templates::collection(&page_user, &crumbs, &view).into_response())
        }
        NodeKind::Object => super::node::show(&s, &user, &path, &q).await,
    }
}

/// Collections whose removal the interface does not offer, however many rights the user
/// holds: the zone root and the `home` collection of every user. The CLI still can.
pub(super) fn is_protected(s: &AppState, path: &LogicalPath) -> bool {
    let home = LogicalPath::zone_root(s.zone.name()).join("home");
    path.is_zone_root() || home.is_ok_and(|h| &h == path || path.parent().as_ref() == Some(&h))
}

pub(super) fn page_user<'a>(s: &'a AppState, user: &'a WebUser) -> PageUser<'a> {
    PageUser {
        zone: s.zone.name().as_str(),
        name: user.session.caller.name.as_str(),
        csrf: &user.session.csrf,
    }
}

/// The path a page's URL names after its route's prefix (`/details`, `/search`): `what`
/// says what is missing when it names none.
pub(super) fn named_path(uri: &Uri, prefix: &str, what: &str) -> Result<LogicalPath, Error> {
    path_of(uri, prefix)?.ok_or_else(|| Error::invalid(format!("{what}: this address names no path")))
}

/// The first segment of a URL's path: `/delete` of `/delete/t/home/x`.
fn route_of(path: &str) -> &str {
    match path.get(1..).and_then(|rest| rest.find('/')) {
        Some(i) => &path[..=i],
        None => path,
    }
}

/// An action posted by a page: its session, the path its URL names after the route's
/// first segment (`/delete/t/home/x` → `/t/home/x`) and its form, once the CSRF rule
/// holds. What every action checks before it changes anything.
pub struct Posted {
    pub user: WebUser,
    pub path: LogicalPath,
    pub form: FormFields,
}

impl FromRequest<Arc<AppState>> for Posted {
    type Rejection = Response;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let user = WebUser::from_request_parts(&mut parts, state).await?;
        let (uri, headers) = (parts.uri.clone(), parts.headers.clone());
        let form = FormFields::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        let checked = session::check_csrf(&headers, &user.session, form.get("csrf"))
            .and_then(|()| named_path(&uri, route_of(uri.path()), "this action"));
        match checked {
            Ok(path) => Ok(Posted { user, path, form }),
            Err(e) => Err(WebError::of(&user, e).into_response()),
        }
    }
}

/// `POST /new-collection/<parent>` (`name`): makes a collection and shows it.
pub async fn new_collection(State(s): State<Arc<AppState>>, posted: Posted) -> Result<Response, WebError> {
    let Posted {
        user,
        path: parent,
        form,
    } = posted;
    let fail = |e| WebError::of(&user, e);
    let name = form.get("name").map(str::trim).unwrap_or("");
    if name.is_empty() {
        return Err(fail(Error::new(
            weft_types::ErrorCode::InvalidName,
            "give the new collection a name",
        )));
    }
    let path = paths::child(&parent, name).map_err(fail)?;
    s.zone
        .namespace()
        .mkdir(&user.session.caller, &path, false)
        .await
        .map_err(fail)?;
    Ok(Redirect::to(&paths::to_url("/data", &path)).into_response())
}

/// `GET /delete/<path>`: what deleting would remove, and the button that does it.
pub async fn confirm_delete(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    uri: Uri,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let path = named_path(&uri, "/delete", "nothing to delete").map_err(fail)?;
    let info = s
        .zone
        .namespace()
        .stat(&user.session.caller, &path)
        .await
        .map_err(fail)?;
    if info.node.kind == NodeKind::Collection && is_protected(&s, &path) {
        return Err(fail(protected(&path)));
    }
    let crumbs = Crumbs::of(&path);
    Ok(templates::confirm_delete(&page_user(&s, &user), &crumbs, &info.node).into_response())
}

pub(super) fn protected(path: &LogicalPath) -> Error {
    Error::forbidden(format!(
        "{path} is a zone root or a home collection; the web interface does not move or delete those"
    ))
}

/// `POST /delete/<path>`: deletes an object, or a collection with everything in it, and
/// shows the collection it was in.
pub async fn delete(State(s): State<Arc<AppState>>, posted: Posted) -> Result<Response, WebError> {
    let Posted { user, path, .. } = posted;
    let fail = |e| WebError::of(&user, e);
    if is_protected(&s, &path) {
        return Err(fail(protected(&path)));
    }
    s.zone
        .namespace()
        .remove(&user.session.caller, &path, true)
        .await
        .map_err(fail)?;
    let parent = path.parent().unwrap_or_else(|| path.clone());
    Ok(Redirect::to(&paths::to_url("/data", &parent)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> QueryPairs {
        QueryPairs(form_urlencoded::parse(s.as_bytes()).into_owned().collect())
    }

    #[test]
    fn an_action_names_its_path_after_its_route() {
        assert_eq!(route_of("/delete/t/home/x"), "/delete");
        assert_eq!(route_of("/mint-pid/t"), "/mint-pid");
        assert_eq!(route_of("/meta"), "/meta");
        assert_eq!(route_of("/"), "/");
    }

    #[test]
    fn listing_queries_are_read_or_refused() {
        let (o, a) = list_query(&q("")).unwrap();
        assert_eq!((o.by, o.descending, a), (ChildSort::Name, false, None));
        let (o, a) = list_query(&q("sort=size&desc=1&after=x%20y&key=42")).unwrap();
        assert_eq!((o.by, o.descending), (ChildSort::Size, true));
        assert_eq!(
            a,
            Some(ChildKey {
                key: 42,
                name: "x y".into()
            })
        );
        let (_, a) = list_query(&q("after=b")).unwrap();
        assert_eq!(a.unwrap().name, "b");
        for bad in [
            "sort=owner",
            "desc=yes",
            "sort=size&after=x",
            "key=3",
            "sort=modified&after=x&key=soon",
        ] {
            assert!(list_query(&q(bad)).is_err(), "{bad}");
        }
    }
}
