//! Counting the bytes of peer zones' requests at the door (weft-zone `peer_traffic.rs`):
//! the body of each request that carries a zone token (`weftz_…`), and the answer to it,
//! once authentication has said which peer it comes from. Other requests pass untouched.

use crate::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use weft_types::{Direction, ZoneName};
use weft_zone::Zone;

/// Counts are handed to the zone at least this often, so that a long stream shows in the
/// minute it moved rather than all at its end.
const HAND_OVER: u64 = 8 << 20;

/// The peer a request comes from, once authentication has decided (`auth.rs` sets it).
#[derive(Clone, Default)]
pub(crate) struct PeerOf(Arc<OnceLock<ZoneName>>);

impl PeerOf {
    pub(crate) fn set(&self, peer: &ZoneName) {
        let _ = self.0.set(peer.clone());
    }
}

pub(crate) async fn count(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let from_peer = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| crate::auth::bearer_token(v.as_bytes()).ok())
        .is_some_and(|t| t.starts_with(weft_zone::federation::ZONE_TOKEN_PREFIX));
    if !from_peer {
        return next.run(req).await;
    }
    let peer = PeerOf::default();
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(peer.clone());
    let body = Body::new(Counted::new(body, &s.zone, &peer, Direction::In));
    let resp = next.run(Request::from_parts(parts, body)).await;
    if peer.0.get().is_none() {
        return resp;
    }
    resp.map(|body| Body::new(Counted::new(body, &s.zone, &peer, Direction::Out)))
}

/// A body whose data bytes are counted for the request's peer.
struct Counted {
    inner: Body,
    zone: Arc<Zone>,
    peer: PeerOf,
    direction: Direction,
    /// Counted but not handed to the zone yet.
    pending: u64,
}

impl Counted {
    fn new(inner: Body, zone: &Arc<Zone>, peer: &PeerOf, direction: Direction) -> Self {
        Counted {
            inner,
            zone: zone.clone(),
            peer: peer.clone(),
            direction,
            pending: 0,
        }
    }

    fn hand_over(&mut self) {
        if let Some(peer) = self.peer.0.get() {
            self.zone
                .transfers()
                .peer_traffic()
                .add(peer, self.direction, std::mem::take(&mut self.pending));
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.hand_over();
    }
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.pending += data.len() as u64;
                if self.pending >= HAND_OVER {
                    self.hand_over();
                }
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
