//! A collection's details, beside its listing: its facts, where its objects' copies are
//! (the bytes-per-zone chart), its metadata, who may use it, and the actions the user's
//! permission allows.

use super::distribution;
use super::node::{self, NodeView};
use super::{collection_heading, crumbs, layout, Crumbs, PageUser, Tab};
use axum::response::Html;
use maud::html;

pub fn page(user: &PageUser<'_>, c: &Crumbs, v: &NodeView<'_>) -> Html<String> {
    let n = &v.info.node;
    let main = html! {
        (crumbs(c))
        (node::unplaced(v))
        (collection_heading(&n.path, Tab::Details, v.can_write() && !v.protected))
        dl.facts-grid {
            (node::owner_and_times(v))
            (node::pid(user, v))
        }
        @if let Some(d) = v.distribution {
            (distribution::chart(user, v, d))
        }
        (node::metadata(user, v))
        (node::access(user, v))
        (node::move_form(user, v))
    };
    layout(n.path.name(), Some(user), user.zone, main)
}
