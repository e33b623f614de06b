//! A data object's page: what it is, its metadata, where its copies are, who may use it,
//! and the actions the user's permission allows.

use super::distribution;
use super::node::{self, NodeView};
use super::{crumbs, layout, Crumbs, PageUser};
use crate::web::{format, paths};
use axum::response::Html;
use maud::html;

pub fn page(user: &PageUser<'_>, c: &Crumbs, v: &NodeView<'_>) -> Html<String> {
    let n = &v.info.node;
    let main = html! {
        (crumbs(c))
        (node::unplaced(v))
        div.heading {
            h1 { (n.path.name()) }
            div.buttons {
                a.button.primary href=(paths::to_url("/api/v1/data", &n.path)) download=(n.path.name()) { "Download" }
                @if v.can_write() {
                    a.button.danger href=(paths::to_url("/delete", &n.path)) { "Delete…" }
                }
            }
        }
        dl.facts-grid {
            dt { "Size" } dd.size { (format::size(n.size)) span.muted { " (" (format::count(n.size)) " bytes)" } }
            dt { "Checksum" } dd.checksum { @if let Some(sum) = &n.checksum { code { (sum.to_string()) } } @else { "—" } }
            (node::owner_and_times(v))
            (node::pid(user, v))
        }
        (node::metadata(user, v))
        (distribution::replicas(user, v))
        (node::access(user, v))
        (node::move_form(user, v))
    };
    layout(n.path.name(), Some(user), user.zone, main)
}
