//! The Transfers pages: the history with its filters, the map and the throughput charts,
//! a transfer's files, and starting and cancelling one. Each acts as the session's caller
//! through weft-zone's transfer use cases, which decide what it may see and do.

use crate::extract::QueryPairs;
use crate::web::svg::map;
use crate::web::templates::{self, Detail, History, Shown};
use crate::web::{FormFields, WebError, WebUser};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::HeaderMap;
use std::sync::Arc;
use weft_types::{Error, FileState, LogicalPath, PrincipalName, TransferId, TransferKind, TransferState};
use weft_zone::transfers::{ThroughputRange, TransferFilter, TransferSpec, Verify};

/// Transfers per page of the history.
pub const PAGE: u32 = 50;
/// Files per page of a transfer's detail.
const FILES_PAGE: u32 = 200;

/// A field that is absent or empty is no filter.
fn field<'a>(q: &'a QueryPairs, key: &str) -> Option<&'a str> {
    q.get(key).map(str::trim).filter(|v| !v.is_empty())
}

/// The filters, page and period a history URL asks for. Errors: `invalid_argument`.
fn shown(q: &QueryPairs) -> Result<(Shown, Option<(i64, TransferId)>), Error> {
    let range = match field(q, "range") {
        None | Some("hour") => None,
        Some("day") => Some(ThroughputRange::Day),
        Some("month") => Some(ThroughputRange::Month),
        Some(other) => return Err(Error::invalid(format!("range={other:?}: use hour, day or month"))),
    };
    let user = field(q, "user")
        .map(|u| PrincipalName::parse(u).map(|_| u.to_owned()))
        .transpose()?;
    let before = field(q, "before")
        .map(|b| {
            let (created, id) = b
                .split_once('.')
                .ok_or_else(|| Error::invalid(format!("before={b:?} is not CREATED.ID")))?;
            let created = created
                .parse()
                .map_err(|_| Error::invalid(format!("before={b:?}: {created:?} is not a time")))?;
            Ok::<_, Error>((created, TransferId::new(id)))
        })
        .transpose()?;
    Ok((
        Shown {
            state: field(q, "state").map(TransferState::parse).transpose()?,
            kind: field(q, "type").map(TransferKind::parse).transpose()?,
            user,
            range,
        },
        before,
    ))
}

/// `GET /transfers`: the map, the charts, the start form and a page of the history.
pub async fn history(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    q: QueryPairs,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let caller = &user.session.caller;
    let (shown, before) = shown(&q).map_err(fail)?;
    let filter = TransferFilter {
        owner: shown
            .user
            .as_deref()
            .map(PrincipalName::parse)
            .transpose()
            .map_err(fail)?,
        state: shown.state,
        kind: shown.kind,
        before: before.clone(),
        limit: PAGE,
    };
    let range = shown.range.unwrap_or(ThroughputRange::Hour);
    let (transfers, zone_map, throughput) = tokio::try_join!(
        s.zone.transfers().history(caller, &filter),
        s.zone.transfers().zone_map(caller),
        s.zone.transfers().throughput(caller, range),
    )
    .map_err(fail)?;
    let next = (transfers.len() == PAGE as usize)
        .then(|| transfers.last())
        .flatten()
        .map(|t| {
            let mut q = templates::transfers_query(&shown, None);
            if !q.is_empty() {
                q.push('&');
            }
            format!("/transfers?{q}before={}.{}", t.record.created, t.record.id)
        });
    let page = History {
        map: &zone_map,
        throughput: &throughput,
        shown: &shown,
        transfers: &transfers,
        is_admin: caller.is_admin,
        first_page: before.is_none(),
        next,
    };
    Ok(templates::transfers(&user.page(), &page).into_response())
}

/// `GET /transfers/map`: the map alone, which the page's script fetches every few seconds.
pub async fn map_fragment(State(s): State<Arc<AppState>>, user: WebUser) -> Result<Response, WebError> {
    let m = s
        .zone
        .transfers()
        .zone_map(&user.session.caller)
        .await
        .map_err(|e| WebError::of(&user, e))?;
    Ok(Html(map::map(&m).into_string()).into_response())
}

fn transfer_id(id: &str) -> Result<TransferId, Error> {
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(Error::invalid(format!("{id:?} is not a transfer id")));
    }
    Ok(TransferId::new(id))
}

