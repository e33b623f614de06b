//! The Principals part of the catalog's contract and its records; implemented in `sql/principals.rs`.

use crate::{PrincipalId, TokenId};
use async_trait::async_trait;
use weft_types::{Error, Millis, PrincipalName};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrincipalKind {
    User,
    Group,
}

impl PrincipalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::User => "user",
            PrincipalKind::Group => "group",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: PrincipalId,
    pub name: PrincipalName,
    pub kind: PrincipalKind,
    pub is_admin: bool,
    pub created: Millis,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub id: TokenId,
    pub user_id: PrincipalId,
    pub label: String,
    pub created: Millis,
    /// `None`: valid until deleted.
    pub expires: Option<Millis>,
}

/// Users and groups, their memberships, API tokens and OIDC identities.
#[async_trait]
pub trait Principals: Send + Sync {
    /// Errors: `already_exists`.
    async fn create_principal(
        &self,
        name: &PrincipalName,
        kind: PrincipalKind,
        is_admin: bool,
    ) -> Result<Principal, Error>;

    async fn get_principal(&self, name: &PrincipalName) -> Result<Option<Principal>, Error>;

    async fn list_principals(&self, kind: PrincipalKind) -> Result<Vec<Principal>, Error>;

    /// Deletes the principal, its tokens, memberships and ACL entries. Errors: `not_found`;
    /// `conflict` while it still owns nodes.
    async fn delete_principal(&self, name: &PrincipalName) -> Result<(), Error>;

    /// Errors: `not_found` (either), `already_exists`.
    async fn add_member(&self, group: &PrincipalName, user: &PrincipalName) -> Result<(), Error>;

    /// Errors: `not_found` (either, or not a member).
    async fn remove_member(&self, group: &PrincipalName, user: &PrincipalName) -> Result<(), Error>;

    async fn members(&self, group: &PrincipalName) -> Result<Vec<Principal>, Error>;

    /// Ids of the groups `user_id` belongs to.
    async fn group_ids_of(&self, user_id: PrincipalId) -> Result<Vec<PrincipalId>, Error>;

    /// Stores a token by the hash of its secret (never the secret).
    async fn create_token(
        &self,
        user_id: PrincipalId,
        secret_hash: &str,
        label: &str,
        expires: Option<Millis>,
    ) -> Result<TokenRecord, Error>;

    /// The token and its user, if the hash is known (expiry is the caller's to check).
    async fn find_token(&self, secret_hash: &str) -> Result<Option<(TokenRecord, Principal)>, Error>;

    /// Tokens with their user's name, newest first; only `user_id`'s unless `None`.
    async fn list_tokens(
        &self,
        user_id: Option<PrincipalId>,
    ) -> Result<Vec<(TokenRecord, PrincipalName)>, Error>;

    /// Deletes a token (and the web sessions opened with it). Errors: `not_found`.
    async fn delete_token(&self, id: TokenId) -> Result<TokenRecord, Error>;

    /// The principal bound to the OIDC identity `subject` of `issuer`, if any.
    async fn oidc_principal(&self, issuer: &str, subject: &str) -> Result<Option<Principal>, Error>;

    /// Creates the user `name` (never an administrator) bound to the OIDC identity
    /// `subject` of `issuer`, both in one transaction. Errors: `already_exists` when the
    /// name is taken or the identity is already bound (nothing is created then).
    async fn create_oidc_user(
        &self,
        issuer: &str,
        subject: &str,
        name: &PrincipalName,
    ) -> Result<Principal, Error>;
}
