//! Federation: peer zones, and the short-lived tokens zones authenticate each other with.
//!
//! Two zones share a secret (`weft zone add NAME URL --secret-file F`, run on both sides).
//! A zone acting for its user `alice` towards peer `it4i` sends `Bearer weftz_<JWT>`: an
//! HS256 JWT signed with that secret, `kid` and `iss` naming the sending zone, `aud` the
//! receiving one, `sub` the user, valid for `ZONE_TOKEN_LIFETIME`. The secret itself never
//! travels. The receiving zone treats the request as coming from the principal `alice#lrz`,
//! created on first sight, whose rights are whatever its own ACLs grant that name.

use crate::{now_ms, Caller, Zone};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use weft_catalog::PeerZone;
use weft_types::{Error, ErrorCode, PrincipalName, ZoneName};

use std::sync::Arc;
/// The zone's peers and the tokens they trust; borrowed from the zone with [`Zone::federation`].
#[derive(Clone, Copy)]
pub struct Federation<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}

/// The bearer prefix of zone-to-zone tokens.
pub const ZONE_TOKEN_PREFIX: &str = "weftz_";
/// How long a zone token is valid. Tokens are minted per request, so this only needs to
/// cover one request's latency plus clock skew.
const ZONE_TOKEN_LIFETIME: Duration = Duration::from_secs(120);
/// Clock skew tolerated between zones.
const ZONE_TOKEN_LEEWAY_SECONDS: u64 = 30;
/// A shared secret shorter than this is refused: it is the only thing between a peer and
/// acting as any of its users.
pub const MIN_SECRET_LEN: usize = 32;
/// How long `zone ls` waits for each peer's health answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Serialize, Deserialize)]
struct ZoneClaims {
    iss: String,
    aud: String,
    sub: String,
    iat: u64,
    exp: u64,
}

/// A peer zone as users see it: never its secret.
#[derive(Debug, Clone)]
pub struct PeerInfo {
    pub name: ZoneName,
    pub url: String,
    pub created: i64,
    /// `None` when not probed.
    pub reachability: Option<Reachability>,
}

#[derive(Debug, Clone)]
pub enum Reachability {
    /// Answered health with this round-trip time.
    Up { rtt: Duration, version: String },
    /// No answer, or the wrong zone answered.
    Down { cause: String },
}

impl PeerInfo {
    fn of(p: &PeerZone) -> PeerInfo {
        PeerInfo {
            name: p.name.clone(),
            url: p.url.clone(),
            created: p.created,
            reachability: None,
        }
    }
}

