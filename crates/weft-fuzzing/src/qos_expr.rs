//! Place and QoS expressions: any text is an expression or an `invalid_policy` error, and
//! an expression prints as text that parses back to it.

use weft_policy::{Place, QosExpr, TargetExpr};
use weft_types::ErrorCode;

pub fn run(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let place = Place {
        zone: "lrz".into(),
        resource: "disk".into(),
        tier: "tape".into(),
    };
    match TargetExpr::parse(s) {
        Ok(e) => {
            let shown = e.to_string();
            assert_eq!(TargetExpr::parse(&shown).as_ref(), Ok(&e), "{s:?} → {shown:?}");
            let _ = e.matches(&place, "lrz");
            let _ = (e.zones(), e.resources(), e.tiers());
        }
        Err(e) => assert_eq!(e.code, ErrorCode::InvalidPolicy),
    }
    match QosExpr::parse(s) {
        Ok(q) => {
            assert!((1..=64).contains(&q.replicas));
            let shown = q.to_string();
            assert_eq!(QosExpr::parse(&shown).as_ref(), Ok(&q), "{s:?} → {shown:?}");
            let _ = q.matches(&place, "it4i");
        }
        Err(e) => assert_eq!(e.code, ErrorCode::InvalidPolicy),
    }
    let _ = weft_policy::parse_size(s);
    let _ = weft_policy::parse_duration(s);
}
