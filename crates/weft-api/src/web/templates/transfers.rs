//! The Transfers page (map, throughput charts, start form, history) and a transfer's
//! detail page.

use super::state;
use super::{layout_in, time, PageUser, Section};
use crate::web::format;
use crate::web::svg::charts::{self, Line, Span, PALETTE};
use crate::web::svg::map;
use axum::response::Html;
use maud::{html, Markup};
use weft_types::{Direction, Endpoint, FileState, TransferKind, TransferState};
use weft_zone::transfers::{ThroughputHistory, ThroughputRange, TransferFile, TransferInfo, ZoneMap};

/// What the history shows, as the filter form and the links keep it.
#[derive(Debug, Clone, Default)]
pub struct Shown {
    pub state: Option<TransferState>,
    pub kind: Option<TransferKind>,
    pub user: Option<String>,
    pub range: Option<ThroughputRange>,
}

pub struct History<'a> {
    pub map: &'a ZoneMap,
    pub throughput: &'a ThroughputHistory,
    pub shown: &'a Shown,
    pub transfers: &'a [TransferInfo],
    pub is_admin: bool,
    pub first_page: bool,
    /// The URL of the next page, if there is one.
    pub next: Option<String>,
}

pub struct Detail<'a> {
    pub info: &'a TransferInfo,
    pub files: &'a [TransferFile],
    pub file_state: Option<FileState>,
    pub next_files: Option<String>,
}

fn range_name(r: ThroughputRange) -> &'static str {
    match r {
        ThroughputRange::Hour => "hour",
        ThroughputRange::Day => "day",
        ThroughputRange::Month => "month",
    }
}

/// The query string of `shown` (with `range` changed, if given).
pub fn query(shown: &Shown, range: Option<ThroughputRange>) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    if let Some(s) = shown.state {
        q.append_pair("state", s.as_str());
    }
    if let Some(k) = shown.kind {
        q.append_pair("type", k.as_str());
    }
    if let Some(u) = &shown.user {
        q.append_pair("user", u);
    }
    if let Some(r) = range.or(shown.range) {
        q.append_pair("range", range_name(r));
    }
    q.finish()
}

/// The first source, and how many more.
fn sources(info: &TransferInfo) -> Markup {
    let first = info.spec.sources.first().map_or("", String::as_str);
    html! {
        span.path { (first) }
        @if info.spec.sources.len() > 1 {
            span.muted { " and " (info.spec.sources.len() - 1) " more" }
        }
    }
}

fn files_of(info: &TransferInfo, which: &[FileState]) -> u64 {
    info.counts
        .files_by_state
        .iter()
        .filter(|(s, _)| which.contains(s))
        .map(|(_, n)| n)
        .sum()
}

fn kind_label(k: TransferKind) -> &'static str {
    match k {
        TransferKind::User => "user",
        TransferKind::Policy => "policy",
        TransferKind::Qos => "QoS",
        TransferKind::Scrubber => "scrubber",
    }
}

/// The figures of one transfer: bytes and files so far, of their totals.
fn progress(info: &TransferInfo) -> (Markup, Markup) {
    let r = &info.record;
    let processed = files_of(info, &[FileState::Done, FileState::Skipped]);
    let failed = files_of(info, &[FileState::Failed]);
    (
        html! {
            (format::size(info.counts.bytes_done as i64))
            span.muted { " of " (format::size(r.bytes_total as i64)) }
        },
        html! {
            (format::count(processed as i64))
            span.muted { " of " (format::count(r.files_total as i64)) }
            @if failed > 0 { " " span.state.state-failed { (failed) " failed" } }
        },
    )
}

