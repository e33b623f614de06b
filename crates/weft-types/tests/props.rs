//! Property tests of the parsers that read the network and the command line: arbitrary
//! input never panics, whatever parses keeps the type's invariants, and
//! what a parsed value prints parses back to the same value. Bounded: a few thousand
//! cases in all, well under a second.

use proptest::prelude::*;
use weft_types::path::{MAX_NAME_LEN, MAX_PATH_LEN};
use weft_types::wire;
use weft_types::{
    Checksum, Endpoint, ErrorCode, LogicalPath, MetaCondition, PrincipalName, ResourceName, StagingName,
    ZoneName,
};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Text close to what the parsers look for: their separators, dots, NUL and control
/// characters, upper case and non-ASCII, so that random strings reach past the first check.
fn near_path() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            4 => "[a-z][a-z0-9-]{0,6}",
            2 => Just("/".to_owned()),
            1 => Just(".".to_owned()),
            1 => Just("..".to_owned()),
            1 => Just("\0".to_owned()),
            1 => Just("\n".to_owned()),
            1 => Just("ä ö".to_owned()),
            1 => Just("A".to_owned()),
            1 => Just("://".to_owned()),
            1 => Just(":".to_owned()),
            1 => Just("#".to_owned()),
            1 => Just("replica://".to_owned()),
            1 => Just("file://".to_owned()),
            1 => Just("s3://".to_owned()),
            1 => "\\PC{0,4}",
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![near_path(), any::<String>(), "\\PC{0,300}"]
}