impl Federation<'_> {
    /// Federates with `name` at `url` (admin). Run on both sides with the same secret.
    /// With `replace`, updates the URL and secret of a known peer. A plain `http://` URL to
    /// a host that is not loopback is refused unless `insecure`: zone tokens and data would
    /// cross the network in clear.
    pub async fn add_zone(
        self,
        caller: &Caller,
        name: &ZoneName,
        url: &str,
        secret: &str,
        replace: bool,
        insecure: bool,
    ) -> Result<PeerInfo, Error> {
        caller.require_admin("federating zones")?;
        if name == &self.zone.name {
            return Err(Error::invalid(format!(
                "{name} is this zone's own name; a peer needs another one"
            )));
        }
        let secret = secret.trim();
        if secret.len() < MIN_SECRET_LEN {
            return Err(Error::invalid(format!(
                "the shared secret is {} bytes long; use at least {MIN_SECRET_LEN} (e.g. `openssl rand -hex 32`)",
                secret.len()
            )));
        }
        let client = weft_client::Client::new(url, None).map_err(|e| Error::invalid(e.to_string()))?;
        if client.is_cleartext_remote() && !insecure {
            return Err(Error::invalid(format!(
                "{} is plain HTTP to a host that is not loopback: zone tokens and data would cross \
                 the network in clear; use https://, or pass --insecure (\"insecure\": true) on a \
                 network you trust end to end",
                client.zone_urls()
            )));
        }
        let peer = PeerZone {
            name: name.clone(),
            url: client.zone_urls(),
            secret: secret.to_owned(),
            created: now_ms(),
        };
        self.zone.catalog.put_zone(&peer, replace).await?;
        self.zone.peers.forget();
        self.zone.policy().forget_peer_places();
        self.zone.policy().wake(true);
        self.zone.transfers().ensure_replica_area(name).await?;
        let mut info = PeerInfo::of(&peer);
        info.reachability = Some(self.probe(&peer).await);
        Ok(info)
    }

    pub async fn remove_zone(self, caller: &Caller, name: &ZoneName) -> Result<(), Error> {
        caller.require_admin("removing a federated zone")?;
        // Its tokens, its visitors' API tokens and its user mappings go at once; then
        // what it submitted stops.
        self.zone.catalog.delete_zone(name).await?;
        self.zone.transfers().cancel_via(name).await?;
        self.zone.peers.forget();
        self.zone.policy().forget_peer_places();
        self.zone.policy().wake(true);
        self.zone.auth_cache.invalidate();
        Ok(())
    }

    /// Maps `remote_user` of the federated zone `zone` to the local user `local`
    /// (administrators): requests of that user through `zone` then act as `local`, with its
    /// ACLs and its home, instead of as the visitor `remote_user#zone`. Administrators and
    /// groups cannot be mapped to.
    pub async fn map_user(
        self,
        caller: &Caller,
        zone: &ZoneName,
        remote_user: &PrincipalName,
        local: &PrincipalName,
    ) -> Result<(), Error> {
        caller.require_admin("mapping users of another zone")?;
        self.peer(zone.as_str()).await?;
        if remote_user.as_str() == crate::ADMIN {
            return Err(Error::invalid(format!(
                "{remote_user} of zone {zone} is how that zone acts for itself (the replicas it keeps here); it cannot be mapped"
            )));
        }
        if remote_user.as_str().contains('#') {
            return Err(Error::invalid(format!(
                "{remote_user}: name the user as zone {zone} knows it, without #zone"
            )));
        }
        let user = self
            .zone
            .catalog
            .get_principal(local)
            .await?
            .ok_or_else(|| Error::not_found(format_args!("user {local}")))?;
        if user.kind != weft_catalog::PrincipalKind::User || user.is_admin || local.as_str().contains('#') {
            return Err(Error::invalid(format!(
                "{local} cannot stand for a user of zone {zone}: map to a plain local user (not a group, an administrator or a visitor)"
            )));
        }
        self.zone.catalog.map_user(zone, remote_user, user.id).await?;
        self.zone.auth_cache.invalidate();
        Ok(())
    }

    pub async fn unmap_user(
        self,
        caller: &Caller,
        zone: &ZoneName,
        remote_user: &PrincipalName,
    ) -> Result<(), Error> {
        caller.require_admin("mapping users of another zone")?;
        self.zone.catalog.unmap_user(zone, remote_user).await?;
        self.zone.auth_cache.invalidate();
        Ok(())
    }

    /// The users of `zone` mapped to local users, as (remote, local).
    pub async fn user_maps(
        self,
        caller: &Caller,
        zone: &ZoneName,
    ) -> Result<Vec<(PrincipalName, PrincipalName)>, Error> {
        caller.require_admin("listing user mappings")?;
        self.peer(zone.as_str()).await?;
        Ok(self
            .zone
            .catalog
            .user_maps(zone)
            .await?
            .into_iter()
            .map(|(remote, local)| (remote, local.name))
            .collect())
    }

    /// The peer zones, each probed for reachability (in parallel, a few seconds at most).
    pub async fn zones(self, _caller: &Caller) -> Result<Vec<PeerInfo>, Error> {
        let peers = self.zone.catalog.list_zones().await?;
        let probes = peers.iter().map(|p| async move {
            let mut info = PeerInfo::of(p);
            info.reachability = Some(self.probe(p).await);
            info
        });
        Ok(futures::future::join_all(probes).await)
    }

    async fn probe(self, peer: &PeerZone) -> Reachability {
        let client = match self.zone.peers.client(peer) {
            Ok(c) => c,
            Err(e) => return Reachability::Down { cause: e.message },
        };
        let started = std::time::Instant::now();
        match tokio::time::timeout(PROBE_TIMEOUT, client.health()).await {
            Err(_) => Reachability::Down {
                cause: format!("no answer within {} s", PROBE_TIMEOUT.as_secs()),
            },
            Ok(Err(e)) => Reachability::Down { cause: e.to_string() },
            Ok(Ok(h)) if h.zone != peer.name.as_str() => Reachability::Down {
                cause: format!("{} answers as zone {:?}, not {}", peer.url, h.zone, peer.name),
            },
            Ok(Ok(h)) => Reachability::Up {
                rtt: started.elapsed(),
                version: h.version,
            },
        }
    }

    /// The federated zone `name`. Errors: `unknown_zone`.
    pub async fn peer(self, name: &str) -> Result<PeerZone, Error> {
        if let Some(p) = self.zone.peers.get(name) {
            return Ok(p);
        }
        let unknown = || {
            Error::new(
                ErrorCode::UnknownZone,
                format!(
                    "zone {name:?} is neither this zone ({}) nor a federated one (see `weft zone ls`)",
                    self.zone.name
                ),
            )
        };
        let zone = ZoneName::parse(name).map_err(|_| unknown())?;
        let peer = self.zone.catalog.get_zone(&zone).await?.ok_or_else(unknown)?;
        self.zone.peers.put(peer.clone());
        Ok(peer)
    }

    /// A client of peer `zone` acting for `caller` (with a freshly minted zone token).
    pub async fn peer_client(self, zone: &str, caller: &Caller) -> Result<weft_client::Client, Error> {
        let peer = self.peer(zone).await?;
        if caller.via_zone.is_some() || caller.name.as_str().contains('#') {
            // A visitor's rights come from the zone that vouches for it; passing it on to a
            // third zone would let a zone speak for users it does not know.
            return Err(Error::forbidden(format!(
                "{} is a user of another zone and cannot act through this zone on zone {zone}",
                caller.name
            )));
        }
        let token = self.mint_zone_token(&peer, &caller.name)?;
        Ok(self.zone.peers.client(&peer)?.with_token(&token))
    }

    fn mint_zone_token(self, peer: &PeerZone, user: &PrincipalName) -> Result<String, Error> {
        let now = now_ms() as u64 / 1000;
        let claims = ZoneClaims {
            iss: self.zone.name.to_string(),
            aud: peer.name.to_string(),
            sub: user.to_string(),
            iat: now,
            exp: now + ZONE_TOKEN_LIFETIME.as_secs(),
        };
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.zone.name.to_string());
        let jwt = jsonwebtoken::encode(
            &header,
            &claims,
            &EncodingKey::from_secret(peer.secret.as_bytes()),
        )
        .map_err(|e| Error::caused(ErrorCode::Internal, "signing a zone token", e))?;
        Ok(format!("{ZONE_TOKEN_PREFIX}{jwt}"))
    }

    /// The caller a zone token (`weftz_…`) speaks for: `user#zone`, created on first sight.
    /// Errors: `unauthenticated` (unknown zone, bad signature, wrong audience),
    /// `token_expired`.
    pub async fn caller_for_zone_token(self, token: &str) -> Result<Caller, Error> {
        let from = zone_token_sender(token)?;
        let peer = self.peer(&from).await.map_err(|_| {
            Error::new(
                ErrorCode::Unauthenticated,
                format!(
                    "zone token from {from:?}, which is not federated with zone {}",
                    self.zone.name
                ),
            )
        })?;
        let user = verify_zone_token(
            token,
            peer.name.as_str(),
            self.zone.name.as_str(),
            peer.secret.as_bytes(),
        )?;
        let unauthenticated = |why: String| Error::new(ErrorCode::Unauthenticated, why);
        let visitor = PrincipalName::parse(&format!("{user}#{from}"))
            .map_err(|e| unauthenticated(format!("zone token user: {}", e.message)))?;
        // Zone tokens differ per request, so the visitor is what is cached.
        let key = format!("zone:{visitor}");
        let generation = self.zone.auth_cache.generation();
        if let Some((caller, _)) = self.zone.auth_cache.get(&key) {
            return Ok(caller);
        }
        let principal = match self.zone.catalog.mapped_user(&peer.name, &user).await? {
            Some(local) => local,
            None => self.remote_principal(&visitor).await?,
        };
        let mut caller = self.zone.access().caller_for(&principal, &[]).await?;
        // A peer's user never administers this zone, mapped or not.
        caller.is_admin = false;
        caller.via_zone = Some(peer.name.clone());
        self.zone.auth_cache.put(key, generation, &caller, None);
        Ok(caller)
    }

    /// The principal `user#zone` of a federated zone, created on first sight (without a
    /// home collection: it is a visitor). Errors: `unknown_zone` for a zone not federated.
    pub(crate) async fn remote_principal(
        self,
        name: &PrincipalName,
    ) -> Result<weft_catalog::Principal, Error> {
        if let Some(p) = self.zone.catalog.get_principal(name).await? {
            return Ok(p);
        }
        let (_, zone) = name
            .as_str()
            .split_once('#')
            .ok_or_else(|| Error::invalid(format!("{name} is not a principal of another zone")))?;
        self.peer(zone).await?;
        self.zone.access().create_user_once(name).await
    }
}

