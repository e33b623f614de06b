//! What answers each page and each form: one file per page with its actions. A handler
//! reads the request (session, path, query, form), calls weft-zone's use cases as the
//! session's caller (`s.zone.namespace()`, `s.zone.transfers()`...), and hands what it
//! got to the page's template (`templates/`). The routes to them are listed in one place,
//! `web::router()`.

pub mod actions;
pub mod admin;
pub mod data;
pub mod login;
pub mod node;
pub mod policies;
pub mod search;
pub mod sso;
pub mod transfers;
pub mod zones;
