//! Users of OpenID Connect issuers. weft-api verifies a token; here its identity becomes a
//! principal. An identity is its issuer and subject (`iss`, `sub`), bound to the principal's
//! id in the catalog when first seen. The token's preferred user name only suggests the
//! name of that new user: it never selects an existing principal, so a user of the identity
//! provider called `admin`, like a weft group, or `alice#lrz` takes none of them over.
//!
//! Naming: the preferred name, lower-cased, when it is a valid principal name without `#`,
//! not already a principal, and not of the derived form below. Otherwise the derived name
//! `<base>-<hash>`: `<base>` is the preferred name lower-cased with every character a
//! principal name cannot hold (and `#`) replaced by `-` (prefixed `oidc-` unless it starts
//! with a letter or `_`), `<hash>` the first 10 hex digits of BLAKE3 of the
//! issuer's length (8 bytes, little-endian), the issuer and the subject. Only the identity itself (or an administrator on
//! purpose) can hold a derived name; should it be taken anyway, the request is refused
//! with `conflict` naming it. The name is kept when the preferred name changes later.
//!
//! Administrators: only a token carrying the issuer's configured administrator role (weft-api
//! reads it) is one, per request; the principal itself is never stored as an administrator.

use super::Access;
use crate::Caller;
use weft_catalog::{OidcClaims, Principal};
use weft_types::{Error, ErrorCode, PrincipalName};

/// A verified OIDC token, as far as weft uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcLogin {
    /// The `iss` claim (a configured, trusted issuer).
    pub issuer: String,
    /// The `sub` claim: the issuer's stable id of the user.
    pub subject: String,
    /// The user name the token suggests (`preferred_username` by default).
    pub preferred_name: String,
    /// Its group claims and administrator role.
    pub claims: OidcClaims,
}

/// Hex digits of the identity's hash in a derived name.
const HASH_DIGITS: usize = 10;

/// The name a new user of the identity (`issuer`, `subject`) asks for first: the preferred
/// name, when it can be a local user's name at all (it may still be taken).
pub fn plain_oidc_name(preferred: &str) -> Option<PrincipalName> {
    let name = PrincipalName::parse(&preferred.to_lowercase()).ok()?;
    if name.as_str().contains('#') || looks_derived(name.as_str()) {
        return None;
    }
    Some(name)
}

/// The name of the identity (`issuer`, `subject`) when its preferred name cannot be used:
/// `<preferred name made valid>-<10 hex digits of BLAKE3(len(issuer) as u64 LE, issuer, subject)>`.
pub fn derived_oidc_name(preferred: &str, issuer: &str, subject: &str) -> PrincipalName {
    let mut base: String = preferred
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !base.starts_with(|c: char| c.is_ascii_lowercase() || c == '_') {
        base = if base.is_empty() {
            "oidc".into()
        } else {
            format!("oidc-{base}")
        };
    }
    base.truncate(128 - 1 - HASH_DIGITS);
    let mut hasher = blake3::Hasher::new();
    hasher.update(&(issuer.len() as u64).to_le_bytes());
    hasher.update(issuer.as_bytes());
    hasher.update(subject.as_bytes());
    let hash = hasher.finalize().to_hex();
    PrincipalName::parse(&format!("{base}-{}", &hash[..HASH_DIGITS]))
        .expect("a derived name is valid by construction")
}