/// The zone a zone token (`weftz_…`) says it comes from (the `kid` of its header), read
/// before verification only to choose the secret to verify it with. Errors:
/// `unauthenticated`. Public for the fuzz targets (`fuzz/`).
#[doc(hidden)]
pub fn zone_token_sender(token: &str) -> Result<String, Error> {
    let unauthenticated = |why: String| Error::new(ErrorCode::Unauthenticated, why);
    let jwt = token
        .strip_prefix(ZONE_TOKEN_PREFIX)
        .ok_or_else(|| unauthenticated("not a zone token".into()))?;
    let header = jsonwebtoken::decode_header(jwt)
        .map_err(|e| unauthenticated(format!("malformed zone token: {e}")))?;
    header
        .kid
        .ok_or_else(|| unauthenticated("the zone token names no zone (kid)".into()))
}

/// The user (of `sender`, without `#zone`) a zone token from `sender` to `receiver` speaks
/// for, verified with the secret the two zones share. Errors: `unauthenticated` (bad
/// signature, wrong issuer or audience, a bad user), `token_expired`. Public for the fuzz
/// targets (`fuzz/`).
#[doc(hidden)]
pub fn verify_zone_token(
    token: &str,
    sender: &str,
    receiver: &str,
    secret: &[u8],
) -> Result<PrincipalName, Error> {
    let unauthenticated = |why: String| Error::new(ErrorCode::Unauthenticated, why);
    let jwt = token
        .strip_prefix(ZONE_TOKEN_PREFIX)
        .ok_or_else(|| unauthenticated("not a zone token".into()))?;
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_audience(&[receiver]);
    validation.set_issuer(&[sender]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.leeway = ZONE_TOKEN_LEEWAY_SECONDS;
    let claims = jsonwebtoken::decode::<ZoneClaims>(jwt, &DecodingKey::from_secret(secret), &validation)
        .map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            match e.kind() {
                K::ExpiredSignature => Error::new(ErrorCode::TokenExpired, "the zone token has expired"),
                _ => unauthenticated(format!("zone token from {sender} refused: {e}")),
            }
        })?
        .claims;
    PrincipalName::parse(&claims.sub)
        .ok()
        .filter(|u| !u.as_str().contains('#'))
        .ok_or_else(|| unauthenticated(format!("zone token names a bad user {:?}", claims.sub)))
}

