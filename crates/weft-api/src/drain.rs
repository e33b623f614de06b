//! Request bodies a handler left unread (it refused the request first: a missing
//! collection, an object that exists, no permission) are read to their end after the
//! answer. Otherwise the server closes the connection with the client's bytes still
//! arriving, and the client, still sending, meets a reset: it reports a broken pipe, or
//! loses the connection it had pooled, instead of reading the zone's clear error.

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Bodies up to this much are drained; a larger one is cut off, as before.
const DRAIN_MAX: u64 = 64 << 20;

/// How long a drain may take: a client that stops sending does not hold a task.
const DRAIN_FOR: Duration = Duration::from_secs(30);

/// Drains at once, at most: past these, a refused body is cut off as before, so that
/// clients refused in numbers (no token) hold no more than this many connections.
const DRAINS: usize = 128;

static DRAINING: Semaphore = Semaphore::const_new(DRAINS);

/// The middleware: every request body is wrapped in [`Drained`]. A client that sent
/// `Expect: 100-continue` sends its body only once the server asks for it by reading it;
/// refused before that, it sends nothing, and the answer closes the connection (else the
/// server would take the client's next request for the body it is owed).
pub async fn unread_bodies(req: Request, next: Next) -> Response {
    let waits = req
        .headers()
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let polled = Arc::new(AtomicBool::new(false));
    let seen = polled.clone();
    let mut resp = next
        .run(req.map(|b| {
            Body::new(Drained {
                inner: Some(b),
                waits,
                polled: seen,
            })
        }))
        .await;
    if waits && !polled.load(Ordering::SeqCst) {
        resp.headers_mut()
            .insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    }
    resp
}

/// A body that, dropped before its end, reads the rest in the background.
struct Drained {
    inner: Option<Body>,
    /// The client waits for `100 Continue`, which reading the body sends.
    waits: bool,
    polled: Arc<AtomicBool>,
}

impl HttpBody for Drained {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.polled.store(true, Ordering::SeqCst);
        match self.inner.as_mut() {
            Some(b) => Pin::new(b).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for Drained {
    fn drop(&mut self) {
        let Some(mut body) = self.inner.take() else { return };
        if self.waits && !self.polled.load(Ordering::SeqCst) {
            return; // never asked for: the client sends nothing
        }
        let left = body.size_hint().upper();
        if body.is_end_stream() || left.is_none_or(|n| n > DRAIN_MAX) {
            return;
        }
        let (Ok(rt), Ok(permit)) = (tokio::runtime::Handle::try_current(), DRAINING.try_acquire()) else {
            return;
        };
        rt.spawn(async move {
            let _permit = permit;
            let _ = tokio::time::timeout(DRAIN_FOR, async { while let Some(Ok(_)) = body.frame().await {} })
                .await;
        });
    }
}
