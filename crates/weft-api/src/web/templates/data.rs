//! The Data pages: a collection's listing (sortable columns, a page at a time, the search
//! form, new collection and upload), a collection's heading with its two views, and the
//! confirmation before deleting.

use super::{crumbs, kind_class, kind_icon, layout, search, time, Crumbs, PageUser};
use crate::web::handlers::data::PAGE;
use crate::web::{format, paths};
use axum::response::Html;
use maud::{html, Markup};
use weft_types::{LogicalPath, NodeKind};
use weft_zone::namespace::{ChildKey, ChildOrder, ChildSort, Node};

/// A page of a collection's listing.
pub struct Listed<'a> {
    pub node: &'a Node,
    /// `weft.dataset`: `open` while an instrument writes it, `closed` once complete.
    pub dataset: Option<&'a str>,
    /// Objects written below have their headers read into metadata.
    pub extract_on: bool,
    pub pid: Option<&'a str>,
    pub items: &'a [Node],
    pub order: ChildOrder,
    pub first_page: bool,
    pub next: Option<&'a ChildKey>,
    pub can_write: bool,
    pub can_delete: bool,
}

/// A link that sorts the listing by `by`: ascending first, the other way when it is
/// already sorted so.
fn sort_link(here: &str, order: ChildOrder, by: ChildSort, label: &str) -> Markup {
    let active = order.by == by;
    let desc = active && !order.descending;
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("sort", sort_name(by));
    if desc {
        q.append_pair("desc", "1");
    }
    let aria = match (active, order.descending) {
        (false, _) => "none",
        (true, false) => "ascending",
        (true, true) => "descending",
    };
    let arrow = match (active, order.descending) {
        (false, _) => "",
        (true, false) => " ▲",
        (true, true) => " ▼",
    };
    html! {
        th scope="col" aria-sort=(aria) {
            a href={ (here) "?" (q.finish()) } { (label) span.arrow aria-hidden="true" { (arrow) } }
        }
    }
}

fn sort_name(by: ChildSort) -> &'static str {
    match by {
        ChildSort::Name => "name",
        ChildSort::Size => "size",
        ChildSort::Modified => "modified",
    }
}

fn next_link(here: &str, order: ChildOrder, key: &ChildKey) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("sort", sort_name(order.by));
    if order.descending {
        q.append_pair("desc", "1");
    }
    q.append_pair("after", &key.name);
    if order.by != ChildSort::Name {
        q.append_pair("key", &key.key.to_string());
    }
    format!("{here}?{}", q.finish())
}

fn first_link(here: &str, order: ChildOrder) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("sort", sort_name(order.by));
    if order.descending {
        q.append_pair("desc", "1");
    }
    format!("{here}?{}", q.finish())
}

