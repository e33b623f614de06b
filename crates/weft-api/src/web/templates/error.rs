//! The page of a failure: its status in words, the zone's message and stable code, and
//! the way home.

use super::{layout, PageUser};
use axum::response::Html;
use http::StatusCode;
use maud::html;
use weft_types::Error;

/// The page of `e`, with the session's top bar when there is one.
pub fn error(user: Option<&PageUser<'_>>, e: &Error) -> Html<String> {
    let title = match crate::error::status_of(e.code) {
        StatusCode::BAD_REQUEST => "This address or request is not valid",
        StatusCode::UNAUTHORIZED => "Sign in to continue",
        StatusCode::FORBIDDEN => "You do not have permission",
        StatusCode::NOT_FOUND => "Nothing is here",
        StatusCode::CONFLICT => "That conflicts with what is there",
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
