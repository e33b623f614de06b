//! Who an S3 request acts as. s3s verifies the signature with the secret [`Keys`] gives
//! for the access key; [`Access`] then turns the key (or its absence) into the zone's
//! `Caller`, which every operation reads back from the request's extensions.

use s3s::access::{S3Access, S3AccessContext};
use s3s::auth::{S3Auth, SecretKey};
use s3s::{s3_error, S3Request, S3Result};
use std::sync::Arc;
use weft_zone::{Caller, Zone};

/// The longest a presigned URL may stay valid, as on AWS (s3s checks the expiry itself,
/// but takes any `X-Amz-Expires`).
const PRESIGN_MAX_SECS: u64 = 7 * 24 * 3600;

pub(super) struct Keys {
    pub zone: Arc<Zone>,
}

#[async_trait::async_trait]
impl S3Auth for Keys {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        match self.zone.s3().key_caller(access_key).await {
            Ok(Some((secret, _))) => Ok(SecretKey::from(secret)),
            Ok(None) => Err(s3_error!(
                InvalidAccessKeyId,
                "the access key is not known to this zone; create one with `weft s3 key create`"
            )),
            Err(e) => Err(super::errors::from_weft(e)),
        }
    }
}

pub(super) struct Access {
    pub zone: Arc<Zone>,
}

#[async_trait::async_trait]
impl S3Access for Access {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        refuse_unsupported(cx)?;
        let caller = match cx.credentials() {
            Some(c) => {
                let found = self
                    .zone
                    .s3()
                    .key_caller(&c.access_key)
                    .await
                    .map_err(super::errors::from_weft)?;
                found.ok_or_else(|| s3_error!(InvalidAccessKeyId))?.1
            }
            None => {
                // Unsigned requests may only read; what they read is what ACLs grant the
                // group `anonymous` (a public-read bucket).
                if !is_read(cx.s3_op().name()) {
                    return Err(s3_error!(
                        AccessDenied,
                        "anonymous requests may only read; sign the request with an access key"
                    ));
                }
                self.zone
                    .s3()
                    .anonymous_caller()
                    .await
                    .map_err(super::errors::from_weft)?
            }
        };
        // The changes this request makes are audited as this caller's.
        weft_zone::access::act_as(caller.name.as_str());
        cx.extensions_mut().insert(caller);
        Ok(())
    }
}

fn is_read(op: &str) -> bool {
    matches!(
        op,
        "GetObject" | "HeadObject" | "ListObjects" | "ListObjectsV2" | "HeadBucket" | "GetBucketLocation"
    )
}

/// The request's query as s3s reads it: form-decoded (`X-Amz-Expire%73` is
/// `X-Amz-Expires`, `+` a space), as s3s's own query parser does. Every rule weft adds to
/// s3s's checks reads these pairs, never the raw query, so that what weft checks is what
/// s3s verifies.
fn query_pairs(uri: &http::Uri) -> Vec<(String, String)> {
    uri.query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

/// What s3s 0.14 would verify but weft does not accept, refused before s3s looks at it:
/// signature version 2 (HMAC-SHA1, deprecated by AWS; s3s compares its signatures in
/// variable time, and answers a request it cannot verify with a misleading
/// SignatureDoesNotMatch) in a header, a presigned URL or a browser form, and POST-object
/// form uploads (s3s gathers the file in memory). s3s takes a query with a `Signature` as
/// version 2 before it looks for version 4, so such a query is refused whatever else it
/// holds.
pub(super) async fn refuse_unverifiable(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let v2_header = req
        .headers()
        .get_all(http::header::AUTHORIZATION)
        .iter()
        .any(|v| v.as_bytes().starts_with(b"AWS "));
    let v2_query = query_pairs(req.uri())
        .iter()
        .any(|(k, _)| k == "Signature" || k == "AWSAccessKeyId");
    let form = req.method() == http::Method::POST
        && req.headers().get_all(http::header::CONTENT_TYPE).iter().any(|v| {
            v.as_bytes()
                .trim_ascii_start()
                .to_ascii_lowercase()
                .starts_with(b"multipart/form-data")
        });
    let (status, code, message) = if v2_header || v2_query {
        (
            http::StatusCode::FORBIDDEN,
            "AccessDenied",
            "signature version 2 is not accepted; sign requests with SigV4 (boto3: \
             Config(signature_version=\"s3v4\"))",
        )
    } else if form {
        (
            http::StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "POST object (browser form uploads) is not supported; use PUT",
        )
    } else {
        return next.run(req).await;
    };
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>"
    );
    axum::response::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/xml")
        .body(axum::body::Body::from(body))
        .expect("a valid response")
}

/// What s3s 0.14 would accept but weft does not: presigned URLs valid for longer than AWS
/// allows. s3s takes any `X-Amz-Expires`; the value it reads is the decoded query's. A
/// POST-object is refused again here, by s3s's own reading of the request, should it ever
/// take for a form upload one that [`refuse_unverifiable`] did not.
fn refuse_unsupported(cx: &S3AccessContext<'_>) -> S3Result<()> {
    for (_, v) in query_pairs(cx.uri()).iter().filter(|(k, _)| k == "X-Amz-Expires") {
        let secs: u64 = v.parse().map_err(|_| {
            s3_error!(
                AuthorizationQueryParametersError,
                "X-Amz-Expires must be a number of seconds"
            )
        })?;
        if secs > PRESIGN_MAX_SECS {
            return Err(s3_error!(
                AuthorizationQueryParametersError,
                "X-Amz-Expires must be at most {PRESIGN_MAX_SECS} seconds (7 days)"
            ));
        }
    }
    if cx.s3_op().name() == "PostObject" {
        return Err(s3_error!(
            NotImplemented,
            "POST object (browser form uploads) is not supported; use PUT"
        ));
    }
    Ok(())
}

/// The caller [`Access`] decided for `req`.
pub(super) fn caller<T>(req: &S3Request<T>) -> S3Result<Caller> {
    req.extensions
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| s3_error!(InternalError, "the request reached an operation without a caller"))
}
