//! Quotas: what a user, or the members of a group together, may store. A write is checked
//! before its bytes are accepted (the declared size of a put or an upload, the sum of a
//! bundle, the planned size of a transfer), against usage counted from the catalog at that
//! moment: exact whichever server wrote before and whatever crashed. Two writes checked at
//! the same moment may together pass a limit by what the later one adds.
//!
//! Most zones set no quota: whether any exists is kept for [`QUOTAS_FRESH`], so that a
//! write costs no catalog query then. A quota set through another server of the zone
//! applies here within that time.

use crate::{Caller, Zone};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_catalog::{Quota, Usage};
use weft_types::{Error, ErrorCode, PrincipalName, ResourceName};

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

impl Zone {
    async fn any_quota(&self) -> Result<bool, Error> {
        if let Some(any) = self.quotas_seen.fresh() {
            return Ok(any);
        }
        let any = !self.catalog.quotas().await?.is_empty();
        self.quotas_seen.set(Some(any));
        Ok(any)
    }

    /// Refuses (`quota_exceeded`) a write of `bytes` in `objects` onto `resource` that a
    /// quota of the principals `ids` (a user and its groups) forbids. New data objects count
    /// against quotas on all resources and on that one; further replicas of existing objects
    /// (`replicas`) only against quotas on that resource, since a quota on all resources
    /// counts objects, not their copies.
    pub(crate) async fn check_quota(
        &self,
        ids: &[i64],
        resource: &ResourceName,
        bytes: u64,
        objects: u64,
        replicas: bool,
    ) -> Result<(), Error> {
        if !self.any_quota().await? {
            return Ok(());
        }
        for q in self.catalog.quotas_of(ids).await? {
            let applies = match &q.resource {
                Some(r) => r == resource,
                None => !replicas,
            };
            if !applies {
                continue;
            }
            let used = self.catalog.usage(q.principal.id, q.resource.as_ref()).await?;
            let whose = match &q.resource {
                Some(r) => format!("the quota of {} on resource {r}", q.principal.name),
                None => format!("the quota of {}", q.principal.name),
            };
            if let Some(max) = q.max_bytes.filter(|m| used.bytes.saturating_add(bytes) > *m) {
                return Err(Error::new(
                    ErrorCode::QuotaExceeded,
                    format!(
                        "{whose} is {max} bytes: {} used, {} left, and this write needs {bytes}; nothing was stored",
                        used.bytes,
                        max.saturating_sub(used.bytes)
                    ),
                ));
            }
            if let Some(max) = q
                .max_objects
                .filter(|m| used.objects.saturating_add(objects) > *m)
            {
                return Err(Error::new(
                    ErrorCode::QuotaExceeded,
                    format!(
                        "{whose} is {max} objects: {} stored, {} left, and this write adds {objects}; nothing was stored",
                        used.objects,
                        max.saturating_sub(used.objects)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Sets the quota of the user or group `principal` on `resource` (all resources when
    /// `None`). Administrators only.
    pub async fn set_quota(
        &self,
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
        self.catalog
            .set_quota(principal_id, resource_id, max_bytes, max_objects)
            .await?;
        self.quotas_seen.set(Some(true));
        Ok(())
    }

    pub async fn remove_quota(
        &self,
        caller: &Caller,
        principal: &PrincipalName,
        resource: Option<&ResourceName>,
    ) -> Result<(), Error> {
        caller.require_admin("removing a quota")?;
        let (principal_id, resource_id) = self.quota_key(principal, resource).await?;
        self.quotas_seen.set(None);
        if !self.catalog.remove_quota(principal_id, resource_id).await? {
            let on = resource.map_or(String::new(), |r| format!(" on resource {r}"));
            return Err(Error::not_found(format_args!("a quota of {principal}{on}")));
        }
        Ok(())
    }

    /// Every quota with its usage now. Administrators only.
    pub async fn quotas(&self, caller: &Caller) -> Result<Vec<QuotaInfo>, Error> {
        caller.require_admin("listing quotas")?;
        let mut out = Vec::new();
        for quota in self.catalog.quotas().await? {
            let used = self
                .catalog
                .usage(quota.principal.id, quota.resource.as_ref())
                .await?;
            out.push(QuotaInfo { quota, used });
        }
        Ok(out)
    }

    async fn quota_key(
        &self,
        principal: &PrincipalName,
        resource: Option<&ResourceName>,
    ) -> Result<(i64, Option<i64>), Error> {
        let p = self
            .catalog
            .get_principal(principal)
            .await?
            .ok_or_else(|| Error::not_found(format_args!("user or group {principal}")))?;
        let r = match resource {
            Some(name) => Some(
                self.catalog
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