/// The invariants every `LogicalPath` keeps.
fn check_path(p: &LogicalPath) {
    let s = p.as_str();
    assert!(s.len() <= MAX_PATH_LEN, "{s:?}");
    assert!(s.starts_with('/'), "{s:?}");
    assert!(ZoneName::parse(p.zone()).is_ok(), "{s:?}");
    for c in s[1..].split('/') {
        assert!(!c.is_empty() && c != "." && c != "..", "{s:?}");
        assert!(c.len() <= MAX_NAME_LEN, "{s:?}");
        assert!(!c.chars().any(char::is_control), "{s:?}");
    }
    assert!(!s.contains('\0'));
    if let Some(parent) = p.parent() {
        assert!(p.starts_with(&parent));
        assert_eq!(LogicalPath::parse(parent.as_str()).unwrap(), parent);
    }
    let anc = p.ancestors_and_self();
    assert_eq!(anc.last(), Some(p));
    assert_eq!(anc.len(), s.matches('/').count());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn logical_paths_never_panic_and_keep_their_invariants(s in any_text()) {
        if let Ok(p) = LogicalPath::parse(&s) {
            check_path(&p);
            // Display round-trips, and so does serde.
            prop_assert_eq!(LogicalPath::parse(&p.to_string()).unwrap(), p.clone());
            let json = serde_json::to_string(&p).unwrap();
            prop_assert_eq!(serde_json::from_str::<LogicalPath>(&json).unwrap(), p);
        } else {
            prop_assert!(serde_json::from_str::<LogicalPath>(&serde_json::to_string(&s).unwrap()).is_err());
        }
    }

    #[test]
    fn valid_paths_parse(zone in "[a-z][a-z0-9-]{0,20}", names in proptest::collection::vec("[^/\\x00-\\x1f\\x7f]{1,20}", 0..8)) {
        let names: Vec<String> = names.into_iter().filter(|n| n != "." && n != ".." && !n.chars().any(char::is_control)).collect();
        let s = format!("/{zone}{}", names.iter().map(|n| format!("/{n}")).collect::<String>());
        let p = LogicalPath::parse(&s).unwrap();
        check_path(&p);
        prop_assert_eq!(p.as_str(), s.as_str());
        prop_assert_eq!(p.zone(), zone.as_str());
        // A join of a valid name stays valid; a join of a bad one fails cleanly.
        if let Ok(j) = p.join("x") {
            check_path(&j);
            prop_assert_eq!(j.parent().unwrap(), p.clone());
        }
        prop_assert!(p.join("..").is_err());
    }

    #[test]
    fn join_and_rebase_never_panic(a in near_path(), b in near_path(), name in any_text()) {
        let (Ok(a), Ok(b)) = (LogicalPath::parse(&a), LogicalPath::parse(&b)) else { return Ok(()) };
        if let Ok(j) = a.join(&name) {
            check_path(&j);
        }
        if let Some(r) = a.rebase(&a, &b) {
            prop_assert_eq!(r, b.clone());
        }
        let _ = a.starts_with(&b);
        let _ = a.rebase(&b, &a);
    }

    #[test]
    fn names_never_panic_and_round_trip(s in any_text()) {
        if let Ok(z) = ZoneName::parse(&s) {
            prop_assert!(z.as_str().len() <= 63);
            prop_assert_eq!(ZoneName::parse(&z.to_string()).unwrap(), z);
        }
        if let Ok(p) = PrincipalName::parse(&s) {
            prop_assert!(p.as_str().len() <= 128 && !p.as_str().contains(['/', '\0', ' ']));
            prop_assert_eq!(PrincipalName::parse(&p.to_string()).unwrap(), p);
        }
        if let Ok(r) = ResourceName::parse(&s) {
            prop_assert_eq!(ResourceName::parse(&r.to_string()).unwrap(), r);
        }
        if let Ok(a) = StagingName::parse(&s) {
            prop_assert_eq!(StagingName::parse(&a.to_string()).unwrap(), a);
        }
    }

    #[test]
    fn endpoints_never_panic_and_round_trip(s in any_text(), rel in near_path()) {
        if let Ok(e) = Endpoint::parse(&s) {
            let shown = e.to_string();
            let again = Endpoint::parse(&shown).unwrap_or_else(|err| panic!("{s:?} → {shown:?}: {err}"));
            prop_assert_eq!(&again, &e);
            match &e {
                Endpoint::File(p) => {
                    prop_assert!(p.starts_with('/') && !p.contains('\0'));
                    prop_assert!(p == "/" || p[1..].split('/').all(|c| !c.is_empty() && c != "." && c != ".."));
                }
                Endpoint::S3 { bucket, key } => {
                    prop_assert!((3..=63).contains(&bucket.len()));
                    prop_assert!(!key.contains('\0') && key.split('/').all(|c| c != "." && c != ".."));
                }
                Endpoint::Logical(p) => check_path(p),
                Endpoint::Replica { object, .. } => {
                    if let Some(p) = object { check_path(p) }
                }
            }
            let _ = e.name();
            let _ = e.join(&rel);
        }
    }

    #[test]
    fn checksums_never_panic_and_round_trip(s in prop_oneof![any_text(), "blake3:[0-9a-fA-F]{60,68}", "[a-z0-9]{0,8}:[0-9a-f]{64}"]) {
        if let Ok(c) = Checksum::parse(&s) {
            prop_assert_eq!(c.hex.len(), 64);
            prop_assert!(c.hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            prop_assert_eq!(Checksum::parse(&c.to_string()).unwrap(), c);
        } else {
            prop_assert!(s.split_once(':').is_none_or(|(a, h)| a != "blake3" || h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit())));
        }
    }

    #[test]
    fn meta_conditions_never_panic_and_round_trip(s in prop_oneof![
        any_text(),
        "[a-z! ]{0,5}(=|!=|<|<=|>|>=|==|=<|!)[-+0-9.eE a-zA-Z=<>!]{0,8}",
    ]) {
        if let Ok(c) = MetaCondition::parse(&s) {
            prop_assert!(!c.attr.is_empty() && !c.attr.contains('\0'));
            if c.op.is_numeric() {
                prop_assert!(c.number().is_some_and(f64::is_finite));
            }
            let again = MetaCondition::parse(&c.to_string()).unwrap_or_else(|e| panic!("{s:?} → {c}: {e}"));
            prop_assert_eq!(again, c);
        }
    }

    /// The request bodies of API v1 as serde reads them: any JSON, valid or not, is a value
    /// or an error.
    #[test]
    fn wire_requests_never_panic(s in prop_oneof![any_text(), json_like()]) {
        let b = s.as_bytes();
        let _ = serde_json::from_slice::<wire::MoveRequest>(b);
        let _ = serde_json::from_slice::<wire::CopyRequest>(b);
        let _ = serde_json::from_slice::<wire::UploadRequest>(b);
        let _ = serde_json::from_slice::<wire::CompleteUpload>(b);
        let _ = serde_json::from_slice::<wire::MetaBatch>(b);
        let _ = serde_json::from_slice::<wire::MetaRequest>(b);
        let _ = serde_json::from_slice::<wire::NewUser>(b);
        let _ = serde_json::from_slice::<wire::NewGroup>(b);
        let _ = serde_json::from_slice::<wire::TokenRequest>(b);
        let _ = serde_json::from_slice::<wire::AclRequest>(b);
        let _ = serde_json::from_slice::<wire::NewResourceWire>(b);
        let _ = serde_json::from_slice::<wire::NewPeerZone>(b);
        let _ = serde_json::from_slice::<wire::UserMapWire>(b);
        let _ = serde_json::from_slice::<wire::NewStagingArea>(b);
        let _ = serde_json::from_slice::<wire::BundleHeader>(b);
        let _ = serde_json::from_slice::<wire::TransferRequest>(b);
        let _ = serde_json::from_slice::<wire::ReplicateRequest>(b);
        let _ = serde_json::from_slice::<wire::MintPidRequest>(b);
        let _ = serde_json::from_slice::<wire::PolicyRequest>(b);
        let _ = serde_json::from_slice::<wire::QosRequest>(b);
    }
}

