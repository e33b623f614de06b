//! The HTML of every page, server-rendered with maud, which escapes whatever it
//! interpolates: a name or a metadata value is text on the page whatever it contains, and
//! nothing here is written unescaped. `layout.rs` is the frame (head, top bar) every page
//! is drawn in, `components.rs` the pieces several pages share; each other file is one
//! page's (or, for `node.rs` and `distribution.rs`, the sections an object's page and a
//! collection's details share). What a page shows is gathered by its handler
//! (`handlers/`) into the view structs declared here; nothing here reads the zone.

mod admin;
mod components;
mod data;
mod details;
mod distribution;
mod error;
mod layout;
mod login;
mod node;
mod object;
mod policies;
mod search;
mod transfers;
mod zones;

pub use admin::{page as admin, Admin};
pub use components::{crumbs, kind_class, kind_icon, state, time, usage, Crumbs};
pub use data::{collection, collection_heading, confirm_delete, Listed, Tab};
pub use details::page as details;
pub use error::error;
pub use layout::{layout, layout_in, PageUser, Section};
pub use login::login;
pub use node::{page_url, AclView, Done, NodeView, Outcome, Part};
pub use object::page as object;
pub use policies::{page as policies, Policies};
pub use search::{page as search, SearchView, Typed};
pub use transfers::{
    detail as transfer, history as transfers, query as transfers_query, Detail, History, Shown,
};
pub use zones::{page as zones, Zones};
