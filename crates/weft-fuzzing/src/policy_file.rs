//! Policy files (TOML): any text is a rule set or an `invalid_policy` error on one line,
//! and the rules of a file that parses evaluate on objects without panicking.

use weft_policy::{Event, ObjectFacts, PolicySet};
use weft_types::ErrorCode;

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match PolicySet::parse(text) {
        Ok(set) => {
            assert!(!set.rules.is_empty());
            let meta = [("a".to_owned(), "b".to_owned()), ("q".to_owned(), "4".to_owned())];
            for path in ["/lrz/home/a/cryoem/x", "/lrz", "/a/b/c/d/e/f/g/h/i/j/k"] {
                let object = ObjectFacts {
                    path,
                    zone: path.split('/').nth(1).unwrap_or(""),
                    size: 1 << 20,
                    created_ms: 0,
                    now_ms: i64::MAX,
                    meta: &meta,
                };
                for event in [
                    Event::Created,
                    Event::Tick,
                    Event::MetadataSet { attr: "a".into() },
                ] {
                    let _ = set.fired(&event, &object);
                }
            }
            for rule in &set.rules {
                let _ = rule.condition.root();
            }
        }
        Err(e) => {
            assert_eq!(e.code, ErrorCode::InvalidPolicy);
            assert!(!e.message.contains('\n'), "{:?}", e.message);
        }
    }
}
