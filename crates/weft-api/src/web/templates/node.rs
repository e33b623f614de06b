//! What the page of a data object and the details of a collection share: the view of a
//! node, the outcome of the action just taken, and the sections for metadata, access,
//! the PID and moving. Every form offered is one the user's permission allows; the zone
//! checks each action again.

use super::{time, PageUser};
use crate::web::paths;
use maud::{html, Markup};
use weft_types::{escape_controls as esc, Error, LogicalPath, NodeKind, Permission};
use weft_zone::access::AclEntry;
use weft_zone::namespace::{Avu, Distribution, NodeInfo};

/// Everything a node's page shows.
pub struct NodeView<'a> {
    pub info: &'a NodeInfo,
    pub held: Permission,
    pub meta: &'a [Avu],
    /// The ACL, for owners only.
    pub acl: Option<&'a AclView>,
    /// Where a copy may go (`ZONE:RESOURCE` or `ZONE`), for users who may write.
    pub targets: &'a [String],
    /// For a collection: its objects' copies per place.
    pub distribution: Option<&'a Distribution>,
    /// The metadata row shown as a form.
    pub editing: Option<usize>,
    pub outcome: &'a Outcome,
    /// A zone root or home collection: not moved or deleted from the interface.
    pub protected: bool,
}

impl NodeView<'_> {
    pub fn can_write(&self) -> bool {
        self.held >= Permission::Write
    }

    pub fn is_owner(&self) -> bool {
        self.held >= Permission::Own
    }

    /// Whether the page shows `section` to this user.
    fn shows(&self, section: Part) -> bool {
        match section {
            Part::Metadata | Part::Pid => true,
            Part::Access => self.acl.is_some(),
            Part::Copies => self.info.node.kind == NodeKind::Object || self.distribution.is_some(),
            Part::Move => self.can_write() && !self.protected,
        }
    }
}

/// A node's ACL entries and those of the collections above it, which it inherits.
pub struct AclView {
    pub own: Vec<AclEntry>,
    /// Nearest collection first; only collections with entries the user may read.
    pub inherited: Vec<(LogicalPath, Vec<AclEntry>)>,
}

/// The part of a node's page an action belongs to, where its outcome is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Metadata,
    Access,
    Pid,
    Copies,
    Move,
}

impl Part {
    /// The fragment of the page's URL that scrolls to it.
    pub fn anchor(self) -> &'static str {
        match self {
            Part::Metadata => "metadata",
            Part::Access => "access",
            Part::Pid => "pid",
            Part::Copies => "copies",
            Part::Move => "move",
        }
    }
}

/// What an action just did, named in the URL it redirects to (`?done=`), so that the
/// message is always one of these and never text from the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    MetaAdded,
    MetaChanged,
    MetaRemoved,
    Granted,
    Revoked,
    Minted,
    Replicating,
    Trimmed,
    Moved,
}

const DONE: &[(Done, &str, Part, &str)] = &[
    (Done::MetaAdded, "meta-added", Part::Metadata, "Metadata added."),
    (
        Done::MetaChanged,
        "meta-changed",
        Part::Metadata,
        "Metadata changed.",
    ),
    (
        Done::MetaRemoved,
        "meta-removed",
        Part::Metadata,
        "Metadata removed.",
    ),
    (Done::Granted, "granted", Part::Access, "Access granted."),
    (Done::Revoked, "revoked", Part::Access, "Access revoked."),
    (
        Done::Minted,
        "minted",
        Part::Pid,
        "PID minted. Its landing page is public.",
    ),
    (
        Done::Replicating,
        "replicating",
        Part::Copies,
        "Replication started as a transfer; the new copy is listed here once it is done.",
    ),
    (Done::Trimmed, "trimmed", Part::Copies, "Replica removed."),
    (Done::Moved, "moved", Part::Move, "Moved here."),
];

impl Done {
    pub fn parse(s: &str) -> Option<Done> {
        DONE.iter().find(|d| d.1 == s).map(|d| d.0)
    }

    pub fn as_str(self) -> &'static str {
        self.entry().1
    }

    pub fn section(self) -> Part {
        self.entry().2
    }

    fn message(self) -> &'static str {
        self.entry().3
    }

    fn entry(self) -> &'static (Done, &'static str, Part, &'static str) {
        DONE.iter().find(|d| d.0 == self).expect("every Done is listed")
    }
}

