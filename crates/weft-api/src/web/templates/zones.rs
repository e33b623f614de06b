//! The Zones page: the federated zones with their reachability and round trip; for
//! administrators, the resources and staging areas with how full they are.

use super::{layout_in, time, PageUser, Section};
use super::{state, usage};
use axum::response::Html;
use maud::{html, Markup};
use weft_zone::federation::{PeerInfo, Reachability};
use weft_zone::resources::{ResourceSpace, StagingSpace};

pub struct Zones<'a> {
    pub peers: &'a [PeerInfo],
    /// `None` for users who are not administrators.
    pub resources: Option<&'a [ResourceSpace]>,
    pub staging: Option<&'a [StagingSpace]>,
}

fn reachability(r: Option<&Reachability>) -> Markup {
    match r {
        Some(Reachability::Up { rtt, version }) => html! {
            td.reach { (state("reachable")) }
            td.num.rtt data-ms=(rtt.as_secs_f64() * 1000.0) { (format!("{:.1} ms", rtt.as_secs_f64() * 1000.0)) }
            td { (version) }
        },
        Some(Reachability::Down { cause }) => html! {
            td.reach { (state("unreachable")) }
            td.num.rtt { "—" }
            td.cause { (cause) }
        },
        None => html! { td { "not probed" } td {} td {} },
    }
}

pub fn page(user: &PageUser<'_>, v: &Zones<'_>) -> Html<String> {
    let main = html! {
        div.heading { h1 { "Zones" } }
        p.facts {
            "This zone: " span.mono { (user.zone) } " · weft " (env!("CARGO_PKG_VERSION"))
            " · each zone below was asked for its health just now (3 s at most)"
        }
        section aria-labelledby="peers-title" {
            h2 #peers-title { "Federated zones" }
            @if v.peers.is_empty() {
                p.empty { "No federated zones. An administrator adds one on both sides with " code { "weft zone add NAME URL --secret-file FILE" } "." }
            } @else {
                div.table-scroll {
                    table.peers {
                        thead {
                            tr {
                                th scope="col" { "Zone" } th scope="col" { "Address" } th scope="col" { "Reachability" }
                                th scope="col" { "Round trip" } th scope="col" { "Version or cause" } th scope="col" { "Federated since" }
                            }
                        }
                        tbody {
                            @for p in v.peers {
                                tr data-zone=(p.name.as_str()) {
                                    td.name { (p.name.as_str()) }
                                    td.path { (p.url) }
                                    (reachability(p.reachability.as_ref()))
                                    td.when { (time(p.created)) }
                                }
                            }
                        }
                    }
                }
            }
        }
        @match (v.resources, v.staging) {
            (Some(resources), Some(staging)) => {
                section aria-labelledby="resources-title" {
                    h2 #resources-title { "Resources" }
                    div.table-scroll {
                        table.resources {
                            thead {
                                tr {
                                    th scope="col" { "Resource" } th scope="col" { "Kind" } th scope="col" { "Tier" }
                                    th scope="col" { "Space" }
                                }
                            }
                            tbody {
                                @for r in resources {
                                    tr data-resource=(r.resource.name.as_str()) {
                                        td.name {
                                            (r.resource.name.as_str())
                                            @if r.resource.is_default { " " span.state.state-default { "default" } }
                                        }
                                        td { (r.resource.kind.as_str()) }
                                        td { (r.resource.tier) }
                                        td { (usage(&r.space)) }
                                    }
                                }
                            }
                        }
                    }
                }
                section aria-labelledby="staging-title" {
                    h2 #staging-title { "Staging areas" }
                    @if staging.is_empty() {
                        p.empty { "No staging areas." }
                    } @else {
                        div.table-scroll {
                            table.staging {
                                thead {
                                    tr {
                                        th scope="col" { "Area" } th scope="col" { "Where" } th scope="col" { "Open to" }
                                        th scope="col" { "Space" }
                                    }
                                }
                                tbody {
                                    @for a in staging {
                                        tr {
                                            td.name { (a.staging.name.as_str()) }
                                            td.path { (a.staging.url) }
                                            td {
                                                @if a.staging.allow.is_empty() { "every user of this zone" }
                                                @else { @for (i, p) in a.staging.allow.iter().enumerate() { @if i > 0 { ", " } (p.as_str()) } }
                                            }
                                            td { (usage(&a.space)) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            _ => {
                p.hint { "Resources and staging areas, and how full they are, are shown to administrators." }
            }
        }
    };
    layout_in(Section::Zones, "Zones", Some(user), user.zone, main)
}
