//! Property tests of what this crate parses from requests: `Range`
//! headers, bundle bodies however they are cut into frames, `Authorization` headers and
//! tokens. Arbitrary input never panics and fails with the route's error code; what
//! parses keeps its invariants. Bounded: a few thousand cases, well under a second.

use bytes::Bytes;
use proptest::prelude::*;
use weft_api::parsers;
use weft_types::wire::{BundleEntry, BundleHeader};
use weft_types::ErrorCode;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn range_text() -> impl Strategy<Value = String> {
    let num = prop_oneof![
        Just(String::new()),
        (0u64..200).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        Just("18446744073709551615".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("999999999999999999999".to_owned()),
        Just("+1".to_owned()),
        Just("-1".to_owned()),
        Just(" 7 ".to_owned()),
    ];
    let one = (num.clone(), num).prop_map(|(a, b)| format!("{a}-{b}"));
    prop_oneof![
        4 => one.clone().prop_map(|r| format!("bytes={r}")),
        1 => proptest::collection::vec(one, 2..4).prop_map(|r| format!("bytes={}", r.join(","))),
        1 => "\\PC{0,20}",
        1 => Just("bytes=".to_owned()),
    ]
}

/// A bundle body: a header of entries (sizes that match or not), the bytes after it.
fn bundle_body() -> impl Strategy<Value = Vec<u8>> {
    let entry = (
        prop_oneof![Just("/z/a".to_owned()), Just("/z/../a".to_owned()), "\\PC{0,8}"],
        prop_oneof![0u64..40, Just(u64::MAX), Just(u64::MAX / 2 + 1)],
        prop_oneof![Just("blake3:".to_owned() + &"0".repeat(64)), "\\PC{0,8}"],
    )
        .prop_map(|(path, size, checksum)| BundleEntry { path, size, checksum });
    let header = proptest::collection::vec(entry, 0..6).prop_map(|files| BundleHeader {
        files,
        overwrite: false,
        resource: None,
    });
    (
        header,
        any::<bool>(),
        -3i64..3,
        proptest::collection::vec(any::<u8>(), 0..8),
    )
        .prop_map(|(header, exact, skew, junk)| {
            let sizes: u64 = header.files.iter().fold(0u64, |s, f| s.saturating_add(f.size));
            let mut body = serde_json::to_vec(&header).unwrap();
            body.push(b'\n');
            // Mostly the right number of bytes (when that is small), else a few off.
            let want = if sizes <= 200 && exact {
                sizes as i64
            } else {
                (sizes.min(200) as i64 + skew).max(0)
            };
            body.extend((0..want).map(|i| i as u8));
            if !exact {
                body.extend(junk);
            }
            body
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn ranges_lie_within_the_object(v in range_text(), size in prop_oneof![0u64..300, any::<u64>()]) {
        match parsers::range(v.as_bytes(), size) {
            Ok(r) => prop_assert!(r.start < r.end && r.end <= size, "{v:?} of {size}: {r:?}"),
            Err(e) => prop_assert_eq!(e.code, ErrorCode::RangeNotSatisfiable),
        }
    }

    #[test]
    fn ranges_of_raw_bytes_never_panic(v in proptest::collection::vec(any::<u8>(), 0..40), size in any::<u64>()) {
        if let Ok(r) = parsers::range(&v, size) {
            prop_assert!(r.start < r.end && r.end <= size);
        }
    }

    #[test]
    fn bundles_never_yield_a_file_past_the_body(
        body in prop_oneof![bundle_body(), proptest::collection::vec(any::<u8>(), 0..64)],
        cuts in proptest::collection::vec(1usize..16, 0..8),
    ) {
        // The body as frames of the sizes given (the rest in one), as a connection delivers it.
        let mut frames = Vec::new();
        let mut at = 0;
        for c in cuts {
            let end = (at + c).min(body.len());
            frames.push(Bytes::copy_from_slice(&body[at..end]));
            at = end;
        }
        frames.push(Bytes::copy_from_slice(&body[at..]));
        match parsers::bundle(frames) {
            Ok((header, files)) => {
                prop_assert_eq!(header.files.len(), files.len());
                let mut at = body.iter().position(|b| *b == b'\n').unwrap() + 1;
                for (f, data) in header.files.iter().zip(&files) {
                    prop_assert_eq!(f.size, data.len() as u64);
                    prop_assert_eq!(&body[at..at + data.len()], &data[..]);
                    at += data.len();
                }
                prop_assert_eq!(at, body.len());
            }
            Err(e) => prop_assert_eq!(e.code, ErrorCode::InvalidArgument),
        }
    }

    #[test]
    fn authorization_headers_and_tokens_never_panic(v in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        "(Bearer |bearer |Basic )?[ \t]*[A-Za-z0-9_.=-]{0,40}[ \t]*".prop_map(String::into_bytes),
    ]) {
        match parsers::bearer_token(&v) {
            Ok(t) => prop_assert!(!t.is_empty() && t.trim() == t),
            Err(e) => prop_assert_eq!(e.code, ErrorCode::Unauthenticated),
        }
        if let Ok(s) = std::str::from_utf8(&v) {
            if let Err(e) = parsers::unverified_issuer(s) {
                prop_assert_eq!(e.code, ErrorCode::Unauthenticated);
            }
        }
    }
}

#[test]
fn range_regressions() {
    // `b + 1` overflowed on the largest last position (fuzz/range_header).
    assert_eq!(
        parsers::range(b"bytes=0-18446744073709551615", 10).unwrap(),
        0..10
    );
    assert_eq!(
        parsers::range(b"bytes=3-18446744073709551615", u64::MAX).unwrap(),
        3..u64::MAX
    );
    for bad in [
        "bytes=5-3",
        "bytes=999999999999999999999-",
        "bytes=0-1,2-3",
        "bytes=1 -2x",
    ] {
        assert_eq!(
            parsers::range(bad.as_bytes(), 10).unwrap_err().code,
            ErrorCode::RangeNotSatisfiable,
            "{bad}"
        );
    }
}

#[test]
fn bundle_sizes_that_overflow_are_refused() {
    let header = BundleHeader {
        files: vec![
            BundleEntry {
                path: "/z/a".into(),
                size: u64::MAX,
                checksum: "x".into(),
            },
            BundleEntry {
                path: "/z/b".into(),
                size: 2,
                checksum: "x".into(),
            },
        ],
        overwrite: false,
        resource: None,
    };
    let mut body = serde_json::to_vec(&header).unwrap();
    body.extend_from_slice(b"\n\x01");
    let e = parsers::bundle(vec![Bytes::from(body)]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
}