pub fn collection(user: &PageUser<'_>, c: &Crumbs, v: &Listed<'_>) -> Html<String> {
    let path = &v.node.path;
    let here = paths::to_url("/data", path);
    let main = html! {
        (crumbs(c))
        (collection_heading(path, Tab::Contents, v.can_delete))
        p.facts {
            "Collection · owner " span.owner { (v.node.owner.as_str()) } " · modified " (time(v.node.modified))
        }
        @if v.dataset.is_some() || v.extract_on || v.pid.is_some() {
            p.dataset {
                @match v.dataset {
                    Some("closed") => { span.state.state-done { "Dataset closed" } }
                    Some(_) => { span.state.state-active { "Dataset open" } " · being written" }
                    None => {}
                }
                @if let Some(pid) = v.pid {
                    " · PID " code { (pid) }
                }
                @if v.extract_on {
                    " · headers read into metadata on arrival"
                }
                " · " a href=(paths::to_url("/details", path)) { "copies per zone" }
            }
        }
        (search::form(path, &search::Typed::default(), true))
        @if v.can_write {
            div.actions {
                form.inline method="post" action=(paths::to_url("/new-collection", path)) {
                    input type="hidden" name="csrf" value=(user.csrf);
                    label for="new-name" { "New collection" }
                    input #new-name type="text" name="name" required placeholder="name" spellcheck="false";
                    button type="submit" { "Create" }
                }
                form #upload.inline hidden data-collection=(path.as_str()) {
                    label for="upload-file" { "Upload a file" }
                    input #upload-file type="file" name="file" required;
                    span.hint.drop-hint { "or drop files on the list" }
                    button.primary type="submit" { "Upload" }
                    div #upload-status.status role="status" aria-live="polite" hidden {
                        progress #upload-progress max="1" value="0" aria-label="upload progress" {}
                        span #upload-text {}
                    }
                }
                noscript { p.hint { "Uploading needs JavaScript; " code { "weft put" } " works without." } }
            }
        }
        div #dropzone.dropzone data-collection=[v.can_write.then_some(path.as_str())] {
        @if v.items.is_empty() {
            p.empty { @if v.first_page { "This collection is empty." } @else { "No more entries." } }
        } @else {
            div.table-scroll {
                table.listing {
                    caption.visually-hidden { "Contents of " (path.as_str()) }
                    thead {
                        tr {
                            (sort_link(&here, v.order, ChildSort::Name, "Name"))
                            (sort_link(&here, v.order, ChildSort::Size, "Size"))
                            (sort_link(&here, v.order, ChildSort::Modified, "Modified"))
                            th scope="col" { "Owner" }
                        }
                    }
                    tbody {
                        @for n in v.items {
                            tr.(kind_class(n.kind)) {
                                td.name {
                                    a href=(paths::to_url("/data", &n.path)) {
                                        (kind_icon(n.kind))
                                        span.label { (n.path.name()) }
                                    }
                                }
                                td.size data-bytes=(n.size) {
                                    @if n.kind == NodeKind::Object { (format::size(n.size)) } @else { "—" }
                                }
                                td.modified { (time(n.modified)) }
                                td.owner { (n.owner.as_str()) }
                            }
                        }
                    }
                }
            }
        }
        }
        nav.pager aria-label="Pages" {
            @if !v.first_page {
                a.button href=(first_link(&here, v.order)) { "« First page" }
            }
            span.count { (v.items.len()) " entries on this page (at most " (PAGE) ")" }
            @if let Some(k) = v.next {
                a.button rel="next" href=(next_link(&here, v.order, k)) { "Next page »" }
            }
        }
    };
    layout(path.name(), Some(user), user.zone, main)
}

/// The two views of a collection.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Contents,
    Details,
}

/// A collection's name, its two views and, when allowed, the way to delete it.
pub fn collection_heading(path: &LogicalPath, tab: Tab, can_delete: bool) -> Markup {
    let link = |t: Tab, prefix: &str, label: &str| {
        html! {
            @if t == tab {
                a href=(paths::to_url(prefix, path)) aria-current="page" { (label) }
            } @else {
                a href=(paths::to_url(prefix, path)) { (label) }
            }
        }
    };
    html! {
        div.heading {
            h1 { span.kind { (kind_icon(NodeKind::Collection)) } (path.name()) }
            @if can_delete {
                a.button.danger href=(paths::to_url("/delete", path)) { "Delete collection…" }
            }
        }
        nav.view-tabs aria-label="Views of this collection" {
            (link(Tab::Contents, "/data", "Contents"))
            (link(Tab::Details, "/details", "Details"))
        }
    }
}

pub fn confirm_delete(user: &PageUser<'_>, c: &Crumbs, n: &Node) -> Html<String> {
    let what = match n.kind {
        NodeKind::Collection => "the collection",
        NodeKind::Object => "the data object",
    };
    let main = html! {
        (crumbs(c))
        section.confirm {
            h1 { "Delete " (n.path.name()) "?" }
            p {
                "This deletes " (what) " " code { (n.path.as_str()) }
                @if n.kind == NodeKind::Collection { " and everything in it" }
                ", with all its replicas. It cannot be undone."
            }
            form method="post" action=(paths::to_url("/delete", &n.path)) {
                input type="hidden" name="csrf" value=(user.csrf);
                button.danger type="submit" { "Delete" }
                a.button href=(paths::to_url("/data", &n.path)) { "Cancel" }
            }
        }
    };
    layout("Delete", Some(user), user.zone, main)
}