/// `GET /transfers/<id>`: its figures and its files (`files=STATE` for those in one state),
/// with the cause of each failure.
pub async fn detail(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    Path(id): Path<String>,
    q: QueryPairs,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let caller = &user.session.caller;
    let id = transfer_id(&id).map_err(fail)?;
    let file_state = field(&q, "files")
        .map(FileState::parse)
        .transpose()
        .map_err(fail)?;
    let after = field(&q, "after")
        .map(|a| {
            a.parse::<u64>()
                .map_err(|_| Error::invalid(format!("after={a:?} is not a number")))
        })
        .transpose()
        .map_err(fail)?;
    let info = s.zone.transfers().get(caller, &id).await.map_err(fail)?;
    let files = s
        .zone
        .transfers()
        .files(caller, &id, file_state, after, FILES_PAGE)
        .await
        .map_err(fail)?;
    let next_files = (files.len() == FILES_PAGE as usize)
        .then(|| files.last())
        .flatten()
        .map(|f| {
            let mut q = form_urlencoded::Serializer::new(String::new());
            if let Some(st) = file_state {
                q.append_pair("files", st.as_str());
            }
            q.append_pair("after", &f.seq.to_string());
            format!("/transfers/{id}?{}", q.finish())
        });
    let page = Detail {
        info: &info,
        files: &files,
        file_state,
        next_files,
    };
    Ok(templates::transfer(&user.page(), &page).into_response())
}

/// The request of the start form: one source, a destination, and whether a collection
/// goes with everything below it. Errors: `invalid_argument`, `invalid_path`.
fn spec_of(form: &FormFields) -> Result<TransferSpec, Error> {
    let source = form.get("source").map(str::trim).unwrap_or("");
    let destination = form.get("destination").map(str::trim).unwrap_or("");
    if source.is_empty() || destination.is_empty() {
        return Err(Error::invalid("name a source and a destination"));
    }
    // A logical path is checked here, so that the error names the field; other endpoints
    // (replica://, staging) are checked by the transfer's planning.
    if source.starts_with('/') {
        LogicalPath::parse(source)?;
    }
    let recursive = match form.get("recursive") {
        None => false,
        Some("1" | "on") => true,
        Some(v) => return Err(Error::invalid(format!("recursive={v:?} is not 1"))),
    };
    let spec = TransferSpec {
        sources: vec![source.to_owned()],
        destination: destination.to_owned(),
        recursive,
        sync: false,
        verify: Verify::Default,
        streams: TransferSpec::STREAMS_DEFAULT,
        concurrency: TransferSpec::CONCURRENCY_DEFAULT,
    };
    spec.check()?;
    Ok(spec)
}

/// `POST /transfers/start`: checks, plans and starts a transfer, then shows it.
pub async fn start(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    headers: HeaderMap,
    form: FormFields,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    user.check_csrf(&headers, &form).map_err(fail)?;
    let spec = spec_of(&form).map_err(fail)?;
    let record = s
        .zone
        .transfers()
        .start(&user.session.caller, spec)
        .await
        .map_err(fail)?;
    Ok(Redirect::to(&format!("/transfers/{}", record.id)).into_response())
}

/// `POST /transfers/<id>/cancel`: stops it and shows it again.
pub async fn cancel(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    Path(id): Path<String>,
    headers: HeaderMap,
    form: FormFields,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    user.check_csrf(&headers, &form).map_err(fail)?;
    let id = transfer_id(&id).map_err(fail)?;
    s.zone
        .transfers()
        .cancel(&user.session.caller, &id)
        .await
        .map_err(fail)?;
    Ok(Redirect::to(&format!("/transfers/{id}")).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> QueryPairs {
        QueryPairs(form_urlencoded::parse(s.as_bytes()).into_owned().collect())
    }

    fn form(s: &str) -> FormFields {
        FormFields(form_urlencoded::parse(s.as_bytes()).into_owned().collect())
    }

    #[test]
    fn history_queries_are_read_or_refused() {
        let (s, before) = shown(&q("state=failed&type=qos&user=alice&range=day&before=17.abc")).unwrap();
        assert_eq!(s.state, Some(TransferState::Failed));
        assert_eq!(s.kind, Some(TransferKind::Qos));
        assert_eq!(s.user.as_deref(), Some("alice"));
        assert_eq!(s.range, Some(ThroughputRange::Day));
        assert_eq!(before, Some((17, TransferId::new("abc"))));
        let (s, before) = shown(&q("state=&type=&user=")).unwrap();
        assert!(s.state.is_none() && s.kind.is_none() && s.user.is_none() && before.is_none());
        for bad in [
            "state=done",
            "type=robot",
            "range=week",
            "before=17",
            "before=x.y",
            "user=a%2Fb",
        ] {
            assert!(shown(&q(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_start_form_is_checked_before_anything_starts() {
        let spec = spec_of(&form("source=/t/home/a/x&destination=/u/in&recursive=1")).unwrap();
        assert_eq!((spec.sources.len(), spec.recursive), (1, true));
        assert!(
            !spec_of(&form("source=/t/x&destination=replica://u"))
                .unwrap()
                .recursive
        );
        for bad in [
            "source=&destination=/u/x",
            "source=/t/x&destination=",
            "source=/t/../x&destination=/u/x",
            "source=/t/x&destination=/u/x&recursive=yes",
            "source=/t/x&destination=nowhere",
        ] {
            assert!(spec_of(&form(bad)).is_err(), "{bad}");
        }
        assert!(transfer_id("0123abcd").is_ok());
        for bad in ["", "../x", "a b", &"a".repeat(65)] {
            assert!(transfer_id(bad).is_err(), "{bad:?}");
        }
    }
}
