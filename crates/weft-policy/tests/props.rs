//! Property tests of what users write: policy files, place and QoS
//! expressions, sizes and durations. Arbitrary input never panics and fails with
//! `invalid_policy`; whatever parses prints as text that parses back to the same value;
//! rules parsed from random files evaluate on random objects without panicking. Bounded:
//! a few thousand cases, about a second.

use proptest::prelude::*;
use weft_policy::{parse_duration, parse_size, Event, ObjectFacts, Place, PolicySet, QosExpr, TargetExpr};
use weft_types::ErrorCode;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Token soup of the expression grammar, so that most cases get past the lexer.
fn expr_text() -> impl Strategy<Value = String> {
    let tok = prop_oneof![
        4 => prop_oneof![Just("zone"), Just("resource"), Just("tier"), Just("replicas")].prop_map(str::to_owned),
        3 => prop_oneof![Just("="), Just("!="), Just("&"), Just("|"), Just("("), Just(")")].prop_map(str::to_owned),
        3 => "[a-z0-9][a-z0-9._-]{0,5}",
        1 => Just("origin".to_owned()),
        1 => prop_oneof![Just(" "), Just("!"), Just("A"), Just("é"), Just("\0"), Just("\t")].prop_map(str::to_owned),
        1 => (0u64..100).prop_map(|n| n.to_string()),
        1 => Just("99999999999".to_owned()),
    ];
    proptest::collection::vec(tok, 0..30).prop_map(|t| t.join(" "))
}

/// Well-formed expressions, nested, so round trips are tried on real structure.
fn expr_tree() -> impl Strategy<Value = String> {
    let key = prop_oneof![Just("zone"), Just("resource"), Just("tier")];
    let op = prop_oneof![Just("="), Just("!=")];
    let value = prop_oneof![Just("origin".to_owned()), "[a-z][a-z0-9]{0,3}"];
    let leaf = (key, op, value).prop_map(|(k, o, v)| format!("{k} {o} {v}"));
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 2..4).prop_map(|v| v.join(" & ")),
            proptest::collection::vec(inner.clone(), 2..4).prop_map(|v| v.join(" | ")),
            inner.prop_map(|e| format!("({e})")),
        ]
    })
}

fn any_expr() -> impl Strategy<Value = String> {
    prop_oneof![expr_text(), expr_tree(), any::<String>()]
}

fn places() -> Vec<Place> {
    let mut out = Vec::new();
    for zone in ["a", "b", "lrz"] {
        for resource in ["a", "disk", "r1"] {
            for tier in ["b", "disk", "tape"] {
                out.push(Place {
                    zone: zone.into(),
                    resource: resource.into(),
                    tier: tier.into(),
                });
            }
        }
    }
    out
}

