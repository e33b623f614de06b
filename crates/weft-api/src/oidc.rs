//! Bearer access tokens (JWT) from configured OpenID Connect issuers such as Keycloak:
//! signature checked against the issuer's JWKS, then issuer, audience, expiry and subject.
//! Tokens of any length are accepted (Keycloak tokens run past the 1,024 bytes that broke
//! iRODS). What the token's identity becomes is weft-zone's (`OidcLogin`).
//!
//! Keys: readers of a known key id never wait. An unknown key id (issuer key rotation)
//! fetches the JWKS again, at most one fetch per issuer at a time and not more often than
//! every 10 s; a failed fetch keeps the keys fetched before.

use base64::Engine as _;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use weft_types::{Error, ErrorCode};
use weft_zone::access::{OidcClaims, OidcLogin};

/// One trusted issuer, as configured.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcIssuer {
    /// The `iss` claim, e.g. `https://keycloak.example/realms/weft`.
    pub issuer: String,
    /// The value the `aud` claim must contain.
    pub audience: String,
    /// Claim holding the preferred user name: the name of the user created for a new
    /// identity (issuer and subject), when it is free.
    #[serde(default = "default_user_claim")]
    pub user_claim: String,
    /// Claim holding group names (an array of strings); each counts where a weft group of
    /// that name exists.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// The role that makes a token's user a zone administrator. Without it, no user of this
    /// issuer is ever an administrator.
    #[serde(default)]
    pub admin_role: Option<String>,
    /// Claim holding the token's roles (an array of strings; a dotted name reaches into
    /// nested claims): Keycloak's realm roles by default.
    #[serde(default = "default_roles_claim")]
    pub roles_claim: String,
    /// Where the keys are; default: from the issuer's discovery document.
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Clock skew tolerated on `exp`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_seconds: u64,
    /// The client the web interface signs in with (a public client of the issuer, with
    /// the standard flow and `<zone URL>/login/oidc/callback` among its redirect URIs).
    /// Without it, the sign-in page offers only the token form for this issuer.
    #[serde(default)]
    pub web_client_id: Option<String>,
    /// The name on the sign-in button ("Sign in with ..."); the issuer's host by default.
    #[serde(default)]
    pub label: Option<String>,
}

impl OidcIssuer {
    /// What the sign-in button calls this issuer.
    pub fn label(&self) -> &str {
        self.label.as_deref().unwrap_or_else(|| {
            let rest = self
                .issuer
                .split_once("://")
                .map_or(self.issuer.as_str(), |(_, r)| r);
            rest.split(['/', '?', '#']).next().unwrap_or(rest)
        })
    }
}

fn default_leeway() -> u64 {
    30
}

fn default_user_claim() -> String {
    "preferred_username".into()
}
fn default_groups_claim() -> String {
    "groups".into()
}
fn default_roles_claim() -> String {
    "realm_access.roles".into()
}

/// Asymmetric algorithms only: a shared-secret (HS*) token could be forged by anyone who
/// learns the secret, and the JWKS of an issuer never publishes one.
const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Keys are fetched again for an unknown key id (issuer key rotation), but not more often
/// than this, so that garbage tokens cannot make us hammer the issuer.
const REFRESH_EVERY: Duration = Duration::from_secs(10);
/// How long one fetch of the discovery document or the JWKS may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

type KeySet = Arc<HashMap<String, DecodingKey>>;

/// How long an issuer's discovery document is kept: a change of its endpoints shows within
/// this, and a sign-in page that anybody may load costs the issuer no request.
const DISCOVERY_FRESH: Duration = Duration::from_secs(300);

/// What weft reads of an issuer's discovery document.
#[derive(Clone, Deserialize)]
pub(crate) struct Discovery {
    pub jwks_uri: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
}

/// The last discovery document fetched of one issuer, or the last failure: a document for
/// [`DISCOVERY_FRESH`], a failure for [`REFRESH_EVERY`], so that neither the sign-in page
/// nor garbage tokens make a request to the issuer each.
type Discovered = Option<(Instant, Result<Discovery, String>)>;

/// The keys of one issuer.
#[derive(Default)]
struct Keys {
    /// Held across a fetch of the discovery document: at most one in flight.
    discovery: tokio::sync::Mutex<Discovered>,
    /// The last keys fetched; replaced whole by a successful fetch, held only to clone.
    current: RwLock<KeySet>,
    /// When the last fetch ended (or began, while one is in flight). Held across a fetch,
    /// so there is at most one in flight; readers of known keys never touch it.
    fetch: tokio::sync::Mutex<Option<Instant>>,
}