/// The outcome of the action that led to the page.
pub enum Outcome {
    Nothing,
    Done(Done),
    /// The zone refused it: its error, shown in the section, and what the form held, to
    /// fill it again.
    Failed {
        section: Part,
        error: Error,
        form: Vec<(String, String)>,
    },
}

impl Outcome {
    /// A field of the form that failed, when the failure is in `section`.
    pub fn field(&self, section: Part, key: &str) -> Option<&str> {
        match self {
            Outcome::Failed { section: s, form, .. } if *s == section => {
                form.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
            }
            _ => None,
        }
    }
}

/// The message of the outcome if it belongs to `section`.
pub fn outcome(o: &Outcome, section: Part) -> Markup {
    match o {
        Outcome::Done(d) if d.section() == section => html! {
            p.notice role="status" { (d.message()) }
        },
        Outcome::Failed {
            section: s, error, ..
        } if *s == section => html! {
            p.alert role="alert" { (error.message) " " span.code { "(" (error.code.as_str()) ")" } }
        },
        _ => html! {},
    }
}

/// The outcome of an action whose section the page does not show this user (a grant
/// posted by a reader, who sees no Access section), above the page so it is not lost.
pub fn unplaced(v: &NodeView<'_>) -> Markup {
    let section = match v.outcome {
        Outcome::Failed { section, .. } => *section,
        Outcome::Done(d) => d.section(),
        Outcome::Nothing => return html! {},
    };
    if v.shows(section) {
        return html! {};
    }
    outcome(v.outcome, section)
}

/// The hidden fields every action's form carries.
fn csrf(user: &PageUser<'_>) -> Markup {
    html! { input type="hidden" name="csrf" value=(user.csrf); }
}

/// Where a node's page is: a data object's at `/data`, a collection's details at
/// `/details` (its `/data` page is its listing).
pub fn page_url(path: &LogicalPath, kind: NodeKind) -> String {
    match kind {
        NodeKind::Object => paths::to_url("/data", path),
        NodeKind::Collection => paths::to_url("/details", path),
    }
}

