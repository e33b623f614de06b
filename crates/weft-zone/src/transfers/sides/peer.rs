//! `/other/path` of a federated zone: its REST API, through the client's [`HttpSide`],
//! with a fresh zone token for the caller on each request (tokens are short-lived,
//! transfers are not).

use crate::{Caller, Zone};
use async_trait::async_trait;
use std::sync::Arc;
use weft_client::{Client, Connect, HttpSide};
use weft_types::{Error, ResourceName};

/// A federated zone's namespace, as `owner#thiszone`.
pub(crate) type PeerSide = HttpSide<PeerConnect>;

pub(crate) struct PeerConnect {
    zone: Arc<Zone>,
    caller: Caller,
    peer: String,
}

#[async_trait]
impl Connect for PeerConnect {
    async fn client(&self) -> Result<Client, Error> {
        self.zone.federation().peer_client(&self.peer, &self.caller).await
    }
}

/// Zone `peer` as `caller`; new objects go to `resource` there (`None`: its default).
/// What it is given replaces what is there, as the engine's sides do.
pub(crate) fn peer_side(
    zone: Arc<Zone>,
    caller: Caller,
    peer: &str,
    resource: Option<&ResourceName>,
) -> PeerSide {
    let connect = PeerConnect {
        zone,
        caller,
        peer: peer.to_owned(),
    };
    HttpSide::new(
        connect,
        Some(peer.to_owned()),
        resource.map(ToString::to_string),
        true,
    )
}
