//! Where a node's data lives: a data object's replicas (with trimming), the form that
//! replicates a node to another place, and a collection's bytes per zone as a bar chart
//! drawn in inline SVG (no script), with a table of the same figures beside it.

use super::node::{outcome, NodeView, Part};
use super::{time, PageUser};
use crate::web::{format, paths};
use maud::{html, Markup};
use weft_types::{NodeKind, ReplicaState};
use weft_zone::namespace::{Distribution, DISTRIBUTION_OBJECTS_MAX};

pub fn replicas(user: &PageUser<'_>, v: &NodeView<'_>) -> Markup {
    let path = &v.info.node.path;
    let good = v
        .info
        .replicas
        .iter()
        .filter(|r| r.state == ReplicaState::Good)
        .count();
    html! {
        section #copies aria-labelledby="copies-h" {
            h2 #copies-h { "Data distribution" }
            (outcome(v.outcome, Part::Copies))
            div.table-scroll {
                table.replicas {
                    caption.visually-hidden { "Replicas of " (path.as_str()) }
                    thead {
                        tr {
                            th scope="col" { "Zone" } th scope="col" { "Resource" } th scope="col" { "State" }
                            th scope="col" { "Size" } th scope="col" { "Created" } th scope="col" { "Last verified" }
                            @if v.can_write() { th scope="col" { span.visually-hidden { "Actions" } } }
                        }
                    }
                    tbody {
                        @for r in &v.info.replicas {
                            tr {
                                td.at-zone { (r.zone) }
                                td { (r.resource) }
                                td { span class={ "state state-" (r.state.as_str()) } { (r.state.as_str()) } }
                                td { (format::size(r.size)) }
                                td { (time(r.created)) }
                                td { @if let Some(t) = r.verified { (time(t)) } @else { span.muted { "never" } } }
                                @if v.can_write() {
                                    td.row-actions {
                                        // The zone keeps an object's last good copy whatever is asked.
                                        @if r.state != ReplicaState::Good || good > 1 {
                                            form.inline method="post" action=(paths::to_url("/trim", path)) {
                                                input type="hidden" name="csrf" value=(user.csrf);
                                                input type="hidden" name="from" value={ (r.zone) ":" (r.resource) };
                                                button.small.danger type="submit"
                                                    aria-label={ "Trim the replica at " (r.zone) ":" (r.resource) } { "Trim" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (replicate_form(user, v))
        }
    }
}

/// The places a copy of the node may go, leaving out those that hold one already: a data
/// object's good replica, or every object of a collection (a zone named alone stands for
/// any of its resources).
fn open_targets<'a>(v: &'a NodeView<'_>) -> Vec<&'a str> {
    let at = |t: &str, zone: &str, resource: &str| match t.split_once(':') {
        Some((z, r)) => z == zone && r == resource,
        None => t == zone,
    };
    let held = |t: &str| match v.distribution {
        Some(d) => {
            !d.truncated
                && d.objects > 0
                && d.places
                    .iter()
                    .any(|p| p.objects >= d.objects && at(t, &p.zone, &p.resource))
        }
        None => v
            .info
            .replicas
            .iter()
            .any(|r| r.state == ReplicaState::Good && at(t, &r.zone, &r.resource)),
    };
    v.targets
        .iter()
        .map(String::as_str)
        .filter(|t| !held(t))
        .collect()
}

pub fn replicate_form(user: &PageUser<'_>, v: &NodeView<'_>) -> Markup {
    if !v.can_write() {
        return html! {};
    }
    let targets = open_targets(v);
    let path = &v.info.node.path;
    let what = match v.info.node.kind {
        NodeKind::Object => "this object",
        NodeKind::Collection => "every object in this collection",
    };
    html! {
        @if v.targets.is_empty() {
            p.hint { "This zone has no other resource, and no federated zone, to copy to." }
        } @else if targets.is_empty() {
            p.hint { "Every resource of this zone and every federated zone holds a good copy already." }
        } @else {
            form.replicate method="post" action=(paths::to_url("/replicate", path)) {
                input type="hidden" name="csrf" value=(user.csrf);
                div.field {
                    label for="replicate-to" { "Replicate " (what) " to" }
                    select #replicate-to name="to" {
                        @for t in &targets {
                            option value=(t) { (place_label(t)) }
                        }
                    }
                }
                button.primary type="submit" { "Replicate" }
            }
        }
    }
}

/// `zone:resource` and a zone alone (its default resource), in words.
fn place_label(t: &str) -> String {
    match t.split_once(':') {
        Some((zone, resource)) => format!("zone {zone}, resource {resource}"),
        None => format!("zone {t}, its default resource"),
    }
}

/// Geometry of the chart, in the SVG's own units (it scales to the page's width).
const WIDTH: u32 = 640;
const LABEL: u32 = 112;
const TRACK: u32 = 360;
const ROW: u32 = 34;
const BAR: u32 = 18;
// A full bar and its figure (`1023 GiB · 100 %`, some 120 units) fit the drawing.
const _: () = assert!(LABEL + TRACK + 10 + 120 <= WIDTH);

/// One zone's bar.
#[derive(Debug, PartialEq)]
struct Bar {
    zone: String,
    bytes: u64,
    /// Top of the bar.
    y: u32,
    width: u32,
    /// Of the collection's bytes (above 100 with several copies in one zone).
    percent: f64,
}

/// The bars of `per_zone` (zone, bytes), in its order. A full track is the larger of
/// the collection's bytes and the largest zone's, so a zone holding everything once fills
/// it; a zone holding something gets at least a sliver.
fn bars(per_zone: &[(String, u64)], total: u64) -> Vec<Bar> {
    let scale = per_zone.iter().map(|z| z.1).max().unwrap_or(0).max(total).max(1);
    per_zone
        .iter()
        .enumerate()
        .map(|(i, (zone, bytes))| {
            let exact = *bytes as f64 / scale as f64 * f64::from(TRACK);
            let width = match *bytes {
                0 => 0,
                _ => (exact.round() as u32).clamp(2, TRACK),
            };
            Bar {
                zone: zone.clone(),
                bytes: *bytes,
                y: 8 + i as u32 * ROW,
                width,
                percent: if total == 0 {
                    0.0
                } else {
                    *bytes as f64 * 100.0 / total as f64
                },
            }
        })
        .collect()
}

/// The places' bytes summed per zone, this zone's first as the places come.
fn per_zone(d: &Distribution) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for p in &d.places {
        match out.iter_mut().find(|z| z.0 == p.zone) {
            Some(z) => z.1 += p.bytes,
            None => out.push((p.zone.clone(), p.bytes)),
        }
    }
    out
}

fn percent(p: f64) -> String {
    if p >= 10.0 || p <= 0.0 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// A collection's bytes per zone: the chart, and a table of the same per resource.
pub fn chart(user: &PageUser<'_>, v: &NodeView<'_>, d: &Distribution) -> Markup {
    let path = &v.info.node.path;
    let zones = per_zone(d);
    let bars = bars(&zones, d.bytes);
    let height = 8 + bars.len() as u32 * ROW;
    let summary: Vec<String> = bars
        .iter()
        .map(|b| {
            format!(
                "{}: {} ({})",
                b.zone,
                format::size(b.bytes as i64),
                percent(b.percent)
            )
        })
        .collect();
    html! {
        section #copies aria-labelledby="copies-h" {
            h2 #copies-h { "Data distribution" }
            (outcome(v.outcome, Part::Copies))
            p.facts {
                (format::count(d.objects as i64)) " data objects below this collection, "
                (format::size(d.bytes as i64)) ". Each zone's good copies, as a share of that:"
                @if d.truncated {
                    " " strong { "counted over the first " (format::count(i64::from(DISTRIBUTION_OBJECTS_MAX))) " objects by path only." }
                }
            }
            @if bars.is_empty() {
                p.empty { "No data objects below this collection." }
            } @else {
                div.chart-wrap {
                    svg.zone-bars viewBox={ "0 0 " (WIDTH) " " (height) } role="img"
                        aria-labelledby="chart-title chart-desc" preserveAspectRatio="xMinYMin meet" {
                        title #chart-title { "Bytes per zone below " (path.as_str()) }
                        desc #chart-desc { (summary.join("; ")) }
                        @for b in &bars {
                            g.bar-row {
                                text.zone-label x="0" y=(b.y + BAR - 4) { (b.zone) }
                                rect.track x=(LABEL) y=(b.y) width=(TRACK) height=(BAR) rx="3" {}
                                rect.bar x=(LABEL) y=(b.y) width=(b.width) height=(BAR) rx="3" {}
                                text.value x=(LABEL + TRACK + 10) y=(b.y + BAR - 4) {
                                    (format::size(b.bytes as i64)) " · " (percent(b.percent))
                                }
                            }
                        }
                    }
                    div.table-scroll {
                        table.distribution {
                            caption.visually-hidden { "Good copies per zone and resource below " (path.as_str()) }
                            thead {
                                tr {
                                    th scope="col" { "Zone" } th scope="col" { "Resource" }
                                    th scope="col" { "Objects" } th scope="col" { "Bytes" } th scope="col" { "Of the collection" }
                                }
                            }
                            tbody {
                                @for p in &d.places {
                                    tr {
                                        td.at-zone { (p.zone) } td { (p.resource) }
                                        td.num { (format::count(p.objects as i64)) }
                                        td.num { (format::size(p.bytes as i64)) }
                                        td.num { (percent(if d.bytes == 0 { 0.0 } else { p.bytes as f64 * 100.0 / d.bytes as f64 })) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (replicate_form(user, v))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_zone::namespace::PlaceCopies;

    fn place(zone: &str, resource: &str, bytes: u64) -> PlaceCopies {
        PlaceCopies {
            zone: zone.into(),
            resource: resource.into(),
            objects: 1,
            bytes,
        }
    }

    #[test]
    fn bars_fill_the_track_for_a_whole_copy() {
        let b = bars(&[("t".into(), 1000), ("u".into(), 250), ("v".into(), 1)], 1000);
        assert_eq!(
            b.iter().map(|b| b.width).collect::<Vec<_>>(),
            [TRACK, TRACK / 4, 2]
        );
        assert_eq!(
            b.iter().map(|b| b.y).collect::<Vec<_>>(),
            [8, 8 + ROW, 8 + 2 * ROW]
        );
        assert_eq!(percent(b[1].percent), "25 %");
        // Two copies in one zone: that zone fills the track, the others scale to it.
        let b = bars(&[("t".into(), 2000), ("u".into(), 1000)], 1000);
        assert_eq!((b[0].width, b[1].width), (TRACK, TRACK / 2));
        assert_eq!(percent(b[0].percent), "200 %");
        // Nothing anywhere: no bar, no division by zero.
        let b = bars(&[("t".into(), 0)], 0);
        assert_eq!((b[0].width, percent(b[0].percent).as_str()), (0, "0 %"));
    }

    #[test]
    fn places_are_summed_per_zone_in_order() {
        let d = Distribution {
            objects: 2,
            bytes: 10,
            truncated: false,
            places: vec![place("t", "disk", 10), place("t", "tape", 4), place("u", "d", 10)],
        };
        assert_eq!(per_zone(&d), [("t".to_owned(), 14), ("u".to_owned(), 10)]);
        assert_eq!(percent(100.0), "100 %");
        assert_eq!(percent(2.5), "2.5 %");
        assert_eq!(place_label("t:disk"), "zone t, resource disk");
        assert_eq!(place_label("u"), "zone u, its default resource");
    }
}
