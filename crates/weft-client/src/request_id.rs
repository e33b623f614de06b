//! The id of the request a zone is handling, sent along (`x-request-id`) on the requests it
//! makes to its peers for it, so that one request can be followed through the logs of
//! every zone it touched.

use std::future::Future;
use std::sync::Arc;

/// The header that carries a request's id, in and out.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

tokio::task_local! {
    static CURRENT: Arc<str>;
}

/// Runs `f` as the handling of the request `id`: requests this client makes meanwhile, on
/// this task, carry it.
pub async fn scope<F: Future>(id: Arc<str>, f: F) -> F::Output {
    CURRENT.scope(id, f).await
}

/// The id of the request being handled on this task, if any.
pub fn current() -> Option<Arc<str>> {
    CURRENT.try_with(Arc::clone).ok()
}
