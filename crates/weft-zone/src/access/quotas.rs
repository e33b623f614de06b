//! Quotas: what a user, or the members of a group together, may store. A write is checked
//! twice. Before its bytes are accepted (the declared size of a put or an upload, a part,
//! the sum of a bundle, the planned size of a transfer) against usage counted from the
//! catalog at that moment plus what open uploads reserve: a refusal then costs nothing.
//! And in the transaction that registers it, against what is stored then: exact whichever
//! server wrote before or at the same moment, whatever crashed.
//!
//! An object is charged to its owner: its writer when new, and its owner still when
//! someone else with write permission overwrites it or copies it to another resource.
//!
//! Most zones set no quota: whether any exists is kept for [`QUOTAS_FRESH`], so that a
//! write costs no catalog query then. A quota set through another server of the zone
//! applies here within that time.

use super::Access;
use crate::Caller;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_catalog::{quota_exceeded, Node, OverQuota, PrincipalId, Quota, ResourceId, Usage};
use weft_types::{Error, ErrorCode, PrincipalName, ResourceName};

/// A write as the quota check before its bytes arrive sees it.
pub(crate) struct Charge<'a> {
    /// The object it overwrites (or copies further), whose owner is charged; otherwise
    /// the caller, who owns what it makes.
    pub over: Option<Owned>,
    pub resource: &'a ResourceName,
    pub bytes: u64,
    pub objects: u64,
    /// Further copies of objects: counted only by quotas on `resource`.
    pub replicas: bool,
    /// What the caller's own open upload holds of the quota, which this write turns into
    /// stored bytes (its completion).
    pub own_reservation: u64,
}

impl<'a> Charge<'a> {
    /// `bytes` in new objects, or over the object `over`, on `resource`.
    pub(crate) fn objects(over: Option<Owned>, resource: &'a ResourceName, bytes: u64, objects: u64) -> Self {
        Charge {
            over,
            resource,
            bytes,
            objects,
            replicas: false,
            own_reservation: 0,
        }
    }
}

/// Who owns an existing object, and its size: what a write over it or a copy of it
/// charges to quotas.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owned {
    pub owner_id: PrincipalId,
    pub size: u64,
}

impl Owned {
    pub(crate) fn of(node: &Node) -> Option<Owned> {
        (node.kind == weft_types::NodeKind::Object).then_some(Owned {
            owner_id: node.owner_id,
            size: node.size.max(0) as u64,
        })
    }
}

/// A quota with what it limits used now, as the interfaces show it.
#[derive(Debug, Clone)]
pub struct QuotaInfo {
    pub quota: Quota,
    pub used: Usage,
}

/// How long a server trusts what it last read of whether the zone has quotas.
pub const QUOTAS_FRESH: Duration = Duration::from_secs(5);

/// Whether the zone has any quota, and when that was read.
#[derive(Default)]
pub(crate) struct QuotasSeen(Mutex<Option<(Instant, bool)>>);

impl QuotasSeen {
    fn fresh(&self) -> Option<bool> {
        self.0
            .lock()
            .expect("not poisoned")
            .filter(|(at, _)| at.elapsed() < QUOTAS_FRESH)
            .map(|(_, any)| any)
    }

    fn set(&self, any: Option<bool>) {
        *self.0.lock().expect("not poisoned") = any.map(|a| (Instant::now(), a));
    }
}

