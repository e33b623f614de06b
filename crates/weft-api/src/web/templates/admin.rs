//! The Admin page: users, groups with their members, and API tokens (a new one's secret
//! shown once, on the answer to the form that created it).

use super::{layout_in, time, PageUser, Section};
use axum::response::Html;
use maud::html;
use weft_types::escape_controls;
use weft_zone::access::{NewToken, Principal, TokenInfo};

pub struct Admin<'a> {
    pub users: &'a [Principal],
    pub groups: &'a [(Principal, Vec<Principal>)],
    pub tokens: &'a [TokenInfo],
    /// The token just created: its secret, shown this once.
    pub created: Option<&'a NewToken>,
}

pub fn page(user: &PageUser<'_>, v: &Admin<'_>) -> Html<String> {
    let main = html! {
        div.heading { h1 { "Administration" } }
        @if let Some(t) = v.created {
            section.card.new-token role="status" {
                h2 { "New token for " (t.user.as_str()) }
                p { "Copy it now: the zone keeps only its hash and will not show it again." }
                code #new-token.secret { (t.secret) }
                @if let Some(e) = t.expires { p.muted { "Expires " (time(e)) } }
            }
        }
        div.admin-grid {
            section aria-labelledby="users-title" {
                h2 #users-title { "Users " span.muted { (v.users.len()) } }
                div.table-scroll {
                    table.users {
                        thead { tr { th scope="col" { "User" } th scope="col" { "Role" } th scope="col" { "Since" } } }
                        tbody {
                            @for u in v.users {
                                tr data-user=(u.name.as_str()) {
                                    td.name { (u.name.as_str()) }
                                    td {
                                        @if u.is_admin { span.state.state-admin { "administrator" } }
                                        @else if let Some((_, zone)) = u.name.as_str().split_once('#') { "visitor from zone " (zone) }
                                        @else { "user" }
                                    }
                                    td.when { (time(u.created)) }
                                }
                            }
                        }
                    }
                }
            }
            section aria-labelledby="groups-title" {
                h2 #groups-title { "Groups " span.muted { (v.groups.len()) } }
                @if v.groups.is_empty() {
                    p.empty { "No groups. Add one with " code { "weft group add NAME" } "." }
                } @else {
                    div.table-scroll {
                        table.groups {
                            thead { tr { th scope="col" { "Group" } th scope="col" { "Members" } } }
                            tbody {
                                @for (g, members) in v.groups {
                                    tr data-group=(g.name.as_str()) {
                                        td.name { (g.name.as_str()) }
                                        td.members {
                                            @if members.is_empty() { span.muted { "nobody" } }
                                            @for (i, m) in members.iter().enumerate() { @if i > 0 { ", " } (m.name.as_str()) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="tokens-title" {
            div.card-head {
                h2 #tokens-title { "API tokens " span.muted { (v.tokens.len()) } }
                form.inline.token-form method="post" action="/admin/tokens" {
                    input type="hidden" name="csrf" value=(user.csrf);
                    label for="token-user" { "New token for" }
                    select #token-user name="user" {
                        @for u in v.users {
                            option value=(u.name.as_str()) selected[u.name.as_str() == user.name] { (u.name.as_str()) }
                        }
                    }
                    label for="token-label" { "Label" }
                    input #token-label type="text" name="label" maxlength="200" placeholder="laptop, CI, ...";
                    label for="token-days" { "Valid for" }
                    select #token-days name="days" {
                        option value="" { "until deleted" }
                        option value="1" { "1 day" }
                        option value="30" selected { "30 days" }
                        option value="365" { "1 year" }
                    }
                    button.primary type="submit" { "Create token" }
                }
            }
            div.table-scroll {
                table.tokens {
                    thead {
                        tr {
                            th scope="col" { "#" } th scope="col" { "User" } th scope="col" { "Label" }
                            th scope="col" { "Created" } th scope="col" { "Expires" } th scope="col" { span.visually-hidden { "Actions" } }
                        }
                    }
                    tbody {
                        @for t in v.tokens {
                            tr data-token=(t.token.id) {
                                td.num { (t.token.id) }
                                td.owner { (t.user.as_str()) }
                                td.label { @if t.token.label.is_empty() { span.muted { "—" } } @else { (escape_controls(&t.token.label)) } }
                                td.when { (time(t.token.created)) }
                                td.when { @if let Some(e) = t.token.expires { (time(e)) } @else { span.muted { "never" } } }
                                td {
                                    form method="post" action={ "/admin/tokens/" (t.token.id) "/delete" } {
                                        input type="hidden" name="csrf" value=(user.csrf);
                                        button.danger.small type="submit" aria-label={ "Delete token " (t.token.id) " of " (t.user.as_str()) } { "Delete" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            p.hint { "Deleting a token ends the web sessions opened with it: deleting the one you signed in with signs you out." }
        }
    };
    layout_in(Section::Admin, "Administration", Some(user), user.zone, main)
}
