//! `/search/<collection>`: `weft find` from the Data page. The form's fields read into the
//! zone's `FindQuery` (a name without wildcards matches as a part of names; conditions
//! parse as `--meta` does); the zone searches what the user may read.

use super::data::{named_path, page_user, PAGE};
use crate::extract::QueryPairs;
use crate::web::templates::{self, Crumbs, SearchView, Typed};
use crate::web::{paths, WebError, WebUser};
use crate::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, Uri};
use std::sync::Arc;
use weft_types::{Error, LogicalPath, MetaCondition, NodeKind};
use weft_zone::namespace::FindQuery;

/// What the query string holds: the form as typed and the page asked for.
pub fn typed(q: &QueryPairs) -> Result<(Typed, Option<i64>), Error> {
    let typed = Typed {
        name: q.get("name").unwrap_or("").trim().to_owned(),
        meta: q
            .all("meta")
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .collect(),
        kind: q.get("kind").unwrap_or("").to_owned(),
    };
    let after = q
        .get("after")
        .map(|a| {
            a.parse::<i64>()
                .map_err(|_| Error::invalid(format!("after={a:?} is not a page of this search")))
        })
        .transpose()?;
    Ok((typed, after))
}

/// Whether the form asks anything (an empty form shows no results yet).
fn asks(t: &Typed) -> bool {
    !t.name.is_empty() || !t.meta.is_empty() || !t.kind.is_empty()
}

/// The zone's query for the form below `root`. A name with `*` or `?` is a glob over
/// names, as `weft find --name` takes it; any other is a part of names.
pub fn query(root: &LogicalPath, t: &Typed, after: Option<i64>) -> Result<FindQuery, Error> {
    let name_glob = match t.name.as_str() {
        "" => None,
        n if n.contains(['*', '?']) => Some(n.to_owned()),
        n => Some(format!("*{n}*")),
    };
    let meta = t
        .meta
        .iter()
        .map(|m| MetaCondition::parse(m))
        .collect::<Result<Vec<_>, _>>()?;
    let kind = match t.kind.as_str() {
        "" => None,
        "object" => Some(NodeKind::Object),
        "collection" => Some(NodeKind::Collection),
        other => {
            return Err(Error::invalid(format!(
                "kind={other:?}: search for object or collection, or leave it empty"
            )))
        }
    };
    Ok(FindQuery {
        root: root.clone(),
        name_glob,
        meta,
        kind,
        after_id: after.map(weft_zone::namespace::NodeId),
        limit: PAGE,
    })
}

/// The URL of the page after `cursor` of the search `t` below `root`.
fn next_url(root: &LogicalPath, t: &Typed, cursor: &str) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("name", &t.name);
    for m in &t.meta {
        q.append_pair("meta", m);
    }
    q.append_pair("kind", &t.kind);
    q.append_pair("after", cursor);
    format!("{}?{}", paths::to_url("/search", root), q.finish())
}

pub async fn show(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    uri: Uri,
    q: QueryPairs,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let root = named_path(&uri, "/search", "search below what").map_err(fail)?;
    let (typed, after) = typed(&q).map_err(fail)?;
    let caller = &user.session.caller;
    // Reading the collection first: who may not gets the refusal page, not a form.
    s.zone.namespace().stat(caller, &root).await.map_err(fail)?;
    let page_user = page_user(&s, &user);
    let crumbs = Crumbs::of(&root);
    let mut view = SearchView {
        root: &root,
        typed: &typed,
        found: None,
        next: None,
        first_page: after.is_none(),
        problem: None,
    };
    if !asks(&typed) {
        return Ok(templates::search(&page_user, &crumbs, &view).into_response());
    }
    let found = match query(&root, &typed, after) {
        Ok(fq) => s.zone.namespace().find(caller, fq).await,
        Err(e) => Err(e),
    };
    match found {
        Ok((nodes, next)) => {
            view.next = next.map(|c| next_url(&root, &typed, &c));
            view.found = Some(nodes.as_slice());
            Ok(templates::search(&page_user, &crumbs, &view).into_response())
        }
        Err(e) if crate::error::status_of(e.code) == http::StatusCode::BAD_REQUEST => {
            view.problem = Some(&e);
            let page = templates::search(&page_user, &crumbs, &view);
            Ok((StatusCode::BAD_REQUEST, page).into_response())
        }
        Err(e) => Err(fail(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_types::MetaOp;

    fn q(s: &str) -> QueryPairs {
        QueryPairs(form_urlencoded::parse(s.as_bytes()).into_owned().collect())
    }

    fn root() -> LogicalPath {
        LogicalPath::parse("/t/home/alice").unwrap()
    }

    #[test]
    fn names_are_parts_unless_they_are_globs() {
        let (t, after) = typed(&q("name=%20movie%20&meta=&meta=+voltage%3E%3D200+&after=42")).unwrap();
        assert_eq!(
            (t.name.as_str(), t.meta.clone(), after),
            ("movie", vec!["voltage>=200".to_owned()], Some(42))
        );
        let fq = query(&root(), &t, after).unwrap();
        assert_eq!(fq.name_glob.as_deref(), Some("*movie*"));
        assert_eq!(fq.meta[0].op, MetaOp::Ge);
        assert_eq!(
            (fq.after_id, fq.limit, fq.kind),
            (Some(weft_zone::namespace::NodeId(42)), PAGE, None)
        );
        let (t, _) = typed(&q("name=*.mrc&kind=object")).unwrap();
        let fq = query(&root(), &t, None).unwrap();
        assert_eq!(
            (fq.name_glob.as_deref(), fq.kind),
            (Some("*.mrc"), Some(NodeKind::Object))
        );
        let (t, _) = typed(&q("")).unwrap();
        assert!(!asks(&t));
    }

    #[test]
    fn bad_conditions_and_pages_are_refused() {
        assert!(typed(&q("after=soon")).is_err());
        for bad in ["meta=voltage", "meta=voltage%3Ehigh", "meta=%3Dx", "kind=file"] {
            let (t, after) = typed(&q(bad)).unwrap();
            assert!(query(&root(), &t, after).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_next_page_keeps_the_search() {
        let t = Typed {
            name: "a b".into(),
            meta: vec!["x=1".into(), "y<2".into()],
            kind: String::new(),
        };
        let url = next_url(&LogicalPath::parse("/t/a b").unwrap(), &t, "77");
        assert_eq!(
            url,
            "/search/t/a%20b?name=a+b&meta=x%3D1&meta=y%3C2&kind=&after=77"
        );
        let (back, after) = typed(&q(url.split_once('?').unwrap().1)).unwrap();
        assert_eq!((back, after), (t, Some(77)));
    }
}
