//! The frame of every page: the document head (viewport, CSRF token, the hashed stylesheet
//! and script), the top bar with its sections, and the page's `main`.

use crate::web::{admin_nav, assets, handlers::login};
use axum::response::Html;
use maud::{html, Markup, DOCTYPE};

/// Who a page is for: the top bar's zone and user, and the token its forms carry.
pub struct PageUser<'a> {
    pub zone: &'a str,
    pub name: &'a str,
    pub csrf: &'a str,
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

/// A page of the Data section.
pub fn layout(title: &str, user: Option<&PageUser<'_>>, zone: &str, main: Markup) -> Html<String> {
    layout_in(Section::Data, title, user, zone, main)
}

/// The top navigation: the Admin entry only for administrators (the page itself refuses
/// others too).
fn nav(section: Section, zone: &str, user: &PageUser<'_>) -> Markup {
    let entries = [
        (Section::Data, login::home_path(zone, user.name), "Data"),
        (Section::Transfers, "/transfers".to_owned(), "Transfers"),
        (Section::Zones, "/zones".to_owned(), "Zones"),
        (Section::Policies, "/policies".to_owned(), "Policies"),
        (Section::Admin, "/admin".to_owned(), "Admin"),
    ];
    let admin = admin_nav();
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

#[cfg(test)]
mod tests {
    use super::{layout_in, PageUser, Section};
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