fn throughput_card(t: &ThroughputHistory, shown: &Shown, peers: &[&str]) -> Markup {
    let range = shown.range.unwrap_or(ThroughputRange::Hour);
    let span = Span {
        start: t.start,
        bin: t.bin,
        bins: t.bins,
    };
    let (every, date) = match range {
        ThroughputRange::Hour => (10 * 60_000, false),
        ThroughputRange::Day => (3 * 3_600_000, false),
        ThroughputRange::Month => (5 * 86_400_000, true),
    };
    let color = |zone: &str| PALETTE[peers.iter().position(|p| *p == zone).unwrap_or(0) % PALETTE.len()];
    let lines = |d: Direction| -> Vec<Line<'_>> {
        t.series
            .iter()
            .filter(|s| s.direction == d)
            .map(|s| Line {
                label: s.zone.as_str(),
                color: color(s.zone.as_str()),
                rates: &s.rates,
            })
            .collect()
    };
    let (inbound, outbound) = (lines(Direction::In), lines(Direction::Out));
    let mut legend: Vec<&str> = t.series.iter().map(|s| s.zone.as_str()).collect();
    legend.dedup();
    html! {
        section.card.throughput aria-labelledby="throughput-title" {
            div.card-head {
                h2 #throughput-title { "Throughput" }
                nav.tabs aria-label="Period" {
                    @for (r, label) in [(ThroughputRange::Hour, "Last hour"), (ThroughputRange::Day, "Last day"), (ThroughputRange::Month, "30 days")] {
                        @if r == range {
                            a href={ "/transfers?" (query(shown, Some(r))) } aria-current="true" { (label) }
                        } @else {
                            a href={ "/transfers?" (query(shown, Some(r))) } { (label) }
                        }
                    }
                }
            }
            div.chart-block #chart-in {
                h3 { "Inbound " span.muted { "(received from each zone)" } }
                (charts::chart("Inbound", &span, &inbound, every, date))
            }
            div.chart-block #chart-out {
                h3 { "Outbound " span.muted { "(sent to each zone)" } }
                (charts::chart("Outbound", &span, &outbound, every, date))
            }
            @if legend.is_empty() {
                p.hint { "No bytes moved between this zone and its peers in this period." }
            } @else {
                ul.legend {
                    @for z in legend {
                        li {
                            svg width="14" height="4" aria-hidden="true" { rect width="14" height="4" fill=(color(z)) {} }
                            (z)
                        }
                    }
                }
            }
        }
    }
}

fn start_form(user: &PageUser<'_>, m: &ZoneMap) -> Markup {
    html! {
        section.card.start aria-labelledby="start-title" {
            h2 #start-title { "Start a transfer" }
            form.start-form method="post" action="/transfers/start" {
                input type="hidden" name="csrf" value=(user.csrf);
                div.field {
                    label for="source" { "Source" }
                    input #source type="text" name="source" required spellcheck="false"
                        placeholder={ "/" (m.here.as_str()) "/home/" (user.name) "/run1" };
                }
                div.field {
                    label for="destination" { "Destination" }
                    input #destination type="text" name="destination" required spellcheck="false" list="destinations"
                        placeholder="/zone/path or replica://zone";
                    datalist #destinations {
                        @for p in &m.peers {
                            option value={ "/" (p.as_str()) "/" } {}
                            option value={ "replica://" (p.as_str()) } {}
                        }
                    }
                }
                label.check {
                    input type="checkbox" name="recursive" value="1" checked;
                    " With everything below a collection"
                }
                button.primary type="submit" { "Start transfer" }
            }
            p.hint { "As " code { "weft transfer start" } ": the zones move the bytes; you may close this page." }
        }
    }
}

