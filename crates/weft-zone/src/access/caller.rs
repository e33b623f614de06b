//! Who is asking, and what they may do.

use super::Access;
use std::collections::HashMap;
use weft_catalog::{OidcClaims, PrincipalId};
use weft_types::{Error, LogicalPath, Permission, PrincipalName, ZoneName};

/// An authenticated principal, with the ids the ACL checks match against.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: PrincipalId,
    pub name: PrincipalName,
    pub is_admin: bool,
    /// The user's own id followed by the ids of its groups.
    pub principal_ids: Vec<PrincipalId>,
    /// The federated zone that vouched for this caller (a zone token): a visitor, or a
    /// user of that zone mapped to a local one. It never acts on further zones.
    pub via_zone: Option<ZoneName>,
    /// The claims of the OIDC token it was decided by, which work it leaves behind (a
    /// transfer) acts on again.
    pub oidc: Option<OidcClaims>,
}

impl Caller {
    pub fn require_admin(&self, action: &str) -> Result<(), Error> {
        if self.is_admin {
            Ok(())
        } else {
            Err(Error::forbidden(format!(
                "{action} needs a zone administrator; {} is not one",
                self.name
            )))
        }
    }
}

impl Access<'_> {
    /// Fails with `forbidden` unless `caller` holds at least `need` on `path` (directly or
    /// inherited from a collection above it). Administrators hold everything.
    pub(crate) async fn require(
        self,
        caller: &Caller,
        path: &LogicalPath,
        need: Permission,
    ) -> Result<(), Error> {
        if caller.is_admin {
            return Ok(());
        }
        let has = self
            .zone
            .catalog
            .effective_permission(path, &caller.principal_ids)
            .await?;
        if has >= need {
            Ok(())
        } else {
            Err(Error::forbidden(format!(
                "{} needs {need} permission on {path} (has {has})",
                caller.name
            )))
        }
    }

    /// What `caller` holds on `path` (inherited or its own; `own` for administrators):
    /// for an interface that offers only the actions the caller may take. The use cases
    /// still check each action themselves.
    pub async fn permission(self, caller: &Caller, path: &LogicalPath) -> Result<Permission, Error> {
        self.zone.local(path)?;
        if caller.is_admin {
            return Ok(Permission::Own);
        }
        self.zone
            .catalog
            .effective_permission(path, &caller.principal_ids)
            .await
    }

    /// [`Self::require`] for many paths, one outcome each, in order. A permission is the best
    /// of a node's ACLs and its ancestors', so it only grows downwards: whatever the caller
    /// holds on a parent it holds on each child, and a child is looked at on its own only
    /// where its parent falls short. The files of a collection cost one query, not one each.
    pub(crate) async fn require_each(
        self,
        caller: &Caller,
        paths: &[&LogicalPath],
        need: Permission,
    ) -> Vec<Result<(), Error>> {
        let mut parents: HashMap<LogicalPath, bool> = HashMap::new();
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            if let Some(parent) = path.parent().filter(|_| !caller.is_admin) {
                let enough = match parents.get(&parent) {
                    Some(&enough) => enough,
                    None => {
                        let enough = self.require(caller, &parent, need).await.is_ok();
                        parents.insert(parent, enough);
                        enough
                    }
                };
                if enough {
                    out.push(Ok(()));
                    continue;
                }
            }
            out.push(self.require(caller, path, need).await);
        }
        out
    }

    /// Resolves the principal a request was authenticated as.
    pub async fn caller_for(
        self,
        user: &weft_catalog::Principal,
        extra_group_ids: &[PrincipalId],
    ) -> Result<Caller, Error> {
        let mut ids = vec![user.id];
        ids.extend(self.zone.catalog.group_ids_of(user.id).await?);
        ids.extend_from_slice(extra_group_ids);
        ids.sort_unstable();
        ids.dedup();
        Ok(Caller {
            user_id: user.id,
            name: user.name.clone(),
            is_admin: user.is_admin,
            principal_ids: ids,
            via_zone: None,
            oidc: None,
        })
    }
}

/// Callers of recently seen API tokens, so that a request costs no catalog round trip to
/// authenticate. Any change to principals, memberships or tokens in this process bumps the
/// generation and so empties it; the short lifetime bounds how long a change made by
/// another server of the same zone (shared PostgreSQL catalog) takes to apply.
#[derive(Default)]
pub(crate) struct AuthCache {
    generation: std::sync::atomic::AtomicU64,
    entries: std::sync::Mutex<std::collections::HashMap<String, CachedCaller>>,
}

struct CachedCaller {
    generation: u64,
    fetched: std::time::Instant,
    caller: Caller,
    expires: Option<weft_types::Millis>,
}

const AUTH_CACHE_LIFETIME: std::time::Duration = std::time::Duration::from_secs(10);
const AUTH_CACHE_SIZE: usize = 10_000;

impl AuthCache {
    pub(crate) fn invalidate(&self) {
        self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// The generation to store a lookup under: taken before the lookup, so that a change
    /// made meanwhile discards its result.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A fresh entry for `key`: the caller and when its credential expires.
    pub(crate) fn get(&self, key: &str) -> Option<(Caller, Option<weft_types::Millis>)> {
        let generation = self.generation();
        let entries = self.entries.lock().expect("not poisoned");
        entries
            .get(key)
            .filter(|c| c.generation == generation && c.fetched.elapsed() < AUTH_CACHE_LIFETIME)
            .map(|c| (c.caller.clone(), c.expires))
    }

    pub(crate) fn put(
        &self,
        key: String,
        generation: u64,
        caller: &Caller,
        expires: Option<weft_types::Millis>,
    ) {
        let mut entries = self.entries.lock().expect("not poisoned");
        if entries.len() >= AUTH_CACHE_SIZE {
            entries.clear();
        }
        entries.insert(
            key,
            CachedCaller {
                generation,
                fetched: std::time::Instant::now(),
                caller: caller.clone(),
                expires,
            },
        );
    }
}

impl Access<'_> {
    /// The caller holding API token `secret`. Errors: `unauthenticated`, `token_expired`.
    pub async fn caller_for_token(self, secret: &str) -> Result<Caller, Error> {
        let hash = crate::access::principals::token_hash(secret);
        let generation = self.zone.auth_cache.generation();
        if let Some((caller, expires)) = self.zone.auth_cache.get(&hash) {
            if expires.is_some_and(|e| e <= crate::now_ms()) {
                return Err(crate::access::principals::expired());
            }
            return Ok(caller);
        }
        let (user, expires) = self.authenticate_token(secret).await?;
        let caller = self.caller_for(&user, &[]).await?;
        self.zone.auth_cache.put(hash, generation, &caller, expires);
        Ok(caller)
    }
}
