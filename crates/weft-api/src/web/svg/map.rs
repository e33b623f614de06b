//! The map of zones: this zone and its federated peers as nodes, and an arc for each way
//! the caller's transfers run between two zones, labelled with how many and the rate.
//! Server-rendered SVG; the Transfers page's script fetches it again every few seconds.

use super::charts::{rate, PALETTE};
use maud::{html, Markup};
use weft_zone::transfers::ZoneMap;

const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 340.0;
/// A node's radius: arcs end at its rim.
const NODE: f64 = 30.0;

/// Where each zone is drawn: this zone in the middle with its peers on an ellipse around
/// it, starting on the right; with one peer, the two side by side.
pub fn positions(peers: usize) -> ((f64, f64), Vec<(f64, f64)>) {
    let (cx, cy) = (WIDTH / 2.0, HEIGHT / 2.0);
    if peers == 1 {
        return ((cx - 140.0, cy), vec![(cx + 140.0, cy)]);
    }
    let ring = (0..peers)
        .map(|i| {
            let a = std::f64::consts::TAU * i as f64 / peers as f64;
            (cx + 205.0 * a.cos(), cy + 108.0 * a.sin())
        })
        .collect();
    ((cx, cy), ring)
}

/// An arc from `a` to `b`: a quadratic curve bowed to its left, so that the two ways
/// between two zones do not overlap, ending at the nodes' rims; and where its label goes.
pub fn arc(a: (f64, f64), b: (f64, f64)) -> (String, (f64, f64)) {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / len, dy / len);
    let start = (a.0 + ux * NODE, a.1 + uy * NODE);
    let end = (b.0 - ux * (NODE + 4.0), b.1 - uy * (NODE + 4.0));
    let bow = len * 0.18;
    let mid = ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0);
    let control = (mid.0 + uy * bow, mid.1 - ux * bow);
    let label = (
        0.25 * start.0 + 0.5 * control.0 + 0.25 * end.0,
        0.25 * start.1 + 0.5 * control.1 + 0.25 * end.1,
    );
    (
        format!(
            "M{:.1} {:.1} Q{:.1} {:.1} {:.1} {:.1}",
            start.0, start.1, control.0, control.1, end.0, end.1
        ),
        label,
    )
}

/// The map's SVG, and the same flows as a list.
pub fn map(m: &ZoneMap) -> Markup {
    html! {
        (drawing(m))
        @if m.flows.is_empty() {
            ul.flows { li.muted { "No transfers running between zones now." } }
        } @else {
            ul.flows aria-label="Running between zones" {
                @for f in &m.flows {
                    li {
                        span.way { (f.from.as_str()) " → " (f.to.as_str()) }
                        span { (f.transfers) @if f.transfers == 1 { " transfer" } @else { " transfers" } }
                        span.muted { (rate(f.rate)) " over the last minute or two" }
                    }
                }
            }
        }
    }
}

fn drawing(m: &ZoneMap) -> Markup {
    // Peers of the flows that are no longer federated still get a node.
    let mut peers: Vec<&str> = m.peers.iter().map(|p| p.as_str()).collect();
    for f in &m.flows {
        for z in [&f.from, &f.to] {
            if *z != m.here && !peers.contains(&z.as_str()) {
                peers.push(z.as_str());
            }
        }
    }
    let (here, ring) = positions(peers.len());
    let at = |zone: &str| peers.iter().position(|p| *p == zone).map_or(here, |i| ring[i]);
    let running: u32 = m.flows.iter().map(|f| f.transfers).sum();
    let summary = match (peers.len(), running) {
        (0, _) => format!("zone {} has no federated zones", m.here),
        (n, 0) => format!(
            "zone {} and {n} federated zones; no transfer runs between them now",
            m.here
        ),
        (n, r) => format!(
            "zone {} and {n} federated zones; {r} transfers running between them",
            m.here
        ),
    };
    html! {
        svg.zone-map viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } role="img" aria-label=(summary) data-running=(running) {
            title { (summary) }
            defs {
                marker #arrow viewBox="0 0 10 10" refX="8" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                    path d="M0 0 L10 5 L0 10 z" fill="#1f5f8b" {}
                }
            }
            @for f in &m.flows {
                @let (d, (lx, ly)) = arc(at(f.from.as_str()), at(f.to.as_str()));
                g.flow data-from=(f.from.as_str()) data-to=(f.to.as_str()) {
                    path.flow-line d=(d) marker-end="url(#arrow)" {}
                    text.flow-label x=(format!("{lx:.1}")) y=(format!("{:.1}", ly - 6.0)) text-anchor="middle" {
                        (rate(f.rate)) " · " (f.transfers) @if f.transfers == 1 { " transfer" } @else { " transfers" }
                    }
                }
            }
            g.node.here data-zone=(m.here.as_str()) {
                circle cx=(here.0) cy=(here.1) r=(NODE) {}
                text x=(here.0) y=(format!("{:.1}", here.1 + 4.0)) text-anchor="middle" { (m.here.as_str()) }
                text.node-note x=(here.0) y=(format!("{:.1}", here.1 + NODE + 14.0)) text-anchor="middle" { "this zone" }
            }
            @for (i, (p, (x, y))) in peers.iter().zip(ring.iter()).enumerate() {
                g.node.peer data-zone=(p) {
                    circle cx=(x) cy=(y) r=(NODE) stroke=(PALETTE[i % PALETTE.len()]) {}
                    text x=(x) y=(format!("{:.1}", y + 4.0)) text-anchor="middle" { (p) }
                }
            }
            @if peers.is_empty() {
                text.node-note x=(WIDTH / 2.0) y=(HEIGHT - 30.0) text-anchor="middle" {
                    "No federated zones yet: an administrator adds one with weft zone add."
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_are_placed_apart_inside_the_map() {
        for n in 0..12 {
            let (here, ring) = positions(n);
            assert_eq!(ring.len(), n);
            let all: Vec<(f64, f64)> = std::iter::once(here).chain(ring).collect();
            for (i, a) in all.iter().enumerate() {
                assert!(
                    a.0 - NODE >= 0.0 && a.0 + NODE <= WIDTH && a.1 - NODE >= 0.0 && a.1 + NODE <= HEIGHT,
                    "{n}: {a:?}"
                );
                for b in &all[i + 1..] {
                    let d = ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt();
                    assert!(d >= 2.0 * NODE, "{n}: {a:?} {b:?} overlap");
                }
            }
        }
    }

    #[test]
    fn arcs_run_rim_to_rim_and_the_two_ways_bow_apart() {
        let (a, b) = ((100.0, 150.0), (400.0, 150.0));
        let (there, l1) = arc(a, b);
        let (back, l2) = arc(b, a);
        assert!(there.starts_with("M130.0 150.0 Q"), "{there}");
        assert!(there.ends_with("366.0 150.0"), "{there}");
        assert!(back.starts_with("M370.0 150.0"), "{back}");
        // One above the line, the other below.
        assert!(l1.1 < 150.0 && l2.1 > 150.0, "{l1:?} {l2:?}");
        assert!((l1.0 - l2.0).abs() < 3.0);
    }
}