impl Access<'_> {
    pub(crate) async fn any_quota(self) -> Result<bool, Error> {
        if let Some(any) = self.zone.quotas_seen.fresh() {
            return Ok(any);
        }
        let any = !self.zone.catalog.quotas().await?.is_empty();
        self.zone.quotas_seen.set(Some(any));
        Ok(any)
    }

    /// Refuses (`quota_exceeded`) `write` by `caller` if a quota of whoever it is charged
    /// to forbids it, counting what the open uploads of those charged reserve. Every way of
    /// storing calls this before the bytes arrive, so that a refusal comes first and costs
    /// nothing; the transaction that registers checks once more (weft-catalog's
    /// `quota_guard`), which is what holds when servers write at once.
    pub(crate) async fn check_quota(self, caller: &Caller, write: Charge<'_>) -> Result<(), Error> {
        if !self.any_quota().await? {
            return Ok(());
        }
        let Charge {
            over,
            resource,
            mut bytes,
            mut objects,
            replicas,
            own_reservation,
        } = write;
        // An object there is its owner's: an overwrite or a further copy is charged to the
        // owner, and an overwrite adds only what it grows by.
        let mut owner = caller.user_id;
        if let Some(over) = over {
            owner = over.owner_id;
            if !replicas {
                bytes = bytes.saturating_sub(over.size);
                objects = 0;
            }
        }
        if bytes == 0 && objects == 0 {
            return Ok(());
        }
        let ids = if owner == caller.user_id {
            caller.principal_ids.clone()
        } else {
            let mut ids = self.zone.catalog.group_ids_of(owner).await?;
            ids.push(owner);
            ids
        };
        // The caller's own upload turns into what it stores; not the owner's.
        let own_reservation = if owner == caller.user_id {
            own_reservation
        } else {
            0
        };
        for q in self.zone.catalog.quotas_of(&ids).await? {
            let applies = match &q.resource {
                Some(r) => r == resource,
                None => !replicas,
            };
            if !applies {
                continue;
            }
            let used = self
                .zone
                .catalog
                .usage(q.principal.id, q.resource.as_ref())
                .await?;
            let reserved = used.reserved.saturating_sub(own_reservation);
            let taken = used.bytes.saturating_add(reserved);
            let over = if let Some(max) = q
                .max_bytes
                .filter(|m| bytes > 0 && taken.saturating_add(bytes) > *m)
            {
                OverQuota::Bytes {
                    max,
                    used: used.bytes,
                    held: reserved,
                    needs: bytes,
                }
            } else if let Some(max) = q
                .max_objects
                .filter(|m| objects > 0 && used.objects.saturating_add(objects) > *m)
            {
                OverQuota::Objects {
                    max,
                    stored: used.objects,
                    adds: objects,
                }
            } else {
                continue;
            };
            let resource = q.resource.as_ref().map(|r| r.as_str());
            return Err(quota_exceeded(q.principal.name.as_str(), resource, over));
        }
        Ok(())
    }

    /// Sets the quota of the user or group `principal` on `resource` (all resources when
    /// `None`). Administrators only.
    pub async fn set_quota(
        self,
        caller: &Caller,
        principal: &PrincipalName,
        resource: Option<&ResourceName>,
        max_bytes: Option<u64>,
        max_objects: Option<u64>,
    ) -> Result<(), Error> {
        caller.require_admin("setting a quota")?;
        if max_bytes.is_none() && max_objects.is_none() {
            return Err(Error::invalid(
                "a quota limits bytes, objects or both; to lift one, remove it",
            ));
        }
        let (principal_id, resource_id) = self.quota_key(principal, resource).await?;
        self.zone
            .catalog
            .set_quota(principal_id, resource_id, max_bytes, max_objects)
            .await?;
        self.zone.quotas_seen.set(Some(true));
        Ok(())
    }

    pub async fn remove_quota(
        self,
        caller: &Caller,
        principal: &PrincipalName,
        resource: Option<&ResourceName>,
    ) -> Result<(), Error> {
        caller.require_admin("removing a quota")?;
        let (principal_id, resource_id) = self.quota_key(principal, resource).await?;
        self.zone.quotas_seen.set(None);
        if !self.zone.catalog.remove_quota(principal_id, resource_id).await? {
            let on = resource.map_or(String::new(), |r| format!(" on resource {r}"));
            return Err(Error::not_found(format_args!("a quota of {principal}{on}")));
        }
        Ok(())
    }

    /// Every quota with its usage now. Administrators only.
    pub async fn quotas(self, caller: &Caller) -> Result<Vec<QuotaInfo>, Error> {
        caller.require_admin("listing quotas")?;
        let mut out = Vec::new();
        for quota in self.zone.catalog.quotas().await? {
            let used = self
                .zone
                .catalog
                .usage(quota.principal.id, quota.resource.as_ref())
                .await?;
            out.push(QuotaInfo { quota, used });
        }
        Ok(out)
    }

    async fn quota_key(
        self,
        principal: &PrincipalName,
        resource: Option<&ResourceName>,
    ) -> Result<(PrincipalId, Option<ResourceId>), Error> {
        let p = self
            .zone
            .catalog
            .get_principal(principal)
            .await?
            .ok_or_else(|| Error::not_found(format_args!("user or group {principal}")))?;
        let r = match resource {
            Some(name) => Some(
                self.zone
                    .catalog
                    .get_resource(name)
                    .await?
                    .ok_or_else(|| Error::new(ErrorCode::UnknownResource, format!("no resource {name}")))?
                    .id,
            ),
            None => None,
        };
        Ok((p.id, r))
    }
}