impl Keys {
    fn get(&self, kid: &str) -> Option<DecodingKey> {
        self.current.read().expect("not poisoned").get(kid).cloned()
    }
}

pub struct OidcVerifier {
    issuers: Vec<OidcIssuer>,
    keys: Vec<Keys>,
    /// Also what the web sign-in asks the issuers with (discovery, token endpoint).
    pub(crate) http: reqwest::Client,
}

fn unauthenticated(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::Unauthenticated, msg)
}

impl OidcVerifier {
    /// `cas`: trusted besides the system roots in the issuers' certificates.
    pub fn new(issuers: Vec<OidcIssuer>, cas: &weft_client::TrustedCas) -> Self {
        let keys = issuers.iter().map(|_| Keys::default()).collect();
        let http = cas
            .apply(reqwest::Client::builder())
            .timeout(FETCH_TIMEOUT)
            .build()
            .expect("http client");
        OidcVerifier { issuers, keys, http }
    }

    pub fn is_empty(&self) -> bool {
        self.issuers.is_empty()
    }

    /// The trusted issuers, in the configured order.
    pub fn issuers(&self) -> &[OidcIssuer] {
        &self.issuers
    }

    pub async fn verify(&self, token: &str) -> Result<OidcLogin, Error> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| unauthenticated(format!("malformed bearer token: {e}")))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(unauthenticated(format!(
                "token algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| unauthenticated("token has no key id (kid)"))?;
        // The issuer is read before verification only to choose which keys to verify with.
        let iss = unverified_issuer(token)?;
        let i =
            self.issuers.iter().position(|c| c.issuer == iss).ok_or_else(|| {
                unauthenticated(format!("token issuer {iss:?} is not trusted by this zone"))
            })?;
        let config = &self.issuers[i];
        let key = self.key(i, &kid).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&config.issuer]);
        validation.set_audience(&[&config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = config.leeway_seconds;
        let data = jsonwebtoken::decode::<serde_json::Value>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            match e.kind() {
                K::ExpiredSignature => Error::new(
                    ErrorCode::TokenExpired,
                    "the access token has expired; get a new one",
                ),
                K::InvalidAudience => {
                    unauthenticated(format!("token audience does not include {:?}", config.audience))
                }
                K::InvalidIssuer => unauthenticated("token issuer does not match"),
                K::InvalidSignature => {
                    unauthenticated("token signature does not verify against the issuer's keys")
                }
                _ => unauthenticated(format!("token rejected: {e}")),
            }
        })?;
        let claims = data.claims;
        let subject = claim(&claims, "sub")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| unauthenticated("token has no subject (sub)"))?
            .to_owned();
        let preferred_name = claim(&claims, &config.user_claim)
            .and_then(|v| v.as_str())
            .ok_or_else(|| unauthenticated(format!("token has no {:?} claim", config.user_claim)))?
            .to_owned();
        let groups = strings(claim(&claims, &config.groups_claim))
            .map(|g| g.trim_start_matches('/').to_owned())
            .collect();
        let admin = config
            .admin_role
            .as_ref()
            .is_some_and(|role| strings(claim(&claims, &config.roles_claim)).any(|r| r == role.as_str()));
        Ok(OidcLogin {
            issuer: config.issuer.clone(),
            subject,
            preferred_name,
            claims: OidcClaims { groups, admin },
        })
    }

    /// The key `kid` of issuer `i`. A known key is read without waiting; an unknown one
    /// waits for the one fetch of the issuer's keys in flight, or starts one unless the
    /// last ended less than `REFRESH_EVERY` ago.
    async fn key(&self, i: usize, kid: &str) -> Result<DecodingKey, Error> {
        let keys = &self.keys[i];
        if let Some(k) = keys.get(kid) {
            return Ok(k);
        }
        let mut last = keys.fetch.lock().await;
        // A fetch that ended while this request waited may have brought the key.
        if let Some(k) = keys.get(kid) {
            return Ok(k);
        }
        if last.is_none_or(|t| t.elapsed() >= REFRESH_EVERY) {
            // Stamped before (a request dropped mid-fetch counts) and after the fetch (the
            // interval runs from its end, however long it hung).
            *last = Some(Instant::now());
            let fetched = self.fetch_keys(i).await;
            *last = Some(Instant::now());
            *keys.current.write().expect("not poisoned") = Arc::new(fetched?);
        }
        drop(last);
        keys.get(kid)
            .ok_or_else(|| unauthenticated(format!("no key {kid:?} in the issuer's JWKS")))
    }

    async fn fetch_keys(&self, i: usize) -> Result<HashMap<String, DecodingKey>, Error> {
        let config = &self.issuers[i];
        let unavailable = |e: String| {
            Error::new(
                ErrorCode::StorageUnavailable,
                format!("cannot fetch the keys of issuer {}: {e}", config.issuer),
            )
        };
        let jwks_uri = match &config.jwks_uri {
            Some(u) => u.clone(),
            None => self
                .discovery(i)
                .await
                .map_err(unavailable)?
                .jwks_uri
                .ok_or_else(|| unavailable("its discovery document names no jwks_uri".into()))?,
        };
        let set: JwkSet = self.get_json(&jwks_uri).await.map_err(unavailable)?;
        let mut out = HashMap::new();
        for jwk in &set.keys {
            if let (Some(kid), Ok(key)) = (&jwk.common.key_id, DecodingKey::from_jwk(jwk)) {
                out.insert(kid.clone(), key);
            }
        }
        Ok(out)
    }

    /// Issuer `i`'s discovery document, as last fetched while it is fresh (see
    /// [`Discovered`]). The error names the document's URL.
    pub(crate) async fn discovery(&self, i: usize) -> Result<Discovery, String> {
        let mut cached = self.keys[i].discovery.lock().await;
        match &*cached {
            Some((at, Ok(d))) if at.elapsed() < DISCOVERY_FRESH => return Ok(d.clone()),
            Some((at, Err(e))) if at.elapsed() < REFRESH_EVERY => return Err(e.clone()),
            _ => {}
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.issuers[i].issuer.trim_end_matches('/')
        );
        let got = self
            .get_json::<Discovery>(&url)
            .await
            .map_err(|e| format!("{url}: {e}"));
        *cached = Some((Instant::now(), got.clone()));
        got
    }

    /// `url`'s JSON answer; the error as text, for a message naming the issuer.
    pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let resp = self.http.get(url).send().await.map_err(|e| e.to_string())?;
        let resp = resp.error_for_status().map_err(|e| e.to_string())?;
        resp.json().await.map_err(|e| e.to_string())
    }
}

