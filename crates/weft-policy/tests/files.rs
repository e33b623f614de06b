//! Policy files: a full example, every kind of bad input (with its line and field), rule
//! evaluation against object facts, and inputs that must never panic.

use weft_policy::{Action, Event, ObjectFacts, PolicySet, QosExpr, TargetExpr, Trigger};
use weft_types::ErrorCode;

const FULL: &str = r#"
# A data steward's rules.
[[rule]]
name = "cryo-to-it4i"
on = "created"

[rule.if]
path = "/lrz/home/*/cryoem/**"
min_size = "1 MiB"
max_size = 10737418240
meta = ["instrument=krios", "quality>3"]
zone = "lrz"
older_than = "1h"
younger_than = "30d"

[rule.do]
set_meta = ["stage=replicated", "site = lrz"]
mint_pid = true
replicate = "zone != origin & tier = disk"
copies = 2
evict = true
tier = "tape"
trim = "resource = scratch"
delete_after = "90d"
webhook = "https://example.org/hook"

[[rule]]
name = "announce"
on = "metadata"
attr = "publish"
[rule.do]
webhook = "http://127.0.0.1:9000/h"

[[rule]]
name = "nightly"
on = "schedule"
every = "1d"
[rule.do]
mint_pid = true
"#;

fn facts<'a>(path: &'a str, size: u64, age_s: i64, meta: &'a [(String, String)]) -> ObjectFacts<'a> {
    ObjectFacts {
        path,
        zone: path.split('/').nth(1).unwrap(),
        size,
        created_ms: 1_000_000_000_000,
        now_ms: 1_000_000_000_000 + age_s * 1000,
        meta,
    }
}

