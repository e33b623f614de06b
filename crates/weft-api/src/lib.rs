//! REST API v1 of a zone: the axum router, authentication (API tokens, OIDC JWT), the
//! OpenAPI document and the mapping of domain errors onto HTTP; and the web interface
//! (`web/`), served by the same router at `/`.

mod auth;
mod convert;
mod drain;
mod error;
mod extract;
mod frames;
mod metrics;
mod oidc;
mod peer_traffic;
mod proxy;
mod requests;
pub mod routes;
pub mod s3;
pub mod tls;
mod web;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::{Json, Router};
use std::sync::Arc;
use utoipa::OpenApi;
use weft_types::wire::Health;
use weft_types::ErrorCode;
use weft_zone::Zone;

pub use error::ApiError;

/// The parsers of requests this crate holds, for the fuzz targets (`fuzz/` at the
/// workspace root) and property tests. Not an API: nothing else calls them.
#[doc(hidden)]
pub mod parsers {
    use bytes::Bytes;
    use weft_types::wire::BundleHeader;
    use weft_types::Error;

    /// A `Range` header value against an object of `size` bytes.
    pub fn range(value: &[u8], size: u64) -> Result<std::ops::Range<u64>, Error> {
        crate::routes::data::parse_range(value, size)
    }

    /// A bundle body, arrived as `frames`, cut into its header and the files' bytes.
    pub fn bundle(frames: Vec<Bytes>) -> Result<(BundleHeader, Vec<Bytes>), Error> {
        crate::routes::data::split_bundle(crate::frames::Frames::from(frames))
    }

    /// The token of an `Authorization` header value.
    pub fn bearer_token(value: &[u8]) -> Result<&str, Error> {
        crate::auth::bearer_token(value).map_err(|e| e.0)
    }

    /// The issuer of a JWT, read unverified (to choose an OIDC issuer's keys).
    pub fn unverified_issuer(token: &str) -> Result<String, Error> {
        crate::oidc::unverified_issuer(token)
    }
}
pub use oidc::{OidcIssuer, OidcVerifier};

/// What every handler sees.
pub struct AppState {
    pub zone: Arc<Zone>,
    pub oidc: OidcVerifier,
    /// The zone is served over HTTPS: the session cookie is `Secure`.
    pub https: bool,
}

/// Marks an answer whose body this zone does not vouch for (a stored object, a peer's
/// answer), served on a host where the web session's cookie lives (cookies ignore ports):
/// no browser sniffs it into another type than the one declared, and one shown as a page
/// runs in an opaque origin with no script (`sandbox`), so it can neither read nor plant
/// this host's cookies.
pub(crate) fn sandboxed(h: &mut http::HeaderMap) {
    h.insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        http::HeaderValue::from_static("nosniff"),
    );
    h.insert(
        http::header::CONTENT_SECURITY_POLICY,
        http::HeaderValue::from_static("sandbox"),
    );
}

/// The whole API and the web interface as one router, served over plain HTTP.
pub fn router(zone: Arc<Zone>, issuers: Vec<OidcIssuer>) -> Router {
    router_over(zone, issuers, false)
}

/// [`router`], saying whether it is served over HTTPS.
pub fn router_over(zone: Arc<Zone>, issuers: Vec<OidcIssuer>, https: bool) -> Router {
    let state = Arc::new(AppState {
        oidc: OidcVerifier::new(issuers, zone.trusted_cas()),
        zone,
        https,
    });
    let (api, openapi) = routes::router().split_for_parts();
    api.layer(axum::Extension(OpenApiJson::of(&openapi)))
        .merge(web::router())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            proxy::relay_remote,
        ))
        .fallback(no_route)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            peer_traffic::count,
        ))
        .layer(axum::middleware::from_fn(drain::unread_bodies))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            requests::observe,
        ))
        .with_state(state)
}

/// `listener`'s connections with TCP_NODELAY, for `axum::serve`. A small answer goes out
/// as a head and a body; Nagle's algorithm holds the body back until the client
/// acknowledges the head, which Linux delays by up to 40 ms: a small get would take that long.
pub fn no_delay(listener: tokio::net::TcpListener) -> NoDelay {
    NoDelay(listener)
}

/// The listener [`no_delay`] makes.
pub struct NoDelay(tokio::net::TcpListener);

impl axum::serve::Listener for NoDelay {
    type Io = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (tcp, addr) = axum::serve::Listener::accept(&mut self.0).await;
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on a connection");
        }
        (tcp, addr)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// The address a connection comes from, for any of the zone's listeners (plain or TLS):
/// serve the router with `into_make_service_with_connect_info::<PeerAddr>()` and the audit
/// log records where each change came from.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub std::net::SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, NoDelay>> for PeerAddr {
    fn connect_info(stream: axum::serve::IncomingStream<'_, NoDelay>) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tls::TlsListener>> for PeerAddr {
    fn connect_info(stream: axum::serve::IncomingStream<'_, tls::TlsListener>) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}

async fn no_route(uri: http::Uri) -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        format!("no route {} in API v1; see /api/v1/openapi.json", uri.path()),
    )
}

#[utoipa::path(get, path = "/api/v1/health", tag = "zone", responses((status = 200, body = Health)))]
pub async fn health(State(s): State<Arc<AppState>>) -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        zone: s.zone.name().to_string(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

#[utoipa::path(get, path = "/api/v1/zone", tag = "zone", responses((status = 200, body = weft_types::wire::ZoneStatus)))]
pub async fn zone_status(
    State(s): State<Arc<AppState>>,
    _c: auth::Authed,
) -> Json<weft_types::wire::ZoneStatus> {
    let workers = s
        .zone
        .workers()
        .into_iter()
        .map(|w| weft_types::wire::WorkerWire {
            name: w.name.to_owned(),
            state: w.phase.as_str().to_owned(),
            runs: w.runs,
            items: w.items,
            last_run: w.last_run,
            last_error: w.last_error,
        })
        .collect();
    Json(weft_types::wire::ZoneStatus {
        zone: s.zone.name().to_string(),
        version: env!("CARGO_PKG_VERSION").into(),
        workers,
    })
}

/// The OpenAPI document of the router's routes ([`routes::router`]), serialized once.
#[derive(Clone)]
struct OpenApiJson(bytes::Bytes);

impl OpenApiJson {
    fn of(doc: &utoipa::openapi::OpenApi) -> Self {
        OpenApiJson(
            serde_json::to_vec(doc)
                .expect("an OpenAPI document serializes")
                .into(),
        )
    }
}

#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "zone", responses((status = 200, description = "this document")))]
async fn openapi_json(axum::Extension(doc): axum::Extension<OpenApiJson>) -> impl IntoResponse {
    ([(http::header::CONTENT_TYPE, "application/json")], doc.0)
}

/// What the OpenAPI document says besides its paths (and the schemas they name), which
/// [`routes::router`] adds, each with its route.
#[derive(OpenApi)]
#[openapi(info(
    title = "weft zone API",
    version = "1",
    description = "Namespace, data, metadata, principals, ACLs and resources of a weft zone. Authenticate with `Authorization: Bearer <token>` (a zone API token or an OIDC access token)."
))]
pub struct ApiDoc;

#[cfg(test)]
mod tests {
    use axum::serve::Listener;

    #[tokio::test]
    async fn connections_are_accepted_without_nagle() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = super::no_delay(listener);
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await;
        assert!(server.nodelay().unwrap());
    }
}
