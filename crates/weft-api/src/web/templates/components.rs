//! Pieces several pages share: times, breadcrumbs, the icons of nodes, state pills and
//! how full a file system is.

use crate::web::{format, paths};
use maud::{html, Markup};
use weft_types::{LogicalPath, Millis, NodeKind};

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

/// A time as the page shows it: UTC here, the browser's time zone once the script ran.
pub fn time(ms: Millis) -> Markup {
    let (attr, text) = format::time(ms);
    html! { time datetime=(attr) { (text) } }
}

/// The breadcrumbs of a page below a collection.
pub fn crumbs(c: &Crumbs) -> Markup {
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

/// The class of a listing's row.
pub fn kind_class(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Collection => "collection",
        NodeKind::Object => "object",
    }
}

/// A folder or a sheet, drawn in the text's colour.
pub fn kind_icon(k: NodeKind) -> Markup {
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

/// A state as a coloured pill: `good`, `failed`, `running`... each with its class.
pub fn state(s: &str) -> Markup {
    html! { span class={ "state state-" (s) } { (s) } }
}

/// How full a file system is: a bar and its figures; `—` where nothing is known.
pub fn usage(space: &Result<Option<weft_zone::resources::Space>, weft_types::Error>) -> Markup {
    match space {
        Ok(Some(s)) if s.total > 0 => {
            let used = s.total.saturating_sub(s.available);
            html! {
                div.usage {
                    meter min="0" max=(s.total) value=(used) high=(s.total / 10 * 9) title="used" {}
                    span {
                        (format::size(used as i64)) " used of " (format::size(s.total as i64))
                        " · " (format::size(s.available as i64)) " free"
                    }
                }
            }
        }
        Ok(_) => html! { span.muted { "not reported by this kind of storage" } },
        Err(e) => html! { span.alert-inline { (e.message) } },
    }
}
