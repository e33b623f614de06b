//! The HTML of every page. maud escapes whatever it interpolates, so a name or a metadata
//! value is text on the page whatever it contains; nothing here is written unescaped.

mod details;
mod distribution;
mod node;
mod object;
mod search;

pub use details::page as details;
pub use node::{page_url, AclView, Done, NodeView, Outcome, Part};
pub use object::page as object;
pub use search::{page as search, SearchView, Typed};

use super::data::PAGE;
use super::{assets, format, paths};
use axum::response::Html;
use maud::{html, Markup, DOCTYPE};
use weft_types::{Error, LogicalPath, Millis, NodeKind};
use weft_zone::{ChildKey, ChildOrder, ChildSort, Node};

/// Who a page is for: the top bar's zone and user, and the token its forms carry.
pub struct PageUser<'a> {
    pub zone: &'a str,
    pub name: &'a str,
    pub csrf: &'a str,
}

/// The collections above a node, for the breadcrumbs: (name, Data URL), the node last.
pub struct Crumbs(Vec<(String, String)>);

impl Crumbs {
    pub fn of(path: &LogicalPath) -> Crumbs {
        Crumbs(
            path.ancestors_and_self()
                .iter()
                .map(|p| (p.name().to_owned(), paths::to_url("/data", p)))
                .collect(),
        )
    }
}

/// A page of a collection's listing.
pub struct Listed<'a> {
    pub node: &'a Node,
    pub items: &'a [Node],
    pub order: ChildOrder,
    pub first_page: bool,
    pub next: Option<&'a ChildKey>,
    pub can_write: bool,
    pub can_delete: bool,
}

/// The parts of the interface the top bar leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Data,
    Transfers,
    Zones,
    Policies,
    Admin,
}

fn layout(title: &str, user: Option<&PageUser<'_>>, zone: &str, main: Markup) -> Html<String> {
    layout_in(Section::Data, title, user, zone, main)
}

/// The top navigation: the Admin entry only for administrators (the page itself refuses
/// others too).
fn nav(section: Section, zone: &str, user: &PageUser<'_>) -> Markup {
    let entries = [
        (Section::Data, super::login::home_path(zone, user.name), "Data"),
        (Section::Transfers, "/transfers".to_owned(), "Transfers"),
        (Section::Zones, "/zones".to_owned(), "Zones"),
        (Section::Policies, "/policies".to_owned(), "Policies"),
        (Section::Admin, "/admin".to_owned(), "Admin"),
    ];
    let admin = super::admin_nav();
    html! {
        nav.primary aria-label="Main" {
            @for (s, href, label) in entries {
                @if s != Section::Admin || admin {
                    @if s == section {
                        a href=(href) aria-current="page" { (label) }
                    } @else {
                        a href=(href) { (label) }
                    }
                }
            }
        }
    }
}

/// A page of the interface in `section`: the top bar and `main`.
pub fn layout_in(
    section: Section,
    title: &str,
    user: Option<&PageUser<'_>>,
    zone: &str,
    main: Markup,
) -> Html<String> {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if let Some(u) = user {
                    meta name="csrf-token" content=(u.csrf);
                }
                title { (title) " · weft " (zone) }
                link rel="icon" href=(assets::icon()) type="image/svg+xml";
                link rel="stylesheet" href=(assets::css());
                script src=(assets::js()) defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.topbar {
                    a.brand href="/" {
                        img src=(assets::icon()) alt="" width="24" height="24";
                        span { "weft" }
                    }
                    @if !zone.is_empty() {
                        span.zone title="zone" { (zone) }
                    }
                    @if let Some(u) = user {
                        (nav(section, zone, u))
                        div.who {
                            span.user title="signed in as" { (u.name) }
                            form method="post" action="/logout" {
                                input type="hidden" name="csrf" value=(u.csrf);
                                button.link type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main #main { (main) }
            }
        }
    };
    Html(page.into_string())
}

pub fn time(ms: Millis) -> Markup {
    let (attr, text) = format::time(ms);
    html! { time datetime=(attr) { (text) } }
}

fn crumbs(c: &Crumbs) -> Markup {
    html! {
        nav.crumbs aria-label="Breadcrumb" {
            ol {
                @for (i, (name, url)) in c.0.iter().enumerate() {
                    li {
                        @if i + 1 == c.0.len() {
                            a href=(url) aria-current="page" { (name) }
                        } @else {
                            a href=(url) { (name) }
                        }
                    }
                }
            }
        }
    }
}

/// `issuers`: the index and label of each OIDC issuer the web can sign in with.
pub fn login(
    zone: &str,
    next: Option<&str>,
    issuers: &[(usize, &str)],
    problem: Option<&str>,
) -> Html<String> {
    let main = html! {
        section.login {
            h1 { "Sign in to zone " span.mono { (zone) } }
            @if let Some(p) = problem {
                p.alert role="alert" { (p) }
            }
            @if !issuers.is_empty() {
                div.sso {
                    @for (n, label) in issuers {
                        @let href = match next {
                            Some(next) => format!(
                                "/login/oidc/{n}?{}",
                                form_urlencoded::Serializer::new(String::new()).append_pair("next", next).finish()
                            ),
                            None => format!("/login/oidc/{n}"),
                        };
                        a.button.primary href=(href) { "Sign in with " (label) }
                    }
                }
                p.or { span { "or with an API token" } }
            }
            form method="post" action="/login" {
                @if let Some(n) = next {
                    input type="hidden" name="next" value=(n);
                }
                label for="token" { "API token" }
                input #token type="password" name="token" autocomplete="off" required autofocus
                    spellcheck="false" placeholder="weft_…";
                p.hint { "Create one with " code { "weft token create" } "; it stays on the zone, your browser keeps only a session." }
                // The issuers' buttons lead when there are any.
                button.primary[issuers.is_empty()] type="submit" { "Sign in" }
            }
        }
    };
    layout("Sign in", None, zone, main)
}

pub fn error(user: Option<&PageUser<'_>>, e: &Error) -> Html<String> {
    let title = match e.code.http_status() {
        400 => "This address or request is not valid",
        401 => "Sign in to continue",
        403 => "You do not have permission",
        404 => "Nothing is here",
        409 => "That conflicts with what is there",
        _ => "Something went wrong",
    };
    let main = html! {
        section.problem {
            h1 { (title) }
            p.alert role="alert" { (e.message) }
            p.code { "Error code " code { (e.code.as_str()) } }
            p { a href="/" { "Back to your home collection" } }
        }
    };
    layout(title, user, user.map_or("", |u| u.zone), main)
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
fn collection_heading(path: &LogicalPath, tab: Tab, can_delete: bool) -> Markup {
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

fn kind_class(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Collection => "collection",
        NodeKind::Object => "object",
    }
}

/// A folder or a sheet, drawn in the text's colour.
fn kind_icon(k: NodeKind) -> Markup {
    let d = match k {
        NodeKind::Collection => "M1.75 3.5h4.2l1.6 1.6h6.7v7.4H1.75z",
        NodeKind::Object => "M3.5 1.75h5.6l3.4 3.4v9.1h-9z M9 1.75v3.5h3.5",
    };
    html! {
        svg.icon viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" focusable="false" {
            path d=(d) fill="none" stroke="currentColor" stroke-width="1.4" stroke-linejoin="round" {}
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
