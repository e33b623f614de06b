//! The conformance cases of the catalog's throughput area.

use super::*;

conformance!(throughput_adds_into_buckets_and_keeps_each_level_bounded,);

async fn throughput_adds_into_buckets_and_keeps_each_level_bounded(c: &SqlCatalog) {
    let zone = |z: &str| ZoneName::parse(z).unwrap();
    let sample = |z: &str, direction, bytes| ThroughputSample {
        zone: zone(z),
        direction,
        bytes,
    };
    const MIN: i64 = 60_000;
    let levels = [
        ThroughputLevel {
            step: MIN,
            keep: 3 * MIN,
        },
        ThroughputLevel {
            step: 60 * MIN,
            keep: 24 * 60 * MIN,
        },
    ];
    // On an hour's boundary.
    let t0 = 1_000 * 60 * MIN;
    let add = |at: i64, samples: Vec<ThroughputSample>| async move {
        c.add_throughput(at, &samples, &levels).await.unwrap()
    };
    // Two samples in one minute add up; another peer and direction are rows of their own;
    // nothing is written for no bytes.
    add(
        t0 + 1_000,
        vec![sample("b", Direction::Out, 100), sample("c", Direction::In, 0)],
    )
    .await;
    add(
        t0 + 59_999,
        vec![sample("b", Direction::Out, 50), sample("b", Direction::In, 7)],
    )
    .await;
    let rows = |v: Vec<weft_catalog::ThroughputBucket>| {
        v.into_iter()
            .map(|b| (b.at, b.zone.to_string(), b.direction, b.bytes))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rows(c.throughput(MIN, 0).await.unwrap()),
        vec![
            (t0, "b".into(), Direction::In, 7),
            (t0, "b".into(), Direction::Out, 150)
        ]
    );
    // Ten minutes later: the minute level keeps its last three minutes and the one being
    // written, whatever was there before; the hour level still holds everything.
    for m in 1..=10 {
        add(t0 + m * MIN, vec![sample("b", Direction::Out, 1)]).await;
    }
    let minutes = rows(c.throughput(MIN, 0).await.unwrap());
    assert_eq!(
        minutes.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![t0 + 7 * MIN, t0 + 8 * MIN, t0 + 9 * MIN, t0 + 10 * MIN]
    );
    assert_eq!(
        rows(c.throughput(60 * MIN, 0).await.unwrap()),
        vec![
            (t0, "b".into(), Direction::In, 7),
            (t0, "b".into(), Direction::Out, 160)
        ]
    );
    // Read from a time on.
    assert_eq!(c.throughput(MIN, t0 + 9 * MIN).await.unwrap().len(), 2);
    // A day and more later the hour level lets the old hour go too.
    add(t0 + 26 * 60 * MIN, vec![sample("c", Direction::In, 5)]).await;
    assert_eq!(
        rows(c.throughput(60 * MIN, 0).await.unwrap()),
        vec![(t0 + 26 * 60 * MIN, "c".into(), Direction::In, 5)]
    );
}