/// Ends in `-` and `HASH_DIGITS` hex digits, as a derived name does.
fn looks_derived(name: &str) -> bool {
    name.len() > HASH_DIGITS
        && name.as_bytes()[name.len() - HASH_DIGITS - 1] == b'-'
        && name[name.len() - HASH_DIGITS..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Access<'_> {
    /// The caller a verified OIDC token acts as: the user bound to its issuer and subject
    /// (created on first sight, with a home collection), with the token's claims.
    pub async fn caller_for_oidc(self, login: &OidcLogin) -> Result<Caller, Error> {
        let user = self.oidc_user(login).await?;
        self.caller_with_claims(&user, &login.claims).await
    }

    /// `user` as an OIDC token with `claims` makes it, now or later (a web session, a
    /// transfer's run): in its stored groups and the existing weft groups the claims name;
    /// an administrator only when they carry the administrator role.
    pub(crate) async fn caller_with_claims(
        self,
        user: &Principal,
        claims: &OidcClaims,
    ) -> Result<Caller, Error> {
        let groups = self.group_ids(&claims.groups).await?;
        let mut caller = self.caller_for(user, &groups).await?;
        caller.is_admin = claims.admin;
        caller.oidc = Some(claims.clone());
        Ok(caller)
    }

    async fn oidc_user(self, login: &OidcLogin) -> Result<Principal, Error> {
        let (issuer, subject) = (login.issuer.as_str(), login.subject.as_str());
        if let Some(p) = self.zone.catalog.oidc_principal(issuer, subject).await? {
            return Ok(p);
        }
        let derived = derived_oidc_name(&login.preferred_name, issuer, subject);
        for name in plain_oidc_name(&login.preferred_name)
            .into_iter()
            .chain([derived.clone()])
        {
            match self.zone.catalog.create_oidc_user(issuer, subject, &name).await {
                Ok(user) => {
                    self.ensure_home(&user).await?;
                    return Ok(user);
                }
                Err(e) if e.code == ErrorCode::AlreadyExists => {
                    // A concurrent first request of the same identity, or the name is taken.
                    if let Some(p) = self.zone.catalog.oidc_principal(issuer, subject).await? {
                        return Ok(p);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "the OIDC user {:?} (subject {subject:?} of {issuer}) cannot be given a weft user: \
                 its name {derived} is already taken by another principal",
                login.preferred_name
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISS: &str = "https://kc.example/realms/weft";

    #[test]
    fn plain_names_are_valid_local_names_only() {
        assert_eq!(plain_oidc_name("Alice").unwrap().as_str(), "alice");
        assert_eq!(plain_oidc_name("j.doe").unwrap().as_str(), "j.doe");
        // Another zone's principal, invalid names and derived-looking names are never plain.
        for refused in [
            "alice#lrz",
            "admin#z",
            "#",
            "",
            "a b",
            "1234",
            "jürgen",
            "alice-0123456789",
        ] {
            assert_eq!(plain_oidc_name(refused), None, "{refused:?}");
        }
        assert!(plain_oidc_name("alice-012345678").is_some());
        assert!(plain_oidc_name("alice-0123456789a").is_some());
        assert!(plain_oidc_name("alice-012345678g").is_some());
    }

    #[test]
    fn derived_names_are_local_users_of_that_identity() {
        let fed = derived_oidc_name("alice#lrz", ISS, "s-1");
        assert!(fed.as_str().starts_with("alice-lrz-"), "{fed}");
        assert!(!fed.as_str().contains('#'));
        assert!(looks_derived(fed.as_str()));
        assert_eq!(fed, derived_oidc_name("alice#lrz", ISS, "s-1"));
        // Every part of the identity counts, and where the issuer ends.
        assert_ne!(fed, derived_oidc_name("alice#lrz", ISS, "s-2"));
        assert_ne!(fed, derived_oidc_name("alice#lrz", "https://other", "s-1"));
        assert_ne!(
            derived_oidc_name("a", "x", "\0y"),
            derived_oidc_name("a", "x\0", "y")
        );
        let admin = derived_oidc_name("admin", ISS, "s-1");
        assert_eq!(admin.as_str().len(), "admin-".len() + HASH_DIGITS);
        assert!(admin.as_str().starts_with("admin-"));
        for (preferred, prefix) in [
            ("Admin", "admin-"),
            ("1234", "oidc-1234-"),
            ("", "oidc-"),
            ("-x", "oidc--x-"),
            ("jürgen", "j-rgen-"),
            ("a/b c", "a-b-c-"),
        ] {
            let n = derived_oidc_name(preferred, ISS, "s");
            assert!(n.as_str().starts_with(prefix), "{preferred:?} → {n}");
            assert!(plain_oidc_name(n.as_str()).is_none(), "{n} is derived-looking");
        }
        let long = derived_oidc_name(&"x".repeat(300), ISS, "s");
        assert_eq!(long.as_str().len(), 128);
    }
}
