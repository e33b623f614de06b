//! The throughput charts: server-rendered SVG line charts of bytes per second over time,
//! with a rate axis in binary units (`KiB/s`, `MiB/s`) on round steps and a time axis whose
//! labels the page's script rewrites in the browser's time zone. No chart library: the
//! geometry is a few functions, tested below.

use crate::web::format;
use maud::{html, Markup};
use weft_types::Millis;

/// Drawing area of one chart, in SVG units.
const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 170.0;
const LEFT: f64 = 74.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 24.0;

/// One line of a chart: a peer's rates, one per bin.
pub struct Line<'a> {
    pub label: &'a str,
    pub color: &'static str,
    pub rates: &'a [f64],
}

/// The time a chart spans: `bins` bins of `bin` ms from `start`.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub start: Millis,
    pub bin: Millis,
    pub bins: usize,
}

/// Colours of the peers' lines, by their place among the zone's peers (so a peer has the
/// same colour on every chart and on the map's legend).
pub const PALETTE: [&str; 6] = ["#1f77b4", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#a6761d"];

/// The top of the rate axis and its step, in bytes per second, for a largest value of
/// `max`: a step of 1, 2 or 5 times a power of ten of the unit (B/s, KiB/s, ...) that
/// shows `max` below 1024, with at most four steps to the top.
pub fn axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1024.0 };
    let unit = unit_of(max).0;
    let m = max / unit;
    // From a decade below, so that the finest step that fits is found first.
    let mut magnitude = 10f64.powf(m.log10().floor() - 1.0);
    loop {
        for k in [1.0, 2.0, 5.0] {
            let step = k * magnitude;
            if m / step <= 4.0 {
                let top = (m / step).ceil() * step;
                return (top * unit, step * unit);
            }
        }
        magnitude *= 10.0;
    }
}

/// The binary unit `v` bytes per second reads in, with its divisor.
fn unit_of(v: f64) -> (f64, &'static str) {
    let mut unit = 1.0;
    for name in ["B/s", "KiB/s", "MiB/s", "GiB/s"] {
        if v < unit * 1024.0 {
            return (unit, name);
        }
        unit *= 1024.0;
    }
    (unit, "TiB/s")
}

/// A rate as people read it: `0 B/s`, `512 B/s`, `2.5 MiB/s`.
pub fn rate(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        return "0 B/s".into();
    }
    format!("{}/s", format::size(v.round() as i64))
}

/// An axis label: the value in the axis's unit, without needless decimals.
fn tick_label(v: f64, unit: (f64, &str)) -> String {
    let n = v / unit.0;
    let text = if (n - n.round()).abs() < 1e-9 {
        format!("{}", n.round() as i64)
    } else {
        format!("{n:.1}")
    };
    format!("{text} {}", unit.1)
}

/// The x of time `t` on a chart of `span`.
fn x_of(span: &Span, t: f64) -> f64 {
    let width = (span.bin * span.bins as Millis).max(1) as f64;
    LEFT + (t - span.start as f64) / width * (WIDTH - LEFT - RIGHT)
}

/// The y of rate `v` on an axis topped at `top`.
fn y_of(v: f64, top: f64) -> f64 {
    let h = HEIGHT - TOP - BOTTOM;
    HEIGHT - BOTTOM - (v / top).clamp(0.0, 1.0) * h
}

/// The path of a line through each bin's middle.
pub fn line_path(span: &Span, rates: &[f64], top: f64) -> String {
    let mut d = String::new();
    for (i, v) in rates.iter().enumerate() {
        let t = span.start as f64 + (i as f64 + 0.5) * span.bin as f64;
        let cmd = if i == 0 { 'M' } else { 'L' };
        d.push_str(&format!("{cmd}{:.1} {:.1} ", x_of(span, t), y_of(*v, top)));
    }
    d.trim_end().to_owned()
}

/// The area under a line: its path closed along the axis.
fn area_path(span: &Span, rates: &[f64], top: f64) -> String {
    let line = line_path(span, rates, top);
    if rates.is_empty() {
        return line;
    }
    let x = |i: usize| x_of(span, span.start as f64 + (i as f64 + 0.5) * span.bin as f64);
    let base = HEIGHT - BOTTOM;
    format!(
        "{line} L{:.1} {base:.1} L{:.1} {base:.1} Z",
        x(rates.len() - 1),
        x(0)
    )
}

/// The times of the time axis's ticks: multiples of `every` inside the span.
pub fn time_ticks(span: &Span, every: Millis) -> Vec<Millis> {
    let end = span.start + span.bin * span.bins as Millis;
    let first = span.start + (every - span.start.rem_euclid(every)) % every;
    (0..)
        .map(|i| first + i * every)
        .take_while(|t| *t <= end)
        .collect()
}

