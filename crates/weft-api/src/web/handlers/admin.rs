//! The Admin page, for administrators only (others get a 403 page, and no entry in the top
//! bar): users, groups and API tokens, through the same use cases as the REST routes.

use crate::web::templates::{self, Admin};
use crate::web::{FormFields, WebError, WebUser};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::HeaderMap;
use std::sync::Arc;
use weft_types::{Error, PrincipalName};
use weft_zone::access::{NewToken, PrincipalKind};

/// The page, with the secret of a token just created.
async fn render(s: &AppState, user: &WebUser, created: Option<&NewToken>) -> Result<Response, Error> {
    let caller = &user.session.caller;
    caller.require_admin("the administration page")?;
    let users = s.zone.access().principals(caller, PrincipalKind::User).await?;
    let mut groups = Vec::new();
    for g in s.zone.access().principals(caller, PrincipalKind::Group).await? {
        let members = s.zone.access().members(caller, &g.name).await?;
        groups.push((g, members));
    }
    let tokens = s.zone.access().tokens(caller).await?;
    let v = Admin {
        users: &users,
        groups: &groups,
        tokens: &tokens,
        created,
    };
    Ok(templates::admin(&user.page(), &v).into_response())
}

/// `GET /admin`.
pub async fn page(State(s): State<Arc<AppState>>, user: WebUser) -> Result<Response, WebError> {
    render(&s, &user, None).await.map_err(|e| WebError::of(&user, e))
}

/// The caller of an action of this page, once the CSRF rule holds and it is an
/// administrator's (the use cases check again what each needs).
fn admin_action<'a>(
    user: &'a WebUser,
    headers: &HeaderMap,
    form: &FormFields,
) -> Result<&'a weft_zone::Caller, Error> {
    user.check_csrf(headers, form)?;
    let caller = &user.session.caller;
    caller.require_admin("the actions of the administration page")?;
    Ok(caller)
}

/// The days a new token lives (`""`: until deleted). Errors: `invalid_argument`.
fn days(v: Option<&str>) -> Result<Option<u64>, Error> {
    match v.map(str::trim).unwrap_or("") {
        "" => Ok(None),
        d => match d.parse::<u64>() {
            Ok(n) if (1..=3650).contains(&n) => Ok(Some(n * 86_400)),
            _ => Err(Error::invalid(format!(
                "days={d:?}: a whole number of days from 1 to 3650"
            ))),
        },
    }
}

/// `POST /admin/tokens` (`user`, `label`, `days`): creates a token and shows its secret on
/// the answer, once.
pub async fn create_token(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    headers: HeaderMap,
    form: FormFields,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let caller = admin_action(&user, &headers, &form).map_err(fail)?;
    let who = form
        .get("user")
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(PrincipalName::parse)
        .transpose()
        .map_err(fail)?;
    // Its length and characters are checked where every door's labels are (the catalog).
    let label = form.get("label").map(str::trim).unwrap_or("");
    let ttl = days(form.get("days")).map_err(fail)?;
    let token = s
        .zone
        .access()
        .create_token(caller, who.as_ref(), label, ttl)
        .await
        .map_err(fail)?;
    render(&s, &user, Some(&token)).await.map_err(fail)
}

/// `POST /admin/tokens/<id>/delete`.
pub async fn delete_token(
    State(s): State<Arc<AppState>>,
    user: WebUser,
    Path(id): Path<String>,
    headers: HeaderMap,
    form: FormFields,
) -> Result<Response, WebError> {
    let fail = |e| WebError::of(&user, e);
    let caller = admin_action(&user, &headers, &form).map_err(fail)?;
    let id: i64 = id
        .parse()
        .map_err(|_| fail(Error::invalid(format!("{id:?} is not a token id"))))?;
    s.zone
        .access()
        .delete_token(caller, weft_zone::access::TokenId(id))
        .await
        .map_err(fail)?;
    Ok(Redirect::to("/admin").into_response())
}

#[cfg(test)]
mod tests {
    #[test]
    fn token_lifetimes_are_whole_days_or_none() {
        assert_eq!(super::days(None).unwrap(), None);
        assert_eq!(super::days(Some("")).unwrap(), None);
        assert_eq!(super::days(Some("30")).unwrap(), Some(30 * 86_400));
        for bad in ["0", "-1", "3651", "1.5", "soon"] {
            assert!(super::days(Some(bad)).is_err(), "{bad}");
        }
    }
}