/// JSON objects with the wire types' field names and hostile values.
fn json_like() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("path"),
        Just("to"),
        Just("from"),
        Just("size"),
        Just("piece_size"),
        Just("resource"),
        Just("overwrite"),
        Just("checksum"),
        Just("files"),
        Just("name"),
        Just("attr"),
        Just("value"),
        Just("unit"),
        Just("source"),
        Just("destination"),
        Just("sources"),
        Just("zone"),
        Just("text"),
        Just("expr"),
        Just("permission"),
        Just("principal"),
        Just("recursive"),
        Just("expires_in_s"),
    ];
    let value = prop_oneof![
        Just("-1".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("1e400".to_owned()),
        Just("null".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("\"/z/../a\"".to_owned()),
        Just("\"/z/a\\u0000b\"".to_owned()),
        Just("\"\\ud800\"".to_owned()),
        Just("[{\"path\":\"/z/a\",\"size\":1,\"checksum\":\"x\"}]".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        "\\PC{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ];
    proptest::collection::vec((key, value), 0..6).prop_map(|kv| {
        let fields: Vec<String> = kv.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", fields.join(","))
    })
}

#[test]
fn deep_json_is_refused_not_a_stack_overflow() {
    // serde_json stops at 128 levels; a body of a million brackets is an error, not a crash.
    let deep = "[".repeat(1_000_000);
    assert!(serde_json::from_str::<wire::TransferRequest>(&deep).is_err());
    let deep = format!("{{\"path\":{}", "{\"a\":".repeat(100_000));
    assert!(serde_json::from_str::<wire::MoveRequest>(&deep).is_err());
}

#[test]
fn path_limits_are_codes_not_panics() {
    let long = format!("/z/{}", "é".repeat(200));
    assert_eq!(
        LogicalPath::parse(&long).unwrap_err().code,
        ErrorCode::NameTooLong
    );
    let exact = format!("/z{}", "/a".repeat((MAX_PATH_LEN - 2) / 2));
    assert!(LogicalPath::parse(&exact).is_ok());
    assert_eq!(LogicalPath::parse(&format!("{exact}/")).unwrap().as_str(), exact);
}