/// One chart: the lines of `lines` over `span`, ticks every `every` ms labelled as times of
/// day (`date`: as dates).
pub fn chart(title: &str, span: &Span, lines: &[Line<'_>], every: Millis, date: bool) -> Markup {
    let max = lines
        .iter()
        .flat_map(|l| l.rates.iter().copied())
        .fold(0.0, f64::max);
    let (top, step) = axis(max);
    let unit = unit_of(top);
    let steps = (top / step).round() as usize;
    let fmt = if date { "date" } else { "time" };
    let summary = if max > 0.0 {
        format!("{title}: at most {} over the period shown", rate(max))
    } else {
        format!("{title}: nothing moved over the period shown")
    };
    html! {
        svg.chart viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } role="img" aria-label=(summary)
            preserveAspectRatio="xMidYMid meet" {
            title { (summary) }
            @for i in 0..=steps {
                @let v = step * i as f64;
                @let y = y_of(v, top);
                line.grid x1=(LEFT) x2=(WIDTH - RIGHT) y1=(format!("{y:.1}")) y2=(format!("{y:.1}")) {}
                text.tick x=(LEFT - 6.0) y=(format!("{:.1}", y + 4.0)) text-anchor="end" { (tick_label(v, unit)) }
            }
            @for t in time_ticks(span, every) {
                @let x = x_of(span, t as f64);
                line.grid.vertical x1=(format!("{x:.1}")) x2=(format!("{x:.1}")) y1=(TOP) y2=(HEIGHT - BOTTOM) {}
                text.tick.time x=(format!("{x:.1}")) y=(HEIGHT - 6.0) text-anchor="middle" data-at=(t) data-fmt=(fmt) {
                    (utc_label(t, date))
                }
            }
            @for l in lines {
                path.area d=(area_path(span, l.rates, top)) fill=(l.color) {}
            }
            @for l in lines {
                path.series d=(line_path(span, l.rates, top)) stroke=(l.color) fill="none" {
                    title { (l.label) ": at most " (rate(l.rates.iter().copied().fold(0.0, f64::max))) }
                }
            }
        }
    }
}

/// A tick's label until the script writes it in the browser's time zone.
fn utc_label(t: Millis, date: bool) -> String {
    match chrono::DateTime::from_timestamp_millis(t) {
        Some(d) if date => d.format("%b %d").to_string(),
        Some(d) => d.format("%H:%M").to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: f64 = 1024.0;
    const MIB: f64 = 1024.0 * 1024.0;

    #[test]
    fn the_rate_axis_tops_the_largest_value_on_a_round_step() {
        assert_eq!(axis(0.0), (1024.0, 512.0), "nothing moved: an axis to 1 KiB/s");
        assert_eq!(axis(3.3 * MIB), (4.0 * MIB, 1.0 * MIB));
        assert_eq!(axis(700.0), (800.0, 200.0));
        assert_eq!(axis(12.0 * KIB), (15.0 * KIB, 5.0 * KIB));
        assert_eq!(axis(1000.0 * MIB), (1000.0 * MIB, 500.0 * MIB));
        for max in [1.0, 99.0, 1023.0, 5000.0, 7.7 * MIB, 3e12] {
            let (top, step) = axis(max);
            assert!(top >= max && top / step <= 4.0 + 1e-9, "{max}: {top} {step}");
        }
        assert_eq!(rate(0.0), "0 B/s");
        assert_eq!(rate(2.5 * MIB), "2.50 MiB/s");
        assert_eq!(tick_label(2.5 * MIB, unit_of(4.0 * MIB)), "2.5 MiB/s");
        assert_eq!(tick_label(0.0, unit_of(4.0 * MIB)), "0 MiB/s");
    }

    #[test]
    fn points_sit_in_their_bins_and_ticks_on_round_times() {
        let span = Span {
            start: 600_000,
            bin: 60_000,
            bins: 60,
        };
        let d = line_path(&span, &[0.0, 100.0, 50.0], 100.0);
        let points: Vec<(f64, f64)> = d
            .split(['M', 'L'])
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                let mut it = s.split_whitespace().map(|n| n.parse::<f64>().unwrap());
                (it.next().unwrap(), it.next().unwrap())
            })
            .collect();
        let plot = WIDTH - LEFT - RIGHT;
        assert!((points[0].0 - (LEFT + plot * 0.5 / 60.0)).abs() < 0.1, "{d}");
        assert_eq!(points[0].1, HEIGHT - BOTTOM, "0 on the axis");
        assert_eq!(points[1].1, TOP, "the top value at the top");
        assert!((points[2].1 - (TOP + HEIGHT - BOTTOM) / 2.0).abs() < 0.1);
        // Every ten minutes from the first round one, through the end of the span.
        let ticks = time_ticks(&span, 600_000);
        assert_eq!(ticks.first(), Some(&600_000));
        assert_eq!(ticks.last(), Some(&(600_000 + 3_600_000)));
        assert_eq!(ticks.len(), 7);
        let off = Span {
            start: 601_000,
            ..span
        };
        assert_eq!(time_ticks(&off, 600_000).first(), Some(&1_200_000));
        assert!((x_of(&span, 600_000.0) - LEFT).abs() < 1e-9);
        assert!((x_of(&span, 4_200_000.0) - (WIDTH - RIGHT)).abs() < 1e-9);
    }
}
