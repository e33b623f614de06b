//! `GET /metrics`: administrators only, read by a Prometheus text parser, and its values
//! move as the zone works.

mod common;

use common::start;
use prometheus_parse::{Sample, Scrape, Value};

/// The zone's metrics as a scraper reads them.
async fn scrape(z: &common::TestZone, token: &str) -> Scrape {
    let r = z
        .http
        .get(format!("{}/metrics", z.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let kind = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let text = r.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap()
}

/// The value of the sample `name` whose labels include `labels`.
fn value(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .filter(|x: &&Sample| x.metric == name)
        .find(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match &x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(h) => h.iter().map(|b| b.count).fold(0.0, f64::max),
            Value::Summary(_) => f64::NAN,
        })
}

#[tokio::test]
async fn metrics_are_for_administrators_and_move_with_the_work() {
    let z = start().await;
    let admin = z.admin_token.clone();
    let alice = z.user("alice").await;
    let r = z
        .http
        .get(format!("{}/metrics", z.url))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "a user may not read the zone's metrics");
    let r = z.http.get(format!("{}/metrics", z.url)).send().await.unwrap();
    assert_eq!(r.status(), 401);

    let before = scrape(&z, &admin).await;
    let written =
        |s: &Scrape| value(s, "weft_resource_written_bytes_total", &[("resource", "default")]).unwrap_or(0.0);
    let read =
        |s: &Scrape| value(s, "weft_resource_read_bytes_total", &[("resource", "default")]).unwrap_or(0.0);
    let puts = |s: &Scrape| {
        value(
            s,
            "weft_http_requests_total",
            &[
                ("route", "/api/v1/data/*path"),
                ("method", "PUT"),
                ("status", "201"),
            ],
        )
        .unwrap_or(0.0)
    };

    let data = vec![7u8; 12_345];
    let r = z
        .http
        .put(z.api("data/z/home/alice/one.bin"))
        .bearer_auth(&alice)
        .body(data.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = z
        .http
        .get(z.api("data/z/home/alice/one.bin"))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.bytes().await.unwrap().len(), data.len());
    let r = z
        .http
        .get(z.api("stat/z/home/alice/nothing"))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    let after = scrape(&z, &admin).await;
    assert_eq!(written(&after) - written(&before), data.len() as f64);
    assert_eq!(read(&after) - read(&before), data.len() as f64);
    assert_eq!(puts(&after) - puts(&before), 1.0);
    assert!(
        value(&after, "weft_catalog_group_commit_seconds_count", &[]).unwrap()
            > value(&before, "weft_catalog_group_commit_seconds_count", &[]).unwrap_or(0.0),
        "the put's registration is timed"
    );
    // Routes are labelled by their template, never by the path asked for.
    assert_eq!(
        value(
            &after,
            "weft_http_requests_total",
            &[("route", "/api/v1/stat/*path"), ("status", "404")]
        ),
        Some(1.0)
    );
    assert!(after
        .samples
        .iter()
        .all(|s| !s.labels.values().any(|v| v.contains("nothing"))));
    assert!(
        value(
            &after,
            "weft_http_request_duration_seconds_count",
            &[("route", "/api/v1/data/*path"), ("method", "GET")]
        )
        .unwrap()
            >= 1.0
    );

    // A transfer's files are counted as they end; the catalog's transfers by state.
    let r = z
        .http
        .post(z.api("transfers"))
        .bearer_auth(&alice)
        .json(&serde_json::json!({"sources": ["/z/home/alice/one.bin"], "destination": "/z/home/alice/copy.bin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let id = r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let after = loop {
        let s = scrape(&z, &admin).await;
        if value(&s, "weft_transfers", &[("state", "succeeded")]) == Some(1.0)
            && value(&s, "weft_transfer_files_ended_total", &[("state", "done")]) == Some(1.0)
        {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "transfer {id} not counted");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(value(&after, "weft_transfer_retries_total", &[]), Some(0.0));

    // Pieces of an upload are counted as they are stored.
    let up: serde_json::Value = z
        .http
        .post(z.api("uploads"))
        .bearer_auth(&alice)
        .json(
            &serde_json::json!({"path": "/z/home/alice/pieces.bin", "size": 2 << 16, "piece_size": 1 << 16}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let upload = up["id"].as_str().unwrap();
    for i in 0..2 {
        let r = z
            .http
            .put(z.api(&format!("uploads/{upload}/{i}")))
            .bearer_auth(&alice)
            .body(vec![1u8; 1 << 16])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let pieces = scrape(&z, &admin).await;
    assert_eq!(
        value(
            &pieces,
            "weft_upload_piece_bytes_total",
            &[("resource", "default")]
        ),
        Some((2 << 16) as f64)
    );

    // Read at the scrape: workers, catalog counts, the pool.
    assert!(value(&after, "weft_worker_runs_total", &[("worker", "committer")]).is_some());
    assert_eq!(
        value(&after, "weft_worker_standby", &[("worker", "scrubber")]),
        Some(0.0)
    );
    assert_eq!(
        value(&after, "weft_replicas", &[("place", "local"), ("state", "good")]),
        Some(2.0),
        "the object and its copy"
    );
    assert_eq!(value(&after, "weft_transfers", &[("state", "queued")]), Some(0.0));
    assert!(value(&after, "weft_catalog_pool_connections", &[("state", "idle")]).is_some());
}