fn filters(shown: &Shown, is_admin: bool) -> Markup {
    html! {
        form.filters method="get" action="/transfers" aria-label="Filter the history" {
            @if let Some(r) = shown.range {
                input type="hidden" name="range" value=(range_name(r));
            }
            label for="f-state" { "Status" }
            select #f-state name="state" {
                option value="" { "any" }
                @for s in TransferState::ALL {
                    option value=(s.as_str()) selected[shown.state == Some(*s)] { (s.as_str()) }
                }
            }
            label for="f-type" { "Type" }
            select #f-type name="type" {
                option value="" { "any" }
                @for k in TransferKind::ALL {
                    option value=(k.as_str()) selected[shown.kind == Some(*k)] { (kind_label(*k)) }
                }
            }
            @if is_admin {
                label for="f-user" { "User" }
                input #f-user type="text" name="user" value=[shown.user.as_deref()] placeholder="everyone" spellcheck="false";
            }
            button type="submit" { "Filter" }
            @if shown.state.is_some() || shown.kind.is_some() || shown.user.is_some() {
                a href={ "/transfers?" (query(&Shown { range: shown.range, ..Default::default() }, None)) } { "Clear" }
            }
        }
    }
}

pub fn history(user: &PageUser<'_>, v: &History<'_>) -> Html<String> {
    let peers: Vec<&str> = v.map.peers.iter().map(|p| p.as_str()).collect();
    let running = v.map.flows.iter().map(|f| f.transfers).sum::<u32>();
    let main = html! {
        div.heading { h1 { "Transfers" } }
        div.transfer-grid {
            section.card.map-card aria-labelledby="map-title" {
                div.card-head {
                    h2 #map-title { "Zones and running transfers" }
                    span.live.muted #map-status aria-live="polite" { "live" }
                }
                div #zone-map data-live="/transfers/map" data-running=(running) { (map::map(v.map)) }
            }
            (throughput_card(v.throughput, v.shown, &peers))
        }
        (start_form(user, v.map))
        section aria-labelledby="history-title" {
            div.card-head {
                h2 #history-title { "History" }
                (filters(v.shown, v.is_admin))
            }
            @if v.transfers.is_empty() {
                p.empty { @if v.first_page { "No transfers match." } @else { "No more transfers." } }
            } @else {
                div.table-scroll {
                    table.transfers {
                        caption.visually-hidden { "Transfers, newest first" }
                        thead {
                            tr {
                                th scope="col" { "File or collection" }
                                th scope="col" { "User" }
                                th scope="col" { "Destination" }
                                th scope="col" { "Started" }
                                th scope="col" { "Bytes replicated" }
                                th scope="col" { "Files processed" }
                                th scope="col" { "Type" }
                                th scope="col" { "Status" }
                            }
                        }
                        tbody {
                            @for t in v.transfers {
                                @let (bytes, files) = progress(t);
                                tr data-id=(t.record.id.as_str()) {
                                    td.name { a href={ "/transfers/" (t.record.id.as_str()) } { (sources(t)) } }
                                    td.owner { (t.record.owner.as_str()) }
                                    td.path { (t.spec.destination) }
                                    td.when {
                                        @if let Some(s) = t.record.started { (time(s)) } @else { span.muted { "not yet" } }
                                    }
                                    td.num.bytes { (bytes) }
                                    td.num.files { (files) }
                                    td.kind { (kind_label(t.record.kind)) }
                                    td.status { (state(t.record.state.as_str())) }
                                }
                            }
                        }
                    }
                }
            }
            nav.pager aria-label="Pages" {
                @if !v.first_page {
                    a.button href={ "/transfers?" (query(v.shown, None)) } { "« Newest" }
                }
                span.count { (v.transfers.len()) " transfers on this page (at most " (crate::web::handlers::transfers::PAGE) ")" }
                @if let Some(next) = &v.next {
                    a.button rel="next" href=(next) { "Older »" }
                }
            }
        }
    };
    layout_in(Section::Transfers, "Transfers", Some(user), user.zone, main)
}

/// Where an endpoint's Data page is, when it is a path of this zone.
fn data_link(here: &str, e: &Endpoint) -> Option<String> {
    match e {
        Endpoint::Logical(p) if p.zone() == here => Some(crate::web::paths::to_url("/data", p)),
        _ => None,
    }
}

