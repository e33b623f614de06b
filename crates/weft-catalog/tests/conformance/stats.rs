//! The conformance cases of the catalog's stats area.

use super::*;

conformance!(stats_count_by_state,);

async fn stats_count_by_state(c: &SqlCatalog) {
    let empty = c.stats().await.unwrap();
    assert!(empty.transfers.is_empty() && empty.replicas.is_empty() && empty.policy_tasks.is_empty());
    assert!(empty.pool_size >= 1 && empty.pool_idle <= empty.pool_size);
    let node = one_object(c).await;
    for t in ["a", "b", "c"] {
        user_transfer(c, t, node.owner_id).await.unwrap();
    }
    c.set_transfer_state(&tid("b"), TransferState::Failed, Some("x"))
        .await
        .unwrap();
    let s = c.stats().await.unwrap();
    assert_eq!(s.transfers, [("failed".to_owned(), 1), ("queued".to_owned(), 2)]);
    assert_eq!(s.replicas, [("good".to_owned(), 1)]);
    assert!(s.remote_replicas.is_empty());
}