/// Claim `name` of `claims`: a top-level claim of that name, else a dotted path into nested
/// objects (`realm_access.roles`).
fn claim<'a>(claims: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    claims
        .get(name)
        .or_else(|| name.split('.').try_fold(claims, |v, part| v.get(part)))
}

/// The strings of an array claim (a single string counts as one).
fn strings(v: Option<&serde_json::Value>) -> impl Iterator<Item = &str> {
    let (one, many) = match v {
        Some(serde_json::Value::String(s)) => (Some(s.as_str()), None),
        Some(serde_json::Value::Array(a)) => (None, Some(a.iter().filter_map(|g| g.as_str()))),
        _ => (None, None),
    };
    one.into_iter().chain(many.into_iter().flatten())
}

/// The `iss` claim of a JWT, read before verification only to choose the keys.
pub(crate) fn unverified_issuer(token: &str) -> Result<String, Error> {
    let payload = token
        .split('.')
        .nth(1)
        .ok_or_else(|| unauthenticated("malformed bearer token"))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| unauthenticated("malformed token payload"))?;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|_| unauthenticated("malformed token payload"))?;
    v.get("iss")
        .and_then(|i| i.as_str())
        .map(str::to_owned)
        .ok_or_else(|| unauthenticated("token has no issuer"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_by_name_or_dotted_path() {
        let c = json!({
            "realm_access": {"roles": ["weft-user", "weft-admin"]},
            "https://example.org/roles": ["a"],
            "groups": "physics",
            "odd": [1, "x"]
        });
        let all = |name: &str| strings(claim(&c, name)).collect::<Vec<_>>();
        assert_eq!(all("realm_access.roles"), ["weft-user", "weft-admin"]);
        assert_eq!(all("https://example.org/roles"), ["a"]);
        assert_eq!(all("groups"), ["physics"]);
        assert_eq!(all("odd"), ["x"]);
        assert!(all("realm_access").is_empty());
        assert!(all("realm_access.nothing").is_empty());
        assert!(all("missing").is_empty());
    }
}
