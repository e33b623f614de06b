//! The actions of a node's page, each a form posted with the session's CSRF token and
//! carried out by the zone's use case as the session's caller: metadata, access, PIDs,
//! replicas, renaming and moving. Done, the browser is sent back to the page with `done=`
//! naming what happened; refused, the page shows the zone's error in the form's section,
//! with the form as it was filled, and nothing has changed.

use super::data::{is_protected, protected, Posted};
use super::node;
use crate::web::templates::{page_url, Done, Part};
use crate::web::{FormFields, WebUser};
use crate::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use std::sync::Arc;
use weft_types::{Error, ErrorCode, LogicalPath, NodeKind, Permission, PrincipalName};
use weft_zone::namespace::{Avu, MetaEdit};

/// A field the form must carry.
fn required<'a>(form: &'a FormFields, key: &str) -> Result<&'a str, Error> {
    form.get(key)
        .ok_or_else(|| Error::invalid(format!("the form lacks its {key:?} field; reload the page")))
}

/// Runs `act`, an action on `path` in `section` of its page, and answers: back to the
/// page of the node it leaves (`Ok((done, node))`), or the page with the refusal.
async fn answer<F>(
    s: &Arc<AppState>,
    user: &WebUser,
    path: &LogicalPath,
    section: Part,
    form: &FormFields,
    act: F,
) -> Response
where
    F: std::future::Future<Output = Result<(Done, LogicalPath), Error>>,
{
    match act.await {
        Ok((done, at)) => {
            let kind = match s.zone.namespace().stat(&user.session.caller, &at).await {
                Ok(info) => info.node.kind,
                // Gone from the user's sight (moved where they may not read): the
                // collection it was posted from.
                Err(_) => {
                    return Redirect::to(&crate::web::paths::to_url("/data", &at.parent().unwrap_or(at)))
                        .into_response()
                }
            };
            let url = format!(
                "{}?done={}#{}",
                page_url(&at, kind),
                done.as_str(),
                section.anchor()
            );
            Redirect::to(&url).into_response()
        }
        Err(e) => node::refused(s, user, path, section, e, form).await,
    }
}

/// `POST /meta/<path>`: `op` `add`, `edit` (of the row `attr`, `old_value`, `old_unit`)
/// or `remove`, with `attr`, `value` and `unit`.
pub async fn meta(State(s): State<Arc<AppState>>, posted: Posted) -> Response {
    let Posted { user, path, form } = &posted;
    let act = async {
        let done = edit_meta(&s, user, path, form).await?;
        Ok::<_, Error>((done, path.clone()))
    };
    answer(&s, user, path, Part::Metadata, form, act).await
}

async fn edit_meta(
    s: &AppState,
    user: &WebUser,
    path: &LogicalPath,
    form: &FormFields,
) -> Result<Done, Error> {
    let caller = &user.session.caller;
    let attr = required(form, "attr")?;
    let avu = |value: &str, unit: &str| Avu {
        attr: attr.to_owned(),
        value: value.to_owned(),
        unit: unit.to_owned(),
    };
    let value = required(form, "value")?;
    let unit = form.get("unit").unwrap_or("");
    match required(form, "op")? {
        "add" => {
            s.zone
                .namespace()
                .edit_meta(caller, path, MetaEdit::Add(avu(value, unit)))
                .await?;
            Ok(Done::MetaAdded)
        }
        "remove" => {
            let existing = s.zone.namespace().list_meta(caller, path).await?;
            let edits = replace_row(&existing, &avu(value, unit), None)?;
            s.zone.namespace().edit_meta_many(caller, path, edits).await?;
            Ok(Done::MetaRemoved)
        }
        "edit" => {
            let old = avu(required(form, "old_value")?, required(form, "old_unit")?);
            let new = avu(value, unit);
            if old == new {
                return Ok(Done::MetaChanged);
            }
            let existing = s.zone.namespace().list_meta(caller, path).await?;
            let edits = replace_row(&existing, &old, Some(new))?;
            s.zone.namespace().edit_meta_many(caller, path, edits).await?;
            Ok(Done::MetaChanged)
        }
        other => Err(Error::invalid(format!(
            "op={other:?}: a metadata form adds, edits or removes"
        ))),
    }
}

/// The edits that replace the row `old` of a node's metadata `existing` by `new` (or
/// remove it), all or none. An attribute with this one row is set (so a DataCite field
/// that takes one value is replaced, not added to); otherwise the row's value goes and
/// the rows that shared it under other units come back. Errors: `conflict` when `old` is
/// no longer there (changed since the page was shown).
fn replace_row(existing: &[Avu], old: &Avu, new: Option<Avu>) -> Result<Vec<MetaEdit>, Error> {
    if !existing.contains(old) {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "{}={} is no longer in the metadata (changed since this page was shown); reload it",
                old.attr, old.value
            ),
        ));
    }
    let of_attr = existing.iter().filter(|a| a.attr == old.attr).count();
    if let (1, Some(new)) = (of_attr, &new) {
        return Ok(vec![MetaEdit::Set(new.clone())]);
    }
    let mut edits = vec![MetaEdit::Remove {
        attr: old.attr.clone(),
        value: Some(old.value.clone()),
    }];
    edits.extend(new.map(MetaEdit::Add));
    edits.extend(
        existing
            .iter()
            .filter(|a| a.attr == old.attr && a.value == old.value && a.unit != old.unit)
            .cloned()
            .map(MetaEdit::Add),
    );
    Ok(edits)
}