pub fn detail(user: &PageUser<'_>, v: &Detail<'_>) -> Html<String> {
    let info = v.info;
    let r = &info.record;
    let (bytes, files) = progress(info);
    let by_state: Vec<(FileState, u64)> = info
        .counts
        .files_by_state
        .iter()
        .filter(|(_, n)| *n > 0)
        .copied()
        .collect();
    let id = r.id.as_str();
    let main = html! {
        nav.crumbs aria-label="Breadcrumb" {
            ol { li { a href="/transfers" { "Transfers" } } li { a href={ "/transfers/" (id) } aria-current="page" { (&id[..id.len().min(8)]) } } }
        }
        div.heading {
            h1 { "Transfer " span.mono { (&id[..id.len().min(8)]) } " " (state(r.state.as_str())) }
            @if r.state.is_open() {
                form method="post" action={ "/transfers/" (id) "/cancel" } {
                    input type="hidden" name="csrf" value=(user.csrf);
                    button.danger type="submit" { "Cancel transfer" }
                }
            }
        }
        @if let Some(e) = &r.error {
            p.alert role="alert" { (e) }
        }
        dl.facts-grid {
            dt { "Sources" } dd { @for s in &info.spec.sources { code { (s) } br; } }
            dt { "Destination" } dd { code { (info.spec.destination) } }
            dt { "User" } dd.owner { (r.owner.as_str()) @if let Some(z) = &r.via_zone { span.muted { " via zone " (z.as_str()) } } }
            dt { "Type" } dd.kind { (kind_label(r.kind)) }
            dt { "Created" } dd { (time(r.created)) }
            dt { "Started" } dd { @if let Some(t) = r.started { (time(t)) } @else { "not yet" } }
            dt { "Finished" } dd { @if let Some(t) = r.finished { (time(t)) } @else { "—" } }
            dt { "Bytes replicated" } dd.bytes {
                (bytes)
                @if r.bytes_total > 0 {
                    " " progress max=(r.bytes_total) value=(info.counts.bytes_done.min(r.bytes_total)) aria-label="bytes done" {}
                }
            }
            dt { "Files processed" } dd.files { (files) }
            dt { "Files by state" } dd {
                @for (s, n) in &by_state {
                    a.state-count href={ "/transfers/" (id) "?files=" (s.as_str()) } { (state(s.as_str())) " " (n) } " "
                }
                @if v.file_state.is_some() { a href={ "/transfers/" (id) } { "all files" } }
            }
            dt { "Id" } dd { code { (id) } }
        }
        section {
            h2 { @if let Some(s) = v.file_state { "Files " (s.as_str()) } @else { "Files" } }
            @if v.files.is_empty() {
                p.empty { "No files to show." }
            } @else {
                div.table-scroll {
                    table.files {
                        thead {
                            tr {
                                th scope="col" { "#" } th scope="col" { "Source" } th scope="col" { "Destination" }
                                th scope="col" { "Size" } th scope="col" { "State" } th scope="col" { "Attempts" } th scope="col" { "Cause" }
                            }
                        }
                        tbody {
                            @for f in v.files {
                                tr {
                                    td.num { (f.seq) }
                                    td.path {
                                        @if let Some(href) = data_link(user.zone, &f.source) { a href=(href) { (f.source.to_string()) } }
                                        @else { (f.source.to_string()) }
                                    }
                                    td.path { (f.destination.to_string()) }
                                    td.num { (format::size(f.size as i64)) }
                                    td { (state(f.state.as_str())) }
                                    td.num { (f.attempts) }
                                    td.cause {
                                        @if let Some(e) = &f.error {
                                            code { (e.code.as_str()) } " " (e.message)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if let Some(next) = &v.next_files {
                nav.pager { a.button rel="next" href=(next) { "More files »" } }
            }
        }
    };
    layout_in(Section::Transfers, "Transfer", Some(user), user.zone, main)
}