pub fn metadata(user: &PageUser<'_>, v: &NodeView<'_>) -> Markup {
    let path = &v.info.node.path;
    let here = page_url(path, v.info.node.kind);
    let action = paths::to_url("/meta", path);
    let add = |key: &str| {
        v.outcome
            .field(Part::Metadata, key)
            .filter(|_| v.outcome.field(Part::Metadata, "op") == Some("add"))
    };
    html! {
        section #metadata aria-labelledby="metadata-h" {
            h2 #metadata-h { "Metadata" }
            (outcome(v.outcome, Part::Metadata))
            @if v.meta.is_empty() {
                p.empty { "No metadata." }
            } @else {
                div.table-scroll {
                    table.meta {
                        thead {
                            tr {
                                th scope="col" { "Attribute" } th scope="col" { "Value" } th scope="col" { "Unit" }
                                @if v.can_write() { th scope="col" { span.visually-hidden { "Actions" } } }
                            }
                        }
                        tbody {
                            @for (i, a) in v.meta.iter().enumerate() {
                                @if v.can_write() && v.editing == Some(i) {
                                    (meta_edit_row(user, &action, &here, a, v.outcome))
                                } @else {
                                    // Shown escaped, sent back (hidden) as stored: a catalog may
                                    // hold control characters from before they were refused.
                                    tr {
                                        td.attr { (esc(&a.attr)) } td.value { (esc(&a.value)) } td.unit { (esc(&a.unit)) }
                                        @if v.can_write() {
                                            td.row-actions {
                                                a.button.small href={ (here) "?edit=" (i) "#metadata" }
                                                    aria-label={ "Edit " (esc(&a.attr)) "=" (esc(&a.value)) } { "Edit" }
                                                form.inline method="post" action=(action) {
                                                    (csrf(user))
                                                    input type="hidden" name="op" value="remove";
                                                    input type="hidden" name="attr" value=(a.attr);
                                                    input type="hidden" name="value" value=(a.value);
                                                    input type="hidden" name="unit" value=(a.unit);
                                                    button.small.danger type="submit"
                                                        aria-label={ "Remove " (esc(&a.attr)) "=" (esc(&a.value)) } { "Remove" }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if v.can_write() {
                form.meta-add method="post" action=(action) {
                    (csrf(user))
                    input type="hidden" name="op" value="add";
                    div.field {
                        label for="meta-attr" { "Attribute" }
                        input #meta-attr type="text" name="attr" required spellcheck="false"
                            value=(add("attr").unwrap_or("")) placeholder="e.g. instrument";
                    }
                    div.field.grow {
                        label for="meta-value" { "Value" }
                        input #meta-value type="text" name="value" spellcheck="false"
                            value=(add("value").unwrap_or(""));
                    }
                    div.field.narrow {
                        label for="meta-unit" { "Unit" }
                        input #meta-unit type="text" name="unit" spellcheck="false"
                            value=(add("unit").unwrap_or("")) placeholder="optional";
                    }
                    button.primary type="submit" { "Add" }
                }
                p.hint { "Attributes under " code { "datacite." } " are checked as DataCite fields, as " code { "weft meta" } " does." }
            }
        }
    }
}

fn meta_edit_row(user: &PageUser<'_>, action: &str, here: &str, a: &Avu, o: &Outcome) -> Markup {
    let typed = |key: &str| {
        o.field(Part::Metadata, key)
            .filter(|_| o.field(Part::Metadata, "op") == Some("edit"))
    };
    html! {
        tr.editing {
            td.attr { (esc(&a.attr)) }
            td colspan="3" {
                form.meta-edit method="post" action=(action) {
                    (csrf(user))
                    input type="hidden" name="op" value="edit";
                    input type="hidden" name="attr" value=(a.attr);
                    input type="hidden" name="old_value" value=(a.value);
                    input type="hidden" name="old_unit" value=(a.unit);
                    label.visually-hidden for="edit-value" { "New value of " (esc(&a.attr)) }
                    // Escaped, so that saving it as shown stores printable text.
                    input #edit-value.grow type="text" name="value" spellcheck="false" autofocus
                        value=(typed("value").map_or(esc(&a.value), Into::into));
                    label.visually-hidden for="edit-unit" { "New unit of " (esc(&a.attr)) }
                    input #edit-unit.narrow type="text" name="unit" spellcheck="false" placeholder="unit"
                        value=(typed("unit").map_or(esc(&a.unit), Into::into));
                    button.primary.small type="submit" { "Save" }
                    a.button.small href={ (here) "#metadata" } { "Cancel" }
                }
            }
        }
    }
}

fn acl_cells(e: &AclEntry) -> Markup {
    html! {
        td.principal { (e.principal.as_str()) } td.muted { (e.kind.as_str()) }
        td { span class={ "perm perm-" (e.permission.as_str()) } { (e.permission.as_str()) } }
    }
}

pub fn access(user: &PageUser<'_>, v: &NodeView<'_>) -> Markup {
    let Some(acl) = v.acl else { return html! {} };
    let path = &v.info.node.path;
    let action = paths::to_url("/acl", path);
    let typed = |key: &str| v.outcome.field(Part::Access, key);
    let chosen = typed("permission").unwrap_or("read");
    html! {
        section #access aria-labelledby="access-h" {
            h2 #access-h { "Access" }
            (outcome(v.outcome, Part::Access))
            div.table-scroll {
                table.acl {
                    caption.visually-hidden { "Who may do what with " (path.as_str()) }
                    thead {
                        tr {
                            th scope="col" { "User or group" } th scope="col" { "Kind" } th scope="col" { "Permission" }
                            th scope="col" { "Set on" }
                        }
                    }
                    tbody {
                        @for e in &acl.own {
                            tr {
                                (acl_cells(e))
                                td {
                                    span.muted { "this " (kind_word(v.info.node.kind)) }
                                    form.inline.right method="post" action=(action) {
                                        (csrf(user))
                                        input type="hidden" name="principal" value=(e.principal.as_str());
                                        input type="hidden" name="permission" value="none";
                                        button.small.danger type="submit"
                                            aria-label={ "Revoke " (e.permission.as_str()) " of " (e.principal.as_str()) } { "Revoke" }
                                    }
                                }
                            }
                        }
                        @for (from, entries) in &acl.inherited {
                            @for e in entries {
                                tr.inherited {
                                    (acl_cells(e))
                                    td { "inherited from " a href=(paths::to_url("/details", from)) { code { (from.as_str()) } } }
                                }
                            }
                        }
                        @if acl.own.is_empty() && acl.inherited.is_empty() {
                            tr { td.muted colspan="4" { "No entries: only the owner and administrators have access." } }
                        }
                    }
                }
            }
            form.grant method="post" action=(action) {
                (csrf(user))
                div.field {
                    label for="grant-principal" { "User or group" }
                    input #grant-principal type="text" name="principal" required spellcheck="false"
                        autocomplete="off" placeholder="name, or user#zone" value=(typed("principal").unwrap_or(""));
                }
                div.field {
                    label for="grant-permission" { "Permission" }
                    select #grant-permission name="permission" {
                        @for p in ["read", "write", "own"] {
                            option value=(p) selected[p == chosen] { (p) }
                        }
                    }
                }
                @if v.info.node.kind == NodeKind::Collection {
                    div.field.check {
                        input #grant-recursive type="checkbox" name="recursive" value="1"
                            checked[typed("recursive") == Some("1")];
                        label for="grant-recursive" { "Also on everything inside now" }
                    }
                }
                button.primary type="submit" { "Grant" }
            }
            p.hint { "A permission on a collection holds for everything below it. Revoking here leaves what is inherited." }
        }
    }
}

fn kind_word(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Object => "object",
        NodeKind::Collection => "collection",
    }
}

/// The PID row of the facts, with the button that mints one for owners.
pub fn pid(user: &PageUser<'_>, v: &NodeView<'_>) -> Markup {
    let path = &v.info.node.path;
    html! {
        dt #pid { "PID" }
        dd.pid {
            @if let Some(pid) = &v.info.pid {
                a href={ "/pid/" (pid) } { (pid) }
                span.muted { " · public landing page" }
            } @else if v.is_owner() {
                form.inline method="post" action=(paths::to_url("/mint-pid", path)) {
                    (csrf(user))
                    span.muted { "none yet" }
                    button.small type="submit" { "Mint PID" }
                }
            } @else {
                span.muted { "none" }
            }
            (outcome(v.outcome, Part::Pid))
        }
    }
}

/// Renaming and moving: one form, its new name and the collection it goes into.
pub fn move_form(user: &PageUser<'_>, v: &NodeView<'_>) -> Markup {
    let path = &v.info.node.path;
    if !v.can_write() || v.protected {
        return html! {};
    }
    let parent = path.parent().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let typed = |key: &str| v.outcome.field(Part::Move, key);
    html! {
        section #move aria-labelledby="move-h" {
            h2 #move-h { "Rename or move" }
            (outcome(v.outcome, Part::Move))
            form.move method="post" action=(paths::to_url("/move", path)) {
                (csrf(user))
                div.field {
                    label for="move-name" { "Name" }
                    input #move-name type="text" name="name" required spellcheck="false"
                        value=(typed("name").unwrap_or(path.name()));
                }
                div.field.grow {
                    label for="move-into" { "Into collection" }
                    input #move-into type="text" name="into" required spellcheck="false"
                        value=(typed("into").unwrap_or(parent.as_str()));
                }
                button type="submit" { "Move" }
            }
        }
    }
}

/// The owner and times of a node, for the facts.
pub fn owner_and_times(v: &NodeView<'_>) -> Markup {
    let n = &v.info.node;
    html! {
        dt { "Owner" } dd.owner { (n.owner.as_str()) }
        dt { "Created" } dd { (time(n.created)) }
        dt { "Modified" } dd { (time(n.modified)) }
        dt { "Path" } dd { code { (n.path.as_str()) } }
        dt { "Your access" } dd.held { span class={ "perm perm-" (v.held.as_str()) } { (v.held.as_str()) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_names_round_trip_and_nothing_else_is_one() {
        for (d, name, _, _) in DONE {
            assert_eq!(Done::parse(name), Some(*d));
            assert_eq!(d.as_str(), *name);
        }
        assert_eq!(Done::parse("<script>"), None);
        assert_eq!(Done::parse(""), None);
    }
}
