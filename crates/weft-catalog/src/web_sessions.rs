//! The WebSessions part of the catalog's contract and its records; implemented in `sql/web_sessions.rs`.

use crate::{Principal, PrincipalId, TokenId};
use async_trait::async_trait;
use weft_types::{Error, Millis};

/// A session of the web interface, as the catalog keeps it (the secret only as a hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSession {
    pub user_id: PrincipalId,
    /// What the session was opened with.
    pub grant: SessionGrant,
    /// When the session ends at the latest: its API token's expiry, or the end set when
    /// it was opened by an OIDC sign-in.
    pub expires: Option<Millis>,
    /// The secret every state-changing request of the session must carry (opened).
    pub csrf: String,
    pub created: Millis,
    pub last_seen: Millis,
}

/// What opened a web session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionGrant {
    /// An API token (its id): the session ends with it.
    Token(TokenId),
    /// A sign-in with an OIDC issuer, whose claims the session keeps until it ends.
    Oidc(OidcClaims),
}

/// What an OIDC token said of its holder beyond who it is, kept where the token is not:
/// by a web session it opened and a transfer it started, which act on them later.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OidcClaims {
    /// Its group claims, as names; only those that name a weft group count.
    pub groups: Vec<String>,
    /// Whether it carried the administrator role.
    pub admin: bool,
}

/// The most web sessions a user holds: opening one more ends the least recently used, so
/// that signing in again and again grows no table.
pub const WEB_SESSIONS_PER_USER: usize = 32;

/// Sessions of the web interface, shared by every server of a zone.
#[async_trait]
pub trait WebSessions: Send + Sync {
    /// Records a session of `user_id` opened with `grant`, ending at `expires` at the
    /// latest (besides a token's own expiry); `csrf` is stored sealed. Sessions idle since
    /// before `idle_before` or created before `created_before` are deleted in the same
    /// transaction, so that abandoned sessions do not pile up. Errors: `not_found` (the
    /// token, or the user, is gone).
    #[allow(clippy::too_many_arguments)]
    async fn create_web_session(
        &self,
        secret_hash: &str,
        user_id: PrincipalId,
        grant: &SessionGrant,
        expires: Option<Millis>,
        csrf: &str,
        idle_before: Millis,
        created_before: Millis,
    ) -> Result<(), Error>;
    /// The session and its user, if both it and the token it was opened with (if any) exist.
    async fn web_session(&self, secret_hash: &str) -> Result<Option<(WebSession, Principal)>, Error>;
    /// Records that the session was used at `at`.
    async fn touch_web_session(&self, secret_hash: &str, at: Millis) -> Result<(), Error>;
    /// Deletes the session; whether there was one.
    async fn delete_web_session(&self, secret_hash: &str) -> Result<bool, Error>;
}