/// `POST /acl/<path>`: grants `permission` (`read`, `write`, `own`; `none` revokes) to
/// `principal`, with `recursive=1` on everything below a collection too.
pub async fn acl(State(s): State<Arc<AppState>>, posted: Posted) -> Response {
    let Posted { user, path, form } = &posted;
    let act = async {
        let principal = PrincipalName::parse(required(form, "principal")?.trim())?;
        let permission = Permission::parse(required(form, "permission")?)?;
        let recursive = form.get("recursive") == Some("1");
        s.zone
            .access()
            .set_acl(&user.session.caller, path, &principal, permission, recursive)
            .await?;
        let done = match permission {
            Permission::None => Done::Revoked,
            _ => Done::Granted,
        };
        Ok::<_, Error>((done, path.clone()))
    };
    answer(&s, user, path, Part::Access, form, act).await
}

/// `POST /mint-pid/<path>`.
pub async fn mint_pid(State(s): State<Arc<AppState>>, posted: Posted) -> Response {
    let Posted { user, path, form } = &posted;
    let act = async {
        s.zone.namespace().mint_pid(&user.session.caller, path).await?;
        Ok::<_, Error>((Done::Minted, path.clone()))
    };
    answer(&s, user, path, Part::Pid, form, act).await
}

/// `POST /replicate/<path>` (`to`: `ZONE` or `ZONE:RESOURCE`): a transfer copying the
/// object, or every object below the collection.
pub async fn replicate(State(s): State<Arc<AppState>>, posted: Posted) -> Response {
    let Posted { user, path, form } = &posted;
    let act = async {
        let caller = &user.session.caller;
        let to = required(form, "to")?;
        let kind = s.zone.namespace().stat(caller, path).await?.node.kind;
        s.zone
            .transfers()
            .replicate(caller, path, kind == NodeKind::Collection, to)
            .await?;
        Ok::<_, Error>((Done::Replicating, path.clone()))
    };
    answer(&s, user, path, Part::Copies, form, act).await
}

/// `POST /trim/<path>` (`from`: `ZONE:RESOURCE`): removes that replica of the object.
pub async fn trim(State(s): State<Arc<AppState>>, posted: Posted) -> Response {
    let Posted { user, path, form } = &posted;
    let act = async {
        s.zone
            .transfers()
            .trim(&user.session.caller, path, required(form, "from")?)
            .await?;
        Ok::<_, Error>((Done::Trimmed, path.clone()))
    };
    answer(&s, user, path, Part::Copies, form, act).await
}

/// `POST /move/<path>` (`name`, `into`: the new name and the collection it goes into),
/// as `weft mv` does.
pub async fn rename(State(s): State<Arc<AppState>>, posted: Posted) -> Response {
    let Posted { user, path, form } = &posted;
    let act = async {
        if is_protected(&s, path) {
            return Err(protected(path));
        }
        let to = target(required(form, "into")?, required(form, "name")?, path)?;
        s.zone
            .namespace()
            .rename(&user.session.caller, path, &to, false)
            .await?;
        Ok::<_, Error>((Done::Moved, to))
    };
    answer(&s, user, path, Part::Move, form, act).await
}

/// Where a move goes: `name` in the collection `into`. Errors: `invalid_path` and
/// `invalid_name` as paths and names have them, `invalid_argument` for no change.
fn target(into: &str, name: &str, from: &LogicalPath) -> Result<LogicalPath, Error> {
    let into = LogicalPath::parse(into.trim())?;
    let to = crate::web::paths::child(&into, name)?;
    if &to == from {
        return Err(Error::invalid(
            "that is its name and collection now; change either to move it",
        ));
    }
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avu(a: &str, v: &str, u: &str) -> Avu {
        Avu {
            attr: a.into(),
            value: v.into(),
            unit: u.into(),
        }
    }

    #[test]
    fn a_single_value_is_set_and_one_of_several_replaced() {
        let one = [avu("voltage", "300", "kV"), avu("x", "1", "")];
        let edits = replace_row(&one, &one[0], Some(avu("voltage", "200", "kV"))).unwrap();
        assert_eq!(edits, [MetaEdit::Set(avu("voltage", "200", "kV"))]);

        let many = [
            avu("creator", "A", ""),
            avu("creator", "B", "u1"),
            avu("creator", "B", "u2"),
        ];
        let edits = replace_row(&many, &many[1], Some(avu("creator", "C", ""))).unwrap();
        assert_eq!(
            edits,
            [
                MetaEdit::Remove {
                    attr: "creator".into(),
                    value: Some("B".into())
                },
                MetaEdit::Add(avu("creator", "C", "")),
                MetaEdit::Add(avu("creator", "B", "u2")),
            ],
            "the row sharing the value under another unit stays"
        );
        let edits = replace_row(&one, &one[0], None).unwrap();
        assert_eq!(
            edits,
            [MetaEdit::Remove {
                attr: "voltage".into(),
                value: Some("300".into())
            }]
        );
        let gone = replace_row(&one, &avu("voltage", "100", "kV"), None).unwrap_err();
        assert_eq!(gone.code, ErrorCode::Conflict);
    }

    #[test]
    fn moves_name_a_new_place() {
        let from = LogicalPath::parse("/t/a/run 1").unwrap();
        assert_eq!(target("/t/b", "run 1", &from).unwrap().as_str(), "/t/b/run 1");
        assert_eq!(target(" /t/a ", "run 2", &from).unwrap().as_str(), "/t/a/run 2");
        assert!(target("/t/a", "run 1", &from).is_err());
        assert!(target("/t/a/../b", "x", &from).is_err());
        assert!(target("/t/a", "x/y", &from).is_err());
        assert!(target("/t/a", "", &from).is_err());
    }
}
