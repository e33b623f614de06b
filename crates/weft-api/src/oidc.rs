//! Bearer access tokens (JWT) from configured OpenID Connect issuers such as Keycloak:
//! signature checked against the issuer's JWKS, then issuer, audience and expiry. Tokens
//! of any length are accepted (Keycloak tokens run past the 1,024 bytes that broke iRODS).

use base64::Engine as _;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::sync::RwLock;
use weft_types::{Error, ErrorCode};

/// One trusted issuer, as configured.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcIssuer {
    /// The `iss` claim, e.g. `https://keycloak.example/realms/weft`.
    pub issuer: String,
    /// The value the `aud` claim must contain.
    pub audience: String,
    /// Claim holding the user name.
    #[serde(default = "default_user_claim")]
    pub user_claim: String,
    /// Claim holding group names (an array of strings).
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// Where the keys are; default: from the issuer's discovery document.
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Clock skew tolerated on `exp`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_seconds: u64,
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

/// Who a verified token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcIdentity {
    pub user: String,
    pub groups: Vec<String>,
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

struct Keys {
    by_kid: HashMap<String, DecodingKey>,
    fetched: Option<Instant>,
}

pub struct OidcVerifier {
    issuers: Vec<OidcIssuer>,
    keys: Vec<RwLock<Keys>>,
    http: reqwest::Client,
}

fn unauthenticated(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::Unauthenticated, msg)
}

impl OidcVerifier {
    /// `cas`: trusted besides the system roots in the issuers' certificates.
    pub fn new(issuers: Vec<OidcIssuer>, cas: &weft_client::TrustedCas) -> Self {
        let keys = issuers
            .iter()
            .map(|_| {
                RwLock::new(Keys {
                    by_kid: HashMap::new(),
                    fetched: None,
                })
            })
            .collect();
        let http = cas
            .apply(reqwest::Client::builder())
            .timeout(Duration::from_secs(10))
            .build()
            .expect("http client");
        OidcVerifier { issuers, keys, http }
    }

    pub fn is_empty(&self) -> bool {
        self.issuers.is_empty()
    }

    pub async fn verify(&self, token: &str) -> Result<OidcIdentity, Error> {
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
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
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
        let user = claims
            .get(&config.user_claim)
            .and_then(|v| v.as_str())
            .ok_or_else(|| unauthenticated(format!("token has no {:?} claim", config.user_claim)))?
            .to_owned();
        let groups = claims
            .get(&config.groups_claim)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|g| g.as_str())
                    .map(|g| g.trim_start_matches('/').to_owned())
                    .collect()
            })
            .unwrap_or_default();
        Ok(OidcIdentity { user, groups })
    }

    async fn key(&self, i: usize, kid: &str) -> Result<DecodingKey, Error> {
        if let Some(k) = self.keys[i].read().await.by_kid.get(kid) {
            return Ok(k.clone());
        }
        let mut keys = self.keys[i].write().await;
        if !keys.by_kid.contains_key(kid) && keys.fetched.is_none_or(|t| t.elapsed() >= REFRESH_EVERY) {
            keys.by_kid = self.fetch_keys(&self.issuers[i]).await?;
            keys.fetched = Some(Instant::now());
        }
        keys.by_kid
            .get(kid)
            .cloned()
            .ok_or_else(|| unauthenticated(format!("no key {kid:?} in the issuer's JWKS")))
    }

    async fn fetch_keys(&self, config: &OidcIssuer) -> Result<HashMap<String, DecodingKey>, Error> {
        let unavailable = |e: String| {
            Error::new(
                ErrorCode::StorageUnavailable,
                format!("cannot fetch the keys of issuer {}: {e}", config.issuer),
            )
        };
        let jwks_uri = match &config.jwks_uri {
            Some(u) => u.clone(),
            None => {
                #[derive(Deserialize)]
                struct Discovery {
                    jwks_uri: String,
                }
                let url = format!(
                    "{}/.well-known/openid-configuration",
                    config.issuer.trim_end_matches('/')
                );
                let d: Discovery = self.get_json(&url).await.map_err(unavailable)?;
                d.jwks_uri
            }
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

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let resp = self.http.get(url).send().await.map_err(|e| e.to_string())?;
        let resp = resp.error_for_status().map_err(|e| e.to_string())?;
        resp.json().await.map_err(|e| e.to_string())
    }
}

fn unverified_issuer(token: &str) -> Result<String, Error> {
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