fn meta(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, v)| (a.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_full_file_parses_in_order_and_round_trips_through_json() {
    let set = PolicySet::parse(FULL).unwrap();
    assert_eq!(set.rules.len(), 3);
    let r = &set.rules[0];
    assert_eq!(r.name, "cryo-to-it4i");
    assert_eq!(r.trigger, Trigger::Created);
    let c = &r.condition;
    assert_eq!(c.path.as_deref(), Some("/lrz/home/*/cryoem/**"));
    assert_eq!((c.min_size, c.max_size), (Some(1 << 20), Some(10 << 30)));
    assert_eq!(c.meta.len(), 2);
    assert_eq!(
        (c.older_than_s, c.younger_than_s),
        (Some(3600), Some(30 * 86_400))
    );
    assert_eq!(c.root().as_deref(), Some("/lrz/home"));
    let kinds: Vec<String> = r
        .actions
        .iter()
        .map(|a| {
            serde_json::to_value(a).unwrap()["action"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "set_meta",
            "set_meta",
            "mint_pid",
            "replicate",
            "tier",
            "trim",
            "delete_after",
            "webhook"
        ]
    );
    assert_eq!(
        r.actions[1],
        Action::SetMeta {
            attr: "site".into(),
            value: "lrz".into()
        }
    );
    assert_eq!(
        r.actions[3],
        Action::Replicate {
            to: TargetExpr::parse("zone != origin & tier = disk").unwrap(),
            copies: 2,
            evict: true
        }
    );
    assert_eq!(r.actions[6], Action::DeleteAfter { after_s: 90 * 86_400 });
    assert_eq!(
        set.rules[1].trigger,
        Trigger::Metadata {
            attr: Some("publish".into())
        }
    );
    assert_eq!(set.rules[2].trigger, Trigger::Schedule { every_s: 86_400 });
    let json = serde_json::to_string(&set).unwrap();
    assert_eq!(serde_json::from_str::<PolicySet>(&json).unwrap(), set);
}

#[test]
fn rules_fire_on_their_trigger_when_the_condition_holds() {
    let set = PolicySet::parse(FULL).unwrap();
    let good = meta(&[("instrument", "krios"), ("quality", "4.5")]);
    let path = "/lrz/home/alice/cryoem/run1/movie.tif";
    let hit = facts(path, 200 << 20, 7200, &good);
    let fired: Vec<&str> = set
        .fired(&Event::Created, &hit)
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(fired, ["cryo-to-it4i"]);
    let misses = [
        facts("/lrz/home/alice/other/movie.tif", 200 << 20, 7200, &good),
        facts("/lrz/home/alice/cryoem", 200 << 20, 7200, &good),
        facts(path, 100, 7200, &good),
        facts(path, 11 << 30, 7200, &good),
        facts(path, 200 << 20, 60, &good),
        facts(path, 200 << 20, 31 * 86_400, &good),
        facts("/it4i/home/alice/cryoem/x", 200 << 20, 7200, &good),
    ];
    for f in &misses {
        assert!(set.fired(&Event::Created, f).is_empty(), "{f:?}");
    }
    let low = meta(&[("instrument", "krios"), ("quality", "2")]);
    assert!(set
        .fired(&Event::Created, &facts(path, 200 << 20, 7200, &low))
        .is_empty());
    let text = meta(&[("instrument", "krios"), ("quality", "high")]);
    assert!(set
        .fired(&Event::Created, &facts(path, 200 << 20, 7200, &text))
        .is_empty());

    let any = facts("/lrz/x", 1, 0, &[]);
    let on = |e: Event| -> Vec<String> { set.fired(&e, &any).iter().map(|r| r.name.clone()).collect() };
    assert_eq!(
        on(Event::MetadataSet {
            attr: "publish".into()
        }),
        ["announce"]
    );
    assert!(on(Event::MetadataSet {
        attr: "colour".into()
    })
    .is_empty());
    assert_eq!(on(Event::Tick), ["nightly"]);
}

fn error_of(text: &str) -> String {
    let e = PolicySet::parse(text).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidPolicy, "{text}");
    e.message
}

const HEAD: &str = "[[rule]]\nname = \"r\"\non = \"created\"\n";

#[test]
fn bad_files_name_line_and_field() {
    let cases: Vec<(String, &[&str])> = vec![
        ("[[rule]\nname = 1\n".into(), &["line 1"]),
        (
            format!("{HEAD}[rule.do]\nmint_pid = true\ncolour = \"red\"\n"),
            &["line 6", "colour"],
        ),
        (format!("{HEAD}[rule.do]\nmint_pid = \"yes\"\n"), &["line 5"]),
        (
            format!("{HEAD}[rule.do]\nreplicate = \"zone = \"\n"),
            &["line 5", "rule \"r\"", "do.replicate", "column"],
        ),
        (
            format!("{HEAD}[rule.do]\nreplicate = \"zone = a & zone = b\"\n"),
            &["line 5", "contradicts"],
        ),
        (
            "[[rule]]\nname = \"r\"\non = \"deleted\"\n[rule.do]\nmint_pid = true\n".into(),
            &["line 3", "on", "not a trigger"],
        ),
        (
            format!("{HEAD}[rule.do]\nevict = true\n"),
            &["line 5", "do.evict", "replicate"],
        ),
        (format!("{HEAD}[rule.do]\ncopies = 2\n"), &["line 5", "do.copies"]),
        (
            format!("{HEAD}[rule.do]\nreplicate = \"zone = a\"\ncopies = 0\n"),
            &["line 6", "do.copies"],
        ),
        (
            "[[rule]]\nname = \"r\"\non = \"schedule\"\n[rule.do]\nmint_pid = true\n".into(),
            &["line 3", "every"],
        ),
        (
            format!("{HEAD}every = \"1h\"\n[rule.do]\nmint_pid = true\n"),
            &["line 4", "every", "schedule"],
        ),
        (
            format!("{HEAD}attr = \"a\"\n[rule.do]\nmint_pid = true\n"),
            &["line 4", "attr", "metadata"],
        ),
        (
            format!("{HEAD}[rule.do]\nmint_pid = true\n\n{HEAD}[rule.do]\nmint_pid = true\n"),
            &["line 8", "second rule"],
        ),
        (
            format!("{HEAD}[rule.if]\nmin_size = \"12 parsecs\"\n[rule.do]\nmint_pid = true\n"),
            &["line 5", "if.min_size"],
        ),
        (
            format!("{HEAD}[rule.if]\nmin_size = -1\n[rule.do]\nmint_pid = true\n"),
            &["line 5", "negative"],
        ),
        (
            format!(
                "{HEAD}[rule.if]\nmin_size = \"2 MiB\"\nmax_size = \"1 MiB\"\n[rule.do]\nmint_pid = true\n"
            ),
            &["line 6", "if.max_size"],
        ),
        (
            format!("{HEAD}[rule.if]\nolder_than = \"a week\"\n[rule.do]\nmint_pid = true\n"),
            &["line 5", "if.older_than"],
        ),
        (
            format!(
                "{HEAD}[rule.if]\nolder_than = \"7d\"\nyounger_than = \"1d\"\n[rule.do]\nmint_pid = true\n"
            ),
            &["line 6", "if.younger_than"],
        ),
        (
            format!("{HEAD}[rule.if]\npath = \"lrz/home\"\n[rule.do]\nmint_pid = true\n"),
            &["line 5", "if.path", "start with /"],
        ),
        (
            format!("{HEAD}[rule.if]\npath = \"/lrz/../x\"\n[rule.do]\nmint_pid = true\n"),
            &["if.path", "\"..\""],
        ),
        (
            format!("{HEAD}[rule.if]\npath = \"/lrz/a**\"\n[rule.do]\nmint_pid = true\n"),
            &["if.path", "whole component"],
        ),
        (
            format!("{HEAD}[rule.if]\nmeta = [\"no operator\"]\n[rule.do]\nmint_pid = true\n"),
            &["line 5", "if.meta"],
        ),
        (
            format!("{HEAD}[rule.if]\nzone = \"Not_A_Zone\"\n[rule.do]\nmint_pid = true\n"),
            &["line 5", "if.zone"],
        ),
        (
            format!("{HEAD}[rule.do]\nset_meta = [\"novalue\"]\n"),
            &["line 5", "do.set_meta"],
        ),
        (
            format!("{HEAD}[rule.do]\nwebhook = \"ftp://x\"\n"),
            &["line 5", "do.webhook"],
        ),
        (
            format!("{HEAD}[rule.do]\ntier = \"Tape Library\"\n"),
            &["line 5", "do.tier"],
        ),
        (
            format!("{HEAD}[rule.do]\ndelete_after = \"0s\"\n"),
            &["line 5", "do.delete_after"],
        ),
        (
            format!("{HEAD}[rule.do]\nmint_pid = false\n"),
            &["line 2", "no action"],
        ),
        (HEAD.to_string(), &["no action"]),
        (
            "[[rule]]\nname = \"Bad Name\"\non = \"created\"\n[rule.do]\nmint_pid = true\n".into(),
            &["line 2", "name"],
        ),
        ("[[rule]]\non = \"created\"\n".into(), &["name"]),
        ("".into(), &["no rule"]),
        ("# only a comment\n".into(), &["no rule"]),
        ("[other]\nx = 1\n".into(), &["other"]),
        (
            format!("{HEAD}[rule.if]\nmin_size = 1.5\n[rule.do]\nmint_pid = true\n"),
            &["line 5", "if.min_size", "\"100 MiB\""],
        ),
        (
            format!("{HEAD}[rule.do]\nmint_pid = \"yes\"\n"),
            &["line 5: do.mint_pid: invalid type"],
        ),
        ("[[rule]]\nname = \"r\"\non = 5\n".into(), &["line 3: on: "]),
        (
            "[[rule]]\nname = \"r\"\n".into(),
            &["line 1", "missing field `on`"],
        ),
        (
            "[[rule]]\nname = \"r\"\non = \"schedule\"\nevery = \"0s\"\n[rule.do]\nmint_pid = true\n".into(),
            &["line 4", "every", "at least one second"],
        ),
        (
            format!("{HEAD}[rule.do]\nreplicate = \"zone = a\"\ncopies = 17\n"),
            &["line 6", "do.copies", "1 to 16"],
        ),
        (
            format!("{HEAD}[rule.do]\nwebhook = \"https://\"\n"),
            &["line 5", "do.webhook"],
        ),
        (
            format!("{HEAD}[rule.do]\nset_meta = [\"ok=1\", \"=v\"]\n"),
            &["line 5", "do.set_meta", "\"=v\""],
        ),
        (
            format!("{HEAD}[rule.do]\nset_meta = [\"a=\"]\n"),
            &["line 5", "do.set_meta"],
        ),
        (
            format!("{HEAD}[rule.if]\nmeta = [\"q>high\"]\n[rule.do]\nmint_pid = true\n"),
            &["line 5", "if.meta", "not a number"],
        ),
        (
            format!("{HEAD}[rule.do]\ntrim = \"tier = origin\"\n"),
            &["line 5", "do.trim", "origin"],
        ),
        (
            format!("{HEAD}[rule.do]\nmint_pid = true\n[rule.if]\nzone = \"lrz\"\nsize = 3\n"),
            &["line 8", "unknown field `size`"],
        ),
    ];
    for (text, wants) in &cases {
        let msg = error_of(text);
        for w in *wants {
            assert!(
                msg.contains(w),
                "{text:?}\n  gave {msg:?}\n  which should mention {w:?}"
            );
        }
    }
}

#[test]
fn errors_have_one_shape() {
    let text = "# cold data\n[[rule]]\nname = \"cold\"\non = \"created\"\n\n[rule.do]\nmint_pid = true\n\
                trim = \"zone = a\"\n\nreplicate = \"zone != \"\n";
    assert_eq!(
        error_of(text),
        "line 10: rule \"cold\": do.replicate: expected a value after \"!=\" at column 9"
    );
    let e = error_of("[[rule]\n");
    assert!(e.starts_with("line 1: ") && !e.contains('\n'), "{e:?}");
}

#[test]
fn inline_tables_and_minimal_rules_parse() {
    let set = PolicySet::parse(
        "[[rule]]\nname = \"m\"\non = \"metadata\"\nif = { meta = [\"a!=b\"] }\ndo = { tier = \"tape\" }\n",
    )
    .unwrap();
    let r = &set.rules[0];
    assert_eq!(r.trigger, Trigger::Metadata { attr: None });
    assert_eq!(r.actions, [Action::Tier { tier: "tape".into() }]);
    assert_eq!(r.condition.root(), None);
    let r = &PolicySet::parse(&format!("{HEAD}[rule.do]\nreplicate = \"zone = b\"\n"))
        .unwrap()
        .rules[0];
    assert_eq!(
        r.actions,
        [Action::Replicate {
            to: TargetExpr::parse("zone = b").unwrap(),
            copies: 1,
            evict: false
        }]
    );
}

#[test]
fn triggers_answer_their_events_only() {
    let set = PolicySet::parse(
        "[[rule]]\nname = \"c\"\non = \"created\"\n[rule.do]\nmint_pid = true\n\
         [[rule]]\nname = \"any\"\non = \"metadata\"\n[rule.do]\nmint_pid = true\n\
         [[rule]]\nname = \"one\"\non = \"metadata\"\nattr = \"x\"\n[rule.do]\nmint_pid = true\n\
         [[rule]]\nname = \"s\"\non = \"schedule\"\nevery = \"15m\"\n[rule.do]\nmint_pid = true\n",
    )
    .unwrap();
    let any = facts("/lrz/x", 1, 0, &[]);
    let names = |e: Event| -> Vec<String> { set.fired(&e, &any).iter().map(|r| r.name.clone()).collect() };
    assert_eq!(names(Event::Created), ["c"]);
    assert_eq!(names(Event::MetadataSet { attr: "x".into() }), ["any", "one"]);
    assert_eq!(names(Event::MetadataSet { attr: "y".into() }), ["any"]);
    assert_eq!(names(Event::Tick), ["s"]);
    assert_eq!(set.rules[3].trigger, Trigger::Schedule { every_s: 900 });
}

fn condition_file(cond: &str) -> PolicySet {
    PolicySet::parse(&format!("{HEAD}[rule.if]\n{cond}\n[rule.do]\nmint_pid = true\n")).unwrap()
}

#[test]
fn metadata_conditions_hold_for_any_pair() {
    let holds = |cond: &str, pairs: &[(&str, &str)]| {
        let set = condition_file(&format!("meta = [{cond}]"));
        let m = meta(pairs);
        set.rules[0].condition.matches(&facts("/lrz/x", 1, 0, &m))
    };
    assert!(holds("\"q>3\"", &[("q", "1"), ("q", "5")]));
    assert!(!holds("\"q>3\"", &[("q", "1"), ("r", "5")]));
    assert!(holds("\"q>=3\"", &[("q", "3.0")]));
    assert!(!holds("\"q<3\"", &[("q", "3")]));
    assert!(holds("\"q<=3\"", &[("q", "-1e2")]));
    assert!(!holds("\"q>3\"", &[("q", "many")]));
    assert!(holds("\"q!=a\"", &[("q", "a"), ("q", "b")]));
    assert!(!holds("\"q!=a\"", &[("q", "a")]));
    assert!(!holds("\"q!=a\"", &[]));
    assert!(holds("\"q=a b\"", &[("q", "a b")]));
    assert!(holds("\"q=a\", \"r=b\"", &[("q", "a"), ("r", "b")]));
    assert!(!holds("\"q=a\", \"r=b\"", &[("q", "a")]));
}

#[test]
fn ages_sizes_and_zones_bound_inclusively_as_documented() {
    let set = condition_file(
        "older_than = \"1h\"\nyounger_than = \"2h\"\nmin_size = 10\nmax_size = 20\nzone = \"lrz\"",
    );
    let c = &set.rules[0].condition;
    let at = |size: u64, age_ms: i64| ObjectFacts {
        path: "/lrz/x",
        zone: "lrz",
        size,
        created_ms: 5_000_000,
        now_ms: 5_000_000 + age_ms,
        meta: &[],
    };
    assert!(c.matches(&at(10, 3_600_000)));
    assert!(!c.matches(&at(10, 3_599_999)));
    assert!(c.matches(&at(20, 7_199_999)));
    assert!(!c.matches(&at(20, 7_200_000)));
    assert!(!c.matches(&at(9, 4_000_000)));
    assert!(!c.matches(&at(21, 4_000_000)));
    assert!(!c.matches(&ObjectFacts {
        zone: "it4i",
        ..at(15, 4_000_000)
    }));
    // Clocks gone wrong must not panic; a creation in the future is age 0.
    let odd = ObjectFacts {
        created_ms: i64::MIN,
        now_ms: i64::MAX,
        ..at(15, 0)
    };
    let _ = c.matches(&odd);
    let future = ObjectFacts {
        created_ms: 10,
        now_ms: 0,
        ..at(15, 0)
    };
    assert!(!c.matches(&future));
    let young = condition_file("younger_than = \"1h\"");
    assert!(young.rules[0].condition.matches(&future));
    // Equal sizes are one possible object; equal ages none.
    condition_file("min_size = 5\nmax_size = \"5 B\"");
    let e = error_of(&format!(
        "{HEAD}[rule.if]\nolder_than = \"1h\"\nyounger_than = \"60m\"\n[rule.do]\nmint_pid = true\n"
    ));
    assert!(e.contains("line 6") && e.contains("if.younger_than"), "{e}");
}

#[test]
fn roots_are_the_literal_collections() {
    for (glob, root) in [
        ("/lrz/home/*/cryoem/**", "/lrz/home"),
        ("/lrz/**", "/lrz"),
        ("/lrz/home/a.dat", "/lrz/home"),
        ("/lrz/x?/y", "/lrz"),
        ("/lrz", "/lrz"),
        ("/*/home/**", "/"),
    ] {
        let set = condition_file(&format!("path = \"{glob}\""));
        assert_eq!(set.rules[0].condition.root().as_deref(), Some(root), "{glob}");
    }
}

/// A small deterministic generator (xorshift), to build hostile inputs without a crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

#[test]
fn parsers_never_panic() {
    let expr_bits = [
        "zone", "tier", "resource", "replicas", "origin", "=", "!=", "&", "|", "(", ")", " ", "a", "b", "2",
        "0", "-", "!", "é", "\u{0}", "((((", "))))", "disk",
    ];
    let file_bits = [
        "[[rule]]\n",
        "[rule.do]\n",
        "[rule.if]\n",
        "name = \"r\"\n",
        "on = \"created\"\n",
        "on = \"schedule\"\n",
        "every = \"1s\"\n",
        "replicate = \"zone != origin\"\n",
        "evict = true\n",
        "copies = 3\n",
        "mint_pid = true\n",
        "path = \"/a/**/*b?\"\n",
        "min_size = \"1 KiB\"\n",
        "meta = [\"a>1\"]\n",
        "\"\n",
        "= =\n",
        "[[\n",
        "x = [\n",
        "trim = \"(zone = a\"\n",
        "delete_after = \"99999999999999w\"\n",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let n = (rng.next() % 12) as usize;
        let e: String = (0..n).map(|_| rng.pick(&expr_bits)).collect();
        if let Ok(t) = TargetExpr::parse(&e) {
            let text = t.to_string();
            assert_eq!(TargetExpr::parse(&text).as_ref(), Ok(&t), "{e:?} → {text:?}");
        }
        if let Ok(q) = QosExpr::parse(&e) {
            let text = q.to_string();
            assert_eq!(QosExpr::parse(&text).as_ref(), Ok(&q), "{e:?} → {text:?}");
        }
        let n = (rng.next() % 14) as usize;
        let f: String = (0..n).map(|_| rng.pick(&file_bits)).collect();
        let _ = PolicySet::parse(&f);
    }
    let deep = format!("{}zone = a{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(TargetExpr::parse(&deep).is_err());
    let wide = vec!["(zone = a | zone = b)"; 40].join(" & ");
    let _ = TargetExpr::parse(&wide);
}

#[test]
fn a_dataset_rule_fires_when_a_dataset_closes_and_extract_runs_first() {
    let set = PolicySet::parse(
        "[[rule]]\nname = \"to-hpc\"\non = \"dataset_closed\"\n[rule.if]\npath = \"/lrz/krios/*\"\n\
         [rule.do]\nwebhook = \"https://example.org/h\"\nmint_pid = true\nreplicate = \"zone = it4i\"\nextract = true\n",
    )
    .unwrap();
    let rule = &set.rules[0];
    assert_eq!(rule.trigger, Trigger::DatasetClosed);
    assert!(matches!(rule.actions[0], Action::Extract), "{:?}", rule.actions);
    // Copies and headers are per object of the dataset; a PID and a webhook call are the
    // collection's.
    let each: Vec<bool> = rule.actions.iter().map(Action::on_each_object).collect();
    assert_eq!(each, [true, false, true, false]);
    let collection = facts("/lrz/krios/session1", 0, 0, &[]);
    assert_eq!(set.fired(&Event::DatasetClosed, &collection).len(), 1);
    assert!(set.fired(&Event::Created, &collection).is_empty());
    assert!(set
        .fired(&Event::DatasetClosed, &facts("/lrz/other/s", 0, 0, &[]))
        .is_empty());
}
