//! The conformance cases of the catalog's leases area.

use super::*;

conformance!(leases_go_to_one_holder_at_a_time,);

async fn leases_go_to_one_holder_at_a_time(c: &SqlCatalog) {
    let long = std::time::Duration::from_secs(60);
    assert!(c.take_lease("transfer:t1", "a", long).await.unwrap());
    assert!(
        !c.take_lease("transfer:t1", "b", long).await.unwrap(),
        "held by a"
    );
    // The holder takes it again to extend it; when it was taken stays.
    let before = c.leases().await.unwrap();
    assert!(c.take_lease("transfer:t1", "a", long).await.unwrap());
    let after = c.leases().await.unwrap();
    assert_eq!((after[0].holder.as_str(), after[0].taken), ("a", before[0].taken));
    assert!(after[0].expires >= before[0].expires);

    // Many servers racing for one lease: exactly one wins.
    let racers = (0..8).map(|i| {
        let c = c.clone();
        async move {
            c.take_lease("worker:scrubber", &format!("s{i}"), long)
                .await
                .unwrap()
        }
    });
    let won = futures_join_all(racers).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");

    // An expired lease goes to whoever asks; its old holder finds it lost on renewal.
    assert!(c
        .take_lease("transfer:t2", "a", std::time::Duration::from_millis(1))
        .await
        .unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert!(c.take_lease("transfer:t2", "b", long).await.unwrap());
    let names = vec![
        "transfer:t1".to_owned(),
        "transfer:t2".to_owned(),
        "transfer:none".to_owned(),
    ];
    let lost = c.renew_leases(&names, "a", long).await.unwrap();
    assert_eq!(lost, ["transfer:t2", "transfer:none"]);
    assert!(c.renew_leases(&names[..1], "a", long).await.unwrap().is_empty());

    // Released, it is free; another holder's release changes nothing.
    c.release_lease("transfer:t2", "a").await.unwrap();
    assert!(
        !c.take_lease("transfer:t2", "c", long).await.unwrap(),
        "still b's"
    );
    c.release_lease("transfer:t1", "a").await.unwrap();
    assert!(c.take_lease("transfer:t1", "c", long).await.unwrap());
    let held: Vec<(String, String)> = c
        .leases()
        .await
        .unwrap()
        .into_iter()
        .map(|l| (l.name, l.holder))
        .collect();
    assert_eq!(held.len(), 3);
    assert!(
        held.contains(&("transfer:t1".into(), "c".into()))
            && held.contains(&("transfer:t2".into(), "b".into()))
    );
}