/// A random policy file: sections, keys and values drawn from what the format knows, plus
/// noise, so that files get past TOML into the checks of each field.
fn policy_text() -> impl Strategy<Value = String> {
    let header = prop_oneof![
        Just("[[rule]]"),
        Just("[rule.if]"),
        Just("[rule.do]"),
        Just("[rule]"),
        Just("[[rule.do]]")
    ];
    let key = prop_oneof![
        Just("name"),
        Just("on"),
        Just("attr"),
        Just("every"),
        Just("path"),
        Just("min_size"),
        Just("max_size"),
        Just("meta"),
        Just("zone"),
        Just("older_than"),
        Just("younger_than"),
        Just("set_meta"),
        Just("mint_pid"),
        Just("replicate"),
        Just("copies"),
        Just("evict"),
        Just("tier"),
        Just("trim"),
        Just("delete_after"),
        Just("webhook"),
        Just("if"),
        Just("do"),
        Just("x"),
    ];
    let value = prop_oneof![
        Just("\"created\"".to_owned()),
        Just("\"metadata\"".to_owned()),
        Just("\"schedule\"".to_owned()),
        Just("\"1h\"".to_owned()),
        Just("\"0s\"".to_owned()),
        Just("\"99999999999999w\"".to_owned()),
        Just("\"1 MiB\"".to_owned()),
        Just("\"16777216 TiB\"".to_owned()),
        Just("-1".to_owned()),
        Just("9223372036854775807".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("1e308".to_owned()),
        Just("nan".to_owned()),
        Just("true".to_owned()),
        Just("[]".to_owned()),
        Just("[\"a=b\", \"q>3\", \"x>y\"]".to_owned()),
        Just("\"/lrz/**/x/*\"".to_owned()),
        Just("\"/lrz/../x\"".to_owned()),
        Just("\"/a**/b\"".to_owned()),
        Just("{ mint_pid = 1 }".to_owned()),
        Just("\"https://e.org/h\"".to_owned()),
        Just("\"http://\"".to_owned()),
        Just("\"r1\"".to_owned()),
        expr_tree().prop_map(|e| format!("{e:?}")),
        any::<i64>().prop_map(|n| n.to_string()),
        "\\PC{0,10}".prop_map(|s| format!("{s:?}")),
    ];
    let line = prop_oneof![
        2 => header.prop_map(str::to_owned),
        6 => (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => "\\PC{0,20}",
    ];
    proptest::collection::vec(line, 0..24).prop_map(|l| l.join("\n"))
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn target_expressions_never_panic_and_round_trip(s in any_expr()) {
        match TargetExpr::parse(&s) {
            Ok(e) => {
                let shown = e.to_string();
                let again = TargetExpr::parse(&shown).unwrap_or_else(|err| panic!("{s:?} → {shown:?}: {err}"));
                prop_assert_eq!(&again, &e);
                prop_assert_eq!(again.to_string(), shown);
                // Something can match it (contradictions are refused), and evaluation is total.
                for p in places() {
                    let _ = e.matches(&p, "lrz");
                }
                let _ = (e.zones(), e.resources(), e.tiers());
                let json = serde_json::to_string(&e).unwrap();
                prop_assert_eq!(serde_json::from_str::<TargetExpr>(&json).unwrap(), e);
            }
            Err(err) => prop_assert_eq!(err.code, ErrorCode::InvalidPolicy),
        }
    }

    #[test]
    fn qos_expressions_never_panic_and_round_trip(s in prop_oneof![
        any_expr(),
        (1u32..70, expr_tree()).prop_map(|(n, e)| format!("replicas = {n} & {e}")),
        (expr_tree(), 0u32..70).prop_map(|(e, n)| format!("({e}) & replicas={n}")),
    ]) {
        match QosExpr::parse(&s) {
            Ok(q) => {
                prop_assert!((1..=64).contains(&q.replicas));
                let shown = q.to_string();
                let again = QosExpr::parse(&shown).unwrap_or_else(|err| panic!("{s:?} → {shown:?}: {err}"));
                prop_assert_eq!(&again, &q);
                prop_assert_eq!(again.to_string(), shown);
                for p in places() {
                    let _ = q.matches(&p, "a");
                }
            }
            Err(err) => prop_assert_eq!(err.code, ErrorCode::InvalidPolicy),
        }
    }

    #[test]
    fn sizes_and_durations_never_panic(s in prop_oneof![
        any::<String>(),
        "[ 0-9.]{0,25}[ ]?(b|B|kb|MB|gib|TiB|tib|xb|s|m|h|d|w|y)?",
    ]) {
        match parse_size(&s) {
            Ok(n) => {
                // A whole number of bytes without a unit reads as itself.
                if let Ok(exact) = s.trim().parse::<u64>() {
                    prop_assert_eq!(n, exact);
                }
            }
            Err(e) => prop_assert_eq!(e.code, ErrorCode::InvalidPolicy),
        }
        match parse_duration(&s) {
            Ok(d) => prop_assert!(d.as_secs() >= 1 && d.as_secs() <= 100 * 365 * 86_400),
            Err(e) => prop_assert_eq!(e.code, ErrorCode::InvalidPolicy),
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn policy_files_never_panic_and_evaluate(text in prop_oneof![4 => policy_text(), 1 => any::<String>()],
        path in prop_oneof![Just("/lrz/home/a/cryoem/x".to_owned()), "/[a-z]{1,3}(/[a-z*?]{0,3}){0,70}"],
        size in any::<u64>(), age in any::<i64>(), now in any::<i64>()) {
        match PolicySet::parse(&text) {
            Ok(set) => {
                prop_assert!(!set.rules.is_empty());
                let meta = vec![("a".to_owned(), "b".to_owned()), ("q".to_owned(), "4".to_owned())];
                let object = ObjectFacts {
                    path: &path,
                    zone: path.split('/').nth(1).unwrap_or(""),
                    size,
                    created_ms: age,
                    now_ms: now,
                    meta: &meta,
                };
                for event in [Event::Created, Event::Tick, Event::MetadataSet { attr: "a".into() }] {
                    let _ = set.fired(&event, &object);
                }
                for rule in &set.rules {
                    let _ = rule.condition.root();
                }
            }
            Err(e) => {
                prop_assert_eq!(e.code, ErrorCode::InvalidPolicy);
                prop_assert!(!e.message.contains('\n'), "{}", e.message);
            }
        }
    }
}

#[test]
fn hostile_files_are_errors_not_crashes() {
    for text in [
        "[[rule]]\n".repeat(10_000),
        format!("x = {}", "[".repeat(100_000)),
        format!("x = {}", "{a=".repeat(10_000)),
        format!(
            "[[rule]]\nname = \"a\"\non = \"created\"\n[rule.do]\nreplicate = \"{}zone = a{}\"",
            "(".repeat(10_000),
            ")".repeat(10_000)
        ),
        "\u{feff}[[rule]]".to_owned(),
        "\0".to_owned(),
    ] {
        assert_eq!(
            PolicySet::parse(&text).unwrap_err().code,
            ErrorCode::InvalidPolicy
        );
    }
    // Past the bound of the contradiction check: accepted or refused, quickly.
    let wide = "(zone = a | zone = b) & ".repeat(2_000) + "tier = x";
    let text = format!("[[rule]]\nname = \"a\"\non = \"created\"\n[rule.do]\nreplicate = \"{wide}\"");
    let _ = PolicySet::parse(&text);
}
