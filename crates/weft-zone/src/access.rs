//! Who is asking, and what they may do.

use crate::Zone;
use weft_types::{Error, LogicalPath, Permission, PrincipalName};

/// An authenticated principal, with the ids the ACL checks match against.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: i64,
    pub name: PrincipalName,
    pub is_admin: bool,
    /// The user's own id followed by the ids of its groups.
    pub principal_ids: Vec<i64>,
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

impl Zone {
    /// Fails with `forbidden` unless `caller` holds at least `need` on `path` (directly or
    /// inherited from a collection above it). Administrators hold everything.
    pub(crate) async fn require(
        &self,
        caller: &Caller,
        path: &LogicalPath,
        need: Permission,
    ) -> Result<(), Error> {
        if caller.is_admin {
            return Ok(());
        }
        let has = self
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

    /// Resolves the principal a request was authenticated as.
    pub async fn caller_for(
        &self,
        user: &weft_catalog::Principal,
        extra_group_ids: &[i64],
    ) -> Result<Caller, Error> {
        let mut ids = vec![user.id];
        ids.extend(self.catalog.group_ids_of(user.id).await?);
        ids.extend_from_slice(extra_group_ids);
        ids.sort_unstable();
        ids.dedup();
        Ok(Caller {
            user_id: user.id,
            name: user.name.clone(),
            is_admin: user.is_admin,
            principal_ids: ids,
        })
    }
}
