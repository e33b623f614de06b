//! Sessions of the web interface: opened with an API token or by signing in with an OIDC
//! issuer, kept in the catalog (so every server of the zone knows them), and turned back
//! into a `Caller` at every request, so that a deleted token or user ends its sessions at
//! once.
//!
//! An OIDC session keeps the groups and administrator role of the token it was opened
//! with (the issuer is not asked again at each request), so it ends after
//! `OIDC_SESSION_MAX_MS`: a role taken away at the issuer counts by the next sign-in.

use super::Access;
use crate::access::OidcLogin;
use crate::Caller;
use base64::Engine;
use rand::RngCore;
use weft_catalog::SessionGrant;
use weft_types::{Error, ErrorCode, Millis};

/// A session ends after this long without a request.
pub const SESSION_IDLE_MS: Millis = 12 * 3600 * 1000;
/// A session ends this long after it was opened, however busy.
pub const SESSION_MAX_MS: Millis = 7 * 24 * 3600 * 1000;
/// A session opened by an OIDC sign-in ends this long after it was opened: a working day.
pub const OIDC_SESSION_MAX_MS: Millis = 10 * 3600 * 1000;
/// The time of a session's last request is written at most this often: a page view
/// costs no catalog write, and the idle limit is kept to within this much.
const TOUCH_EVERY_MS: Millis = 60 * 1000;

/// A session just opened: its secret (for the cookie, shown nowhere else) and the CSRF
/// secret its pages carry.
pub struct NewSession {
    pub secret: String,
    pub csrf: String,
    pub caller: Caller,
}

/// A session resolved for a request.
pub struct Session {
    pub caller: Caller,
    pub csrf: String,
}

fn random_secret() -> String {
    let mut raw = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut raw);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn ended() -> Error {
    Error::new(
        ErrorCode::Unauthenticated,
        "the session has ended (logged out, expired, or its token was deleted); log in again",
    )
}

impl Access<'_> {
    /// Opens a session for the holder of API token `token`. Errors: `unauthenticated`
    /// (not a token of this zone), `token_expired`.
    pub async fn open_session(self, token: &str) -> Result<NewSession, Error> {
        let Some((record, user)) = self
            .zone
            .catalog
            .find_token(&crate::access::principals::token_hash(token))
            .await?
        else {
            return Err(Error::new(
                ErrorCode::Unauthenticated,
                "the token is not known to this zone",
            ));
        };
        let now = crate::now_ms();
        if record.expires.is_some_and(|e| e <= now) {
            return Err(crate::access::principals::expired());
        }
        let caller = self.caller_for(&user, &[]).await?;
        self.record_session(caller, &SessionGrant::Token(record.id), None)
            .await
            .map_err(|e| match e.code {
                // The token was deleted between the check and the insert.
                ErrorCode::NotFound => {
                    Error::new(ErrorCode::Unauthenticated, "the token is not known to this zone")
                }
                _ => e,
            })
    }

    /// Opens a session for the user of a verified OIDC token (made on first sight, as
    /// for a bearer token), with the token's groups and administrator role.
    pub async fn open_oidc_session(self, login: &OidcLogin) -> Result<NewSession, Error> {
        let caller = self.caller_for_oidc(login).await?;
        let grant = SessionGrant::Oidc(login.claims.clone());
        let ends = crate::now_ms() + OIDC_SESSION_MAX_MS;
        self.record_session(caller, &grant, Some(ends)).await
    }

    async fn record_session(
        self,
        caller: Caller,
        grant: &SessionGrant,
        expires: Option<Millis>,
    ) -> Result<NewSession, Error> {
        crate::access::act_as(caller.name.as_str());
        let now = crate::now_ms();
        let (secret, csrf) = (random_secret(), random_secret());
        self.zone
            .catalog
            .create_web_session(
                &crate::access::principals::token_hash(&secret),
                caller.user_id,
                grant,
                expires,
                &csrf,
                now - SESSION_IDLE_MS,
                now - SESSION_MAX_MS,
            )
            .await?;
        Ok(NewSession { secret, csrf, caller })
    }

    /// The session whose cookie holds `secret`, as its token's caller. A session past
    /// its idle or absolute limit, or whose token expired, is deleted. Errors:
    /// `unauthenticated`.
    pub async fn session(self, secret: &str) -> Result<Session, Error> {
        let hash = crate::access::principals::token_hash(secret);
        let Some((s, user)) = self.zone.catalog.web_session(&hash).await? else {
            return Err(ended());
        };
        let now = crate::now_ms();
        if !session_alive(s.created, s.last_seen, s.expires, now) {
            self.zone.catalog.delete_web_session(&hash).await?;
            return Err(ended());
        }
        if now - s.last_seen >= TOUCH_EVERY_MS {
            self.zone.catalog.touch_web_session(&hash, now).await?;
        }
        let caller = match &s.grant {
            SessionGrant::Token(_) => self.caller_for(&user, &[]).await?,
            SessionGrant::Oidc(claims) => self.caller_with_claims(&user, claims).await?,
        };
        Ok(Session { caller, csrf: s.csrf })
    }

    /// Ends the session whose cookie holds `secret`; ending one that is gone already is
    /// no error (a second click on "log out").
    pub async fn close_session(self, secret: &str) -> Result<(), Error> {
        self.zone
            .catalog
            .delete_web_session(&crate::access::principals::token_hash(secret))
            .await
            .map(|_| ())
    }
}

/// Whether a session opened at `created`, last used at `last_seen`, and ending at
/// `expires` at the latest (its token's expiry, an OIDC session's end), may still be used
/// at `now`.
fn session_alive(created: Millis, last_seen: Millis, expires: Option<Millis>, now: Millis) -> bool {
    now - last_seen < SESSION_IDLE_MS && now - created < SESSION_MAX_MS && expires.is_none_or(|e| now < e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_end_when_idle_old_or_their_token_expires() {
        let t0 = 1_000_000_000_000;
        assert!(session_alive(t0, t0, None, t0));
        assert!(session_alive(t0, t0, None, t0 + SESSION_IDLE_MS - 1));
        assert!(!session_alive(t0, t0, None, t0 + SESSION_IDLE_MS));
        // Busy, but past the absolute limit.
        let late = t0 + SESSION_MAX_MS;
        assert!(!session_alive(t0, late - 1, None, late));
        assert!(session_alive(t0, late - 2, None, late - 1));
        assert!(!session_alive(t0, t0, Some(t0 + 5), t0 + 5));
        assert!(session_alive(t0, t0, Some(t0 + 5), t0 + 4));
    }

    #[test]
    fn secrets_are_256_random_bits() {
        let (a, b) = (random_secret(), random_secret());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
    }
}
