//! The HTML of the Transfers, Zones, Policies and Admin pages (maud escapes every value it
//! interpolates), in the layout and top bar of `pages.rs`.

pub mod admin;
pub mod policies;
pub mod transfers;
pub mod zones;

use maud::{html, Markup};

/// A state as a coloured pill: `good`, `failed`, `running`... each with its class.
pub fn state(s: &str) -> Markup {
    html! { span class={ "state state-" (s) } { (s) } }
}

/// How full a file system is: a bar and its figures; `—` where nothing is known.
pub fn usage(space: &Result<Option<weft_zone::Space>, weft_types::Error>) -> Markup {
    match space {
        Ok(Some(s)) if s.total > 0 => {
            let used = s.total.saturating_sub(s.available);
            html! {
                div.usage {
                    meter min="0" max=(s.total) value=(used) high=(s.total / 10 * 9) title="used" {}
                    span {
                        (super::format::size(used as i64)) " used of " (super::format::size(s.total as i64))
                        " · " (super::format::size(s.available as i64)) " free"
                    }
                }
            }
        }
        Ok(_) => html! { span.muted { "not reported by this kind of storage" } },
        Err(e) => html! { span.alert-inline { (e.message) } },
    }
}

#[cfg(test)]
mod tests {
    use crate::web::pages::{layout_in, PageUser, Section};
    use crate::web::ADMIN_NAV;

    #[tokio::test]
    async fn only_administrators_get_the_admin_entry_and_the_section_is_marked() {
        let user = PageUser {
            zone: "t",
            name: "alice",
            csrf: "c",
        };
        let page = |admin: bool| {
            ADMIN_NAV.scope(std::cell::Cell::new(admin), async {
                layout_in(Section::Zones, "Zones", Some(&user), "t", maud::html! {}).0
            })
        };
        let (plain, admin) = (page(false).await, page(true).await);
        assert!(!plain.contains(r#"href="/admin""#), "{plain}");
        assert!(admin.contains(r#"href="/admin""#), "{admin}");
        assert!(
            plain.contains(r#"<a href="/zones" aria-current="page">"#),
            "{plain}"
        );
        assert!(plain.contains(r#"<a href="/transfers">"#), "{plain}");
        // Outside a request (no scope), no Admin entry either.
        let outside = layout_in(Section::Data, "Data", Some(&user), "t", maud::html! {}).0;
        assert!(!outside.contains(r#"href="/admin""#));
    }
}
