//! The audit log, for administrators. Its entries are written by the catalog in the
//! transaction of each change, under the actor the door (or the background work) set
//! with [`weft_catalog::acting`].

use super::Access;
use crate::Caller;
use weft_catalog::{AuditEntry, AuditEntryId, AuditQuery};
use weft_types::Error;

/// The most entries one page holds.
pub const AUDIT_PAGE_MAX: u32 = 1000;

impl Access<'_> {
    /// Entries of the audit log, newest first; with a full page, the cursor of the next.
    pub async fn audit_log(
        self,
        caller: &Caller,
        mut query: AuditQuery,
    ) -> Result<(Vec<AuditEntry>, Option<AuditEntryId>), Error> {
        caller.require_admin("reading the audit log")?;
        query.limit = query.limit.clamp(1, AUDIT_PAGE_MAX);
        let entries = self.zone.catalog.audit_log(&query).await?;
        let next = (entries.len() == query.limit as usize)
            .then(|| entries.last().map(|e| e.id))
            .flatten();
        Ok((entries, next))
    }
}
