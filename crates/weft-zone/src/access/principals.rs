//! Users, groups, tokens and ACLs.

use super::Access;
use crate::Caller;
use base64::Engine;
use rand::RngCore;
use weft_catalog::{AclEntry, Principal, PrincipalId, PrincipalKind, TokenId};
use weft_types::{Error, ErrorCode, LogicalPath, Millis, Permission, PrincipalName};

/// An API token as listings show it: never its secret, which the zone does not keep.
#[derive(Debug, Clone)]
pub struct TokenInfo {
    pub token: weft_catalog::TokenRecord,
    pub user: PrincipalName,
}

/// A freshly issued API token; the secret is shown once and stored only as a hash.
pub struct NewToken {
    pub user: PrincipalName,
    pub secret: String,
    pub expires: Option<Millis>,
}

const TOKEN_PREFIX: &str = "weft_";

pub(crate) fn expired() -> Error {
    Error::new(
        ErrorCode::TokenExpired,
        "the token has expired; create a new one with `weft token create`",
    )
}

/// Token secrets are 256 random bits, so one fast hash (no salt, no stretching) is enough
/// to keep the stored form useless to a thief.
pub fn token_hash(secret: &str) -> String {
    blake3::hash(secret.as_bytes()).to_hex().to_string()
}

impl Access<'_> {
    pub(crate) async fn ensure_home(self, user: &Principal) -> Result<(), Error> {
        let home = LogicalPath::zone_root(&self.zone.name)
            .join("home")?
            .join(user.name.as_str())?;
        self.zone
            .catalog
            .create_collection(&home, user.id, true)
            .await
            .map(|_| ())
    }

    pub async fn add_user(
        self,
        caller: &Caller,
        name: &PrincipalName,
        admin: bool,
    ) -> Result<Principal, Error> {
        caller.require_admin("adding a user")?;
        let user = self
            .zone
            .catalog
            .create_principal(name, PrincipalKind::User, admin)
            .await?;
        self.ensure_home(&user).await?;
        Ok(user)
    }

    /// Creates the (non-admin) user `name`, or returns it when a concurrent request just did.
    pub(crate) async fn create_user_once(self, name: &PrincipalName) -> Result<Principal, Error> {
        match self
            .zone
            .catalog
            .create_principal(name, PrincipalKind::User, false)
            .await
        {
            Err(e) if e.code == ErrorCode::AlreadyExists => self
                .zone
                .catalog
                .get_principal(name)
                .await?
                .ok_or_else(|| Error::not_found(name)),
            other => other,
        }
    }

    /// Ids of the existing groups among `names` (group claims of a token). A claim counts
    /// only for a weft group of exactly that name: never for a user (an administrator or
    /// `user#zone` included), so a group claim grants no more than the group's ACLs.
    pub(crate) async fn group_ids(self, names: &[String]) -> Result<Vec<PrincipalId>, Error> {
        let mut ids = Vec::new();
        for n in names {
            let Ok(name) = PrincipalName::parse(n.trim_start_matches('/')) else {
                continue;
            };
            if name.as_str().contains('#') {
                continue;
            }
            if let Some(p) = self.zone.catalog.get_principal(&name).await? {
                if p.kind == PrincipalKind::Group {
                    ids.push(p.id);
                }
            }
        }
        Ok(ids)
    }

    pub async fn principals(self, _caller: &Caller, kind: PrincipalKind) -> Result<Vec<Principal>, Error> {
        self.zone.catalog.list_principals(kind).await
    }

    pub async fn remove_principal(
        self,
        caller: &Caller,
        name: &PrincipalName,
        kind: PrincipalKind,
    ) -> Result<(), Error> {
        caller.require_admin(&format!("removing a {}", kind.as_str()))?;
        let p = self
            .zone
            .catalog
            .get_principal(name)
            .await?
            .ok_or_else(|| Error::not_found(format!("{} {name}", kind.as_str())))?;
        if p.kind != kind {
            return Err(Error::not_found(format!("{} {name}", kind.as_str())));
        }
        if p.name.as_str() == crate::ADMIN {
            return Err(Error::invalid("the zone's first administrator cannot be removed"));
        }
        if kind == PrincipalKind::User {
            // An empty home goes with its user; a home with data keeps the user (conflict).
            let home = LogicalPath::zone_root(&self.zone.name)
                .join("home")?
                .join(name.as_str())?;
            match self.zone.catalog.delete_node(&home, false).await {
                Ok(_) => {}
                Err(e) if e.code == ErrorCode::NotFound => {}
                Err(e) => {
                    return Err(Error::new(
                        ErrorCode::Conflict,
                        format!("user {name} still has data in {home}: {}", e.message),
                    ))
                }
            }
        }
        self.zone.catalog.delete_principal(name).await?;
        self.zone.auth_cache.invalidate();
        Ok(())
    }

    pub async fn add_group(self, caller: &Caller, name: &PrincipalName) -> Result<Principal, Error> {
        caller.require_admin("adding a group")?;
        self.zone
            .catalog
            .create_principal(name, PrincipalKind::Group, false)
            .await
    }

    pub async fn edit_membership(
        self,
        caller: &Caller,
        group: &PrincipalName,
        user: &PrincipalName,
        add: bool,
    ) -> Result<(), Error> {
        caller.require_admin("changing group membership")?;
        if add {
            self.zone.catalog.add_member(group, user).await?;
        } else {
            self.zone.catalog.remove_member(group, user).await?;
        }
        self.zone.auth_cache.invalidate();
        Ok(())
    }

    pub async fn members(self, _caller: &Caller, group: &PrincipalName) -> Result<Vec<Principal>, Error> {
        self.zone.catalog.members(group).await
    }

    pub(crate) async fn issue_token(
        self,
        user_id: PrincipalId,
        label: &str,
        expires: Option<Millis>,
    ) -> Result<String, Error> {
        let mut raw = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut raw);
        let secret = format!(
            "{TOKEN_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
        );
        self.zone
            .catalog
            .create_token(user_id, &token_hash(&secret), label, expires)
            .await?;
        Ok(secret)
    }

    /// Issues a token for `user` (default: the caller; another user needs an admin).
    pub async fn create_token(
        self,
        caller: &Caller,
        user: Option<&PrincipalName>,
        label: &str,
        ttl_seconds: Option<u64>,
    ) -> Result<NewToken, Error> {
        if let Some(zone) = &caller.via_zone {
            // A credential of this zone's own would outlive the peer's vouching for the
            // caller, and `zone rm` would not end it.
            return Err(Error::forbidden(format!(
                "{} acts through zone {zone}; API tokens are for this zone's own users (ask zone {zone} to act for you)",
                caller.name
            )));
        }
        let principal = match user {
            Some(u) if *u != caller.name => {
                caller.require_admin("creating a token for another user")?;
                self.zone
                    .catalog
                    .get_principal(u)
                    .await?
                    .ok_or_else(|| Error::not_found(format!("user {u}")))?
            }
            _ => self
                .zone
                .catalog
                .get_principal(&caller.name)
                .await?
                .ok_or_else(|| Error::not_found(&caller.name))?,
        };
        if principal.kind != PrincipalKind::User {
            return Err(Error::invalid(format!(
                "{} is a group; tokens belong to users",
                principal.name
            )));
        }
        let expires = ttl_seconds.map(|s| crate::now_ms() + (s as i64).saturating_mul(1000));
        let secret = self.issue_token(principal.id, label, expires).await?;
        Ok(NewToken {
            user: principal.name,
            secret,
            expires,
        })
    }

    /// API tokens, newest first: everyone's for an administrator, the caller's own
    /// otherwise. Errors: `forbidden` (a visitor, who has none here).
    pub async fn tokens(self, caller: &Caller) -> Result<Vec<TokenInfo>, Error> {
        if let Some(zone) = &caller.via_zone {
            return Err(Error::forbidden(format!(
                "{} acts through zone {zone} and holds no API token of this zone",
                caller.name
            )));
        }
        let user = (!caller.is_admin).then_some(caller.user_id);
        Ok(self
            .zone
            .catalog
            .list_tokens(user)
            .await?
            .into_iter()
            .map(|(token, user)| TokenInfo { token, user })
            .collect())
    }

    /// Deletes API token `id`, and the web sessions opened with it: the caller's own, or
    /// anyone's for an administrator. Errors: `not_found` (another user's looks the same
    /// as none, so that ids tell nothing).
    pub async fn delete_token(self, caller: &Caller, id: TokenId) -> Result<(), Error> {
        let own = self
            .zone
            .catalog
            .list_tokens((!caller.is_admin).then_some(caller.user_id))
            .await?
            .iter()
            .any(|(t, _)| t.id == id);
        if !own || caller.via_zone.is_some() {
            return Err(Error::not_found(format_args!("token {id}")));
        }
        self.zone.catalog.delete_token(id).await?;
        // A caller cached for the token would act on for up to the cache's life.
        self.zone.auth_cache.invalidate();
        Ok(())
    }

    /// The user holding API token `secret` and the token's expiry. Errors:
    /// `unauthenticated`, `token_expired`.
    pub(crate) async fn authenticate_token(self, secret: &str) -> Result<(Principal, Option<Millis>), Error> {
        let found = self.zone.catalog.find_token(&token_hash(secret)).await?;
        let Some((token, user)) = found else {
            return Err(Error::new(
                ErrorCode::Unauthenticated,
                "the token is not known to this zone",
            ));
        };
        if token.expires.is_some_and(|e| e <= crate::now_ms()) {
            return Err(expired());
        }
        Ok((user, token.expires))
    }

    pub async fn set_acl(
        self,
        caller: &Caller,
        path: &LogicalPath,
        principal: &PrincipalName,
        permission: Permission,
        recursive: bool,
    ) -> Result<(), Error> {
        self.zone
            .namespace()
            .node_as(caller, path, Permission::Own)
            .await?;
        let p = if principal.as_str().contains('#') {
            // A user of a federated zone may be granted rights before its first visit.
            self.zone.federation().remote_principal(principal).await?
        } else {
            self.zone
                .catalog
                .get_principal(principal)
                .await?
                .ok_or_else(|| Error::not_found(format!("principal {principal}")))?
        };
        self.zone.catalog.set_acl(path, p.id, permission, recursive).await
    }

    pub async fn acl(self, caller: &Caller, path: &LogicalPath) -> Result<Vec<AclEntry>, Error> {
        let node = self
            .zone
            .namespace()
            .node_as(caller, path, Permission::Read)
            .await?;
        self.zone.catalog.list_acl(node.id).await
    }
}

impl Access<'_> {
    /// Names of the groups the caller belongs to (stored memberships and token claims).
    pub async fn group_names(self, caller: &Caller) -> Result<Vec<String>, Error> {
        let groups = self.zone.catalog.list_principals(PrincipalKind::Group).await?;
        Ok(groups
            .into_iter()
            .filter(|g| caller.principal_ids.contains(&g.id))
            .map(|g| g.name.to_string())
            .collect())
    }
}
