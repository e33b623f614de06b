//! Searching below a collection by name and metadata (the conditions of `weft find`):
//! the form, on the listing and on the results, and the results page by page.

use super::{crumbs, kind_icon, layout, time, Crumbs, PageUser};
use crate::web::{format, paths};
use axum::response::Html;
use maud::{html, Markup};
use weft_types::{LogicalPath, NodeKind};
use weft_zone::namespace::Node;

/// What the search form holds, as typed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Typed {
    pub name: String,
    /// One condition each (`attr=value`, `attr>=number`, ...); empty ones dropped.
    pub meta: Vec<String>,
    /// `""` (both), `object` or `collection`.
    pub kind: String,
}

/// A page of results.
pub struct SearchView<'a> {
    pub root: &'a LogicalPath,
    pub typed: &'a Typed,
    /// `None` before anything was asked.
    pub found: Option<&'a [Node]>,
    /// The URL of the next page.
    pub next: Option<String>,
    pub first_page: bool,
    /// Why the zone refused the search (a condition it cannot read).
    pub problem: Option<&'a weft_types::Error>,
}

/// The search form below `root`; `compact` on a listing (a name and one condition).
pub fn form(root: &LogicalPath, typed: &Typed, compact: bool) -> Markup {
    let mut conditions: Vec<&str> = typed.meta.iter().map(String::as_str).collect();
    if !compact || conditions.is_empty() {
        conditions.push("");
    }
    html! {
        form.search method="get" action=(paths::to_url("/search", root)) role="search"
            aria-label={ "Search below " (root.as_str()) } {
            div.field.name {
                label for="search-name" { "Name" }
                input #search-name type="search" name="name" value=(typed.name) spellcheck="false"
                    placeholder="part of a name, or *.mrc";
            }
            @for (i, c) in conditions.iter().enumerate() {
                div.field {
                    label for={ "search-meta-" (i) } {
                        @if i == 0 { "Metadata" } @else { "and" }
                    }
                    input id={ "search-meta-" (i) } type="text" name="meta" value=(c) spellcheck="false"
                        placeholder="attr=value, attr>=number";
                }
            }
            @if !compact {
                div.field.kind {
                    label for="search-kind" { "Kind" }
                    select #search-kind name="kind" {
                        option value="" selected[typed.kind.is_empty()] { "anything" }
                        option value="object" selected[typed.kind == "object"] { "data objects" }
                        option value="collection" selected[typed.kind == "collection"] { "collections" }
                    }
                }
            }
            button type="submit" { "Search" }
        }
    }
}

pub fn page(user: &PageUser<'_>, c: &Crumbs, v: &SearchView<'_>) -> Html<String> {
    let prefix = format!("{}/", v.root.as_str());
    let main = html! {
        (crumbs(c))
        div.heading {
            h1 { "Search below " span.mono { (v.root.name()) } }
            a.button href=(paths::to_url("/data", v.root)) { "Back to the collection" }
        }
        (form(v.root, v.typed, false))
        p.hint {
            "Names: a part of the name, or a glob with " code { "*" } " and " code { "?" }
            ". Metadata: " code { "attr=value" } ", " code { "attr!=value" } ", or " code { "attr<number" }
            " (" code { "<=" } ", " code { ">" } ", " code { ">=" } "); every condition must hold, as with "
            code { "weft find" } "."
        }
        @if let Some(e) = v.problem {
            p.alert role="alert" { (e.message) " " span.code { "(" (e.code.as_str()) ")" } }
        }
        @if let Some(found) = v.found {
            @if found.is_empty() {
                p.empty { @if v.first_page { "Nothing below this collection matches." } @else { "No more matches." } }
            } @else {
                div.table-scroll {
                    table.listing.results {
                        caption.visually-hidden { "Matches below " (v.root.as_str()) }
                        thead {
                            tr { th scope="col" { "Path" } th scope="col" { "Size" } th scope="col" { "Modified" } th scope="col" { "Owner" } }
                        }
                        tbody {
                            @for n in found {
                                tr class=(if n.kind == NodeKind::Collection { "collection" } else { "object" }) {
                                    td.name {
                                        a href=(paths::to_url("/data", &n.path)) {
                                            (kind_icon(n.kind))
                                            span.label { (n.path.as_str().strip_prefix(&prefix).unwrap_or(n.path.as_str())) }
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
            nav.pager aria-label="Pages of matches" {
                span.count {
                    (found.len()) @if found.len() == 1 { " match" } @else { " matches" } " on this page"
                }
                @if let Some(next) = &v.next {
                    a.button rel="next" href=(next) { "Next page »" }
                }
            }
        }
    };
    layout("Search", Some(user), user.zone, main)
}
