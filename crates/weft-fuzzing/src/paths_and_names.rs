//! Logical paths, names, endpoints, checksums and metadata conditions: whatever parses
//! keeps its type's invariants and prints as text that parses back to the same value.

use weft_types::path::{MAX_NAME_LEN, MAX_PATH_LEN};
use weft_types::{
    Checksum, Endpoint, LogicalPath, MetaCondition, PrincipalName, ResourceName, StagingName, ZoneName,
};

fn check_path(p: &LogicalPath) {
    let s = p.as_str();
    assert!(s.len() <= MAX_PATH_LEN && s.starts_with('/'), "{s:?}");
    assert!(ZoneName::parse(p.zone()).is_ok(), "{s:?}");
    for c in s[1..].split('/') {
        assert!(!c.is_empty() && c != "." && c != "..", "{s:?}");
        assert!(
            c.len() <= MAX_NAME_LEN && !c.chars().any(char::is_control),
            "{s:?}"
        );
    }
    assert_eq!(LogicalPath::parse(s).as_ref(), Ok(p));
    if let Some(parent) = p.parent() {
        assert!(p.starts_with(&parent));
    }
}

pub fn run(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = LogicalPath::parse(s) {
        check_path(&p);
        // The second half of the input as a name to join (a `/` splits it), cut on a
        // character boundary (cutting at len / 2 panicked in this target, not in weft).
        let mid = (0..=s.len() / 2)
            .rev()
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(0);
        let name = &s[mid..];
        if let Ok(j) = p.join(name) {
            check_path(&j);
        }
    }
    if let Ok(z) = ZoneName::parse(s) {
        assert_eq!(ZoneName::parse(z.as_str()).as_ref(), Ok(&z));
    }
    if let Ok(n) = PrincipalName::parse(s) {
        assert!(!n.as_str().contains(['/', '\0', ' ']));
    }
    let _ = ResourceName::parse(s);
    let _ = StagingName::parse(s);
    if let Ok(e) = Endpoint::parse(s) {
        let shown = e.to_string();
        assert_eq!(Endpoint::parse(&shown).as_ref(), Ok(&e), "{s:?} → {shown:?}");
        if let Endpoint::Logical(p) = &e {
            check_path(p);
        }
        let _ = e.name();
        let _ = e.join("a/b");
    }
    if let Ok(c) = Checksum::parse(s) {
        assert_eq!(Checksum::parse(&c.to_string()).as_ref(), Ok(&c));
    }
    if let Ok(c) = MetaCondition::parse(s) {
        assert_eq!(MetaCondition::parse(&c.to_string()).as_ref(), Ok(&c), "{s:?}");
    }
}
