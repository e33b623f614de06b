//! The page of a failure: its status in words, the zone's message and stable code, and
//! the way home.

use super::{layout, PageUser};
use axum::response::Html;
use maud::html;
use weft_types::Error;

/// The page of `e`, with the session's top bar when there is one.
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
