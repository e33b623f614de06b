//! Policy evaluation cost per event with many rules loaded (issue 4's benchmark): how long
//! `PolicySet::fired` takes for one event on one object, with 100 rules of every kind of
//! condition. Not a test; prints nanoseconds per event.
//!
//!     cargo run --release -p weft-policy --example eval_cost [RULES] [EVENTS]

use std::time::Instant;
use weft_policy::{Event, ObjectFacts, PolicySet};

fn rules(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        // A mix: globs of several shapes, sizes, metadata, ages; a few rules match.
        let cond = match i % 5 {
            0 => format!("path = \"/lrz/home/*/project{i}/**\""),
            1 => format!("path = \"/lrz/**/run{i}-*.h5\"\nmin_size = \"{i} MiB\""),
            2 => format!("meta = [\"instrument=krios{i}\", \"quality>{i}\"]"),
            3 => format!("path = \"/lrz/home/alice/**\"\nolder_than = \"{}d\"", i + 1),
            _ => format!("zone = \"lrz\"\nmax_size = \"{} KiB\"", i + 1),
        };
        s.push_str(&format!(
            "[[rule]]\nname = \"r{i}\"\non = \"created\"\n[rule.if]\n{cond}\n[rule.do]\nreplicate = \"zone != origin\"\n\n"
        ));
    }
    s
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n_rules = args.first().copied().unwrap_or(100);
    let n_events = args.get(1).copied().unwrap_or(200_000);
    let set = PolicySet::parse(&rules(n_rules)).expect("the generated rules parse");
    let meta = vec![
        ("instrument".to_owned(), "krios7".to_owned()),
        ("quality".to_owned(), "4.5".to_owned()),
        ("project".to_owned(), "cryo".to_owned()),
    ];
    let paths: Vec<String> = (0..1000)
        .map(|i| {
            format!(
                "/lrz/home/alice/project{}/run{}/run{}-{}.h5",
                i % 50,
                i % 7,
                i % 13,
                i
            )
        })
        .collect();
    let mut fired = 0usize;
    let t0 = Instant::now();
    for e in 0..n_events {
        let path = &paths[e % paths.len()];
        let facts = ObjectFacts {
            path,
            zone: "lrz",
            size: (e as u64 % 64) << 20,
            created_ms: 1_700_000_000_000,
            now_ms: 1_700_000_000_000 + (e as i64 % 30) * 86_400_000,
            meta: &meta,
        };
        fired += set.fired(&Event::Created, &facts).len();
    }
    let per = t0.elapsed().as_nanos() as f64 / n_events as f64;
    println!(
        "{n_rules} rules, {n_events} events: {per:.0} ns per event ({:.2} µs), {:.1} rules fired per event",
        per / 1000.0,
        fired as f64 / n_events as f64
    );
}