/// Peer zones read recently, and one HTTP connection pool per peer. Entries expire so that
/// a change made by another server of the same zone applies within seconds.
pub(crate) struct Peers {
    entries: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, PeerZone)>>,
    clients: std::sync::Mutex<std::collections::HashMap<String, weft_client::Client>>,
    /// Trusted besides the system roots in peers' certificates.
    cas: weft_client::TrustedCas,
}

const PEER_CACHE_LIFETIME: Duration = Duration::from_secs(10);

impl Peers {
    pub(crate) fn new(cas: weft_client::TrustedCas) -> Peers {
        Peers {
            entries: Default::default(),
            clients: Default::default(),
            cas,
        }
    }

    pub(crate) fn cas(&self) -> &weft_client::TrustedCas {
        &self.cas
    }

    fn get(&self, name: &str) -> Option<PeerZone> {
        let entries = self.entries.lock().expect("not poisoned");
        entries
            .get(name)
            .filter(|(at, _)| at.elapsed() < PEER_CACHE_LIFETIME)
            .map(|(_, p)| p.clone())
    }

    fn put(&self, peer: PeerZone) {
        let mut entries = self.entries.lock().expect("not poisoned");
        entries.insert(peer.name.to_string(), (std::time::Instant::now(), peer));
    }

    fn forget(&self) {
        self.entries.lock().expect("not poisoned").clear();
        self.clients.lock().expect("not poisoned").clear();
    }

    /// The connection pool of `peer` (without a token).
    fn client(&self, peer: &PeerZone) -> Result<weft_client::Client, Error> {
        let mut clients = self.clients.lock().expect("not poisoned");
        if let Some(c) = clients
            .get(peer.name.as_str())
            .filter(|c| c.zone_urls() == peer.url)
        {
            return Ok(c.clone());
        }
        let c = weft_client::Client::with_cas(&peer.url, None, &self.cas).map_err(|e| {
            Error::caused(
                ErrorCode::Internal,
                format_args!("client of zone {}", peer.name),
                e,
            )
        })?;
        clients.insert(peer.name.to_string(), c.clone());
        Ok(c)
    }
}
