//! The connection to one zone: its URL (or the URLs of its several servers, failed over
//! between), the bearer token, and the request/answer plumbing every route method shares.

use crate::error::ClientError;
use crate::tls::TrustedCas;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::{Method, RequestBuilder, Response};
use serde::de::DeserializeOwned;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weft_types::LogicalPath;

/// Everything but RFC 3986 unreserved characters is escaped in a path segment, so that
/// names with `%`, `?`, `#` or spaces reach the zone as they are.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The prefix of every route of REST API v1.
pub const API_PREFIX: &str = "/api/v1";

/// A typed client of one zone. Cheap to clone: clones share one connection pool, so
/// parallel streams reuse kept-alive connections.
///
/// A zone of several servers is given as several URLs, comma-separated: requests go to
/// one of them, and move on to the next when a connection cannot be made or the server
/// answers 503 (shutting down, overloaded), for this request if its body can be sent again
/// and for every request after it. Clones share where they are.
#[derive(Clone)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    /// What the user gave, normalised: `http://host:port` each (also for messages).
    endpoints: Arc<[Arc<str>]>,
    /// The index of the endpoint in use.
    current: Arc<AtomicUsize>,
    token: Option<Arc<str>>,
    /// For [`Client::unpooled`].
    cas: TrustedCas,
}

impl std::fmt::Debug for Client {
    // By hand, so that the token never ends up in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoints", &self.endpoints)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

fn http_client(cas: &TrustedCas) -> Result<reqwest::Client, ClientError> {
    cas.apply(reqwest::Client::builder())
        .user_agent(concat!("weft/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        // No overall timeout: a large piece on a slow link legitimately takes long. A
        // stalled connection is caught by the read timeout instead; it is generous because
        // completing an upload fsyncs the whole object before answering.
        .read_timeout(Duration::from_secs(300))
        .tcp_nodelay(true)
        .build()
        .map_err(|e| ClientError::Invalid(format!("cannot build HTTP client: {e}")))
}

impl Client {
    /// `base_url` is the zone's address (`https://host:port` or `http://host:port`, with or
    /// without `/api/v1`), or the addresses of its servers separated by commas; `token` is
    /// sent as a bearer token on every request. Over HTTPS the zone's certificate must
    /// chain to a system root.
    pub fn new(base_url: &str, token: Option<String>) -> Result<Client, ClientError> {
        Client::with_cas(base_url, token, &TrustedCas::default())
    }

    /// As [`Client::new`], trusting the certificates of `cas` as well as the system roots
    /// (a zone whose certificate a private CA signed).
    pub fn with_cas(base_url: &str, token: Option<String>, cas: &TrustedCas) -> Result<Client, ClientError> {
        let endpoints = base_url
            .split(',')
            .map(|u| normalise_base_url(u).map(Arc::from))
            .collect::<Result<Arc<[Arc<str>]>, _>>()?;
        let http = http_client(cas)?;
        let token = token
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .map(Arc::from);
        Ok(Client {
            http,
            endpoints,
            current: Arc::new(AtomicUsize::new(0)),
            token,
            cas: cas.clone(),
        })
    }

    /// The same zone and token over connections of its own. A piece retried after its
    /// connection broke goes this way: a pooled sibling went through the same proxy or
    /// middlebox, may be as close to its cut, and would break the retry too.
    pub fn unpooled(&self) -> Client {
        match http_client(&self.cas) {
            Ok(http) => Client { http, ..self.clone() },
            // Built once already with the same settings; should it fail now, the pool will do.
            Err(_) => self.clone(),
        }
    }

    /// The same connection pool with another bearer token (zones mint one per request
    /// towards their peers).
    pub fn with_token(&self, token: &str) -> Client {
        Client {
            token: Some(Arc::from(token)),
            ..self.clone()
        }
    }

    /// The address requests go to now, as normalised (`https://host:port`).
    pub fn zone_url(&self) -> &str {
        &self.endpoints[self.current.load(Ordering::Relaxed) % self.endpoints.len()]
    }

    /// Every address of the zone, normalised, comma-separated (as [`Client::new`] takes them).
    pub fn zone_urls(&self) -> String {
        self.endpoints.join(",")
    }

    /// Whether requests would cross a network in clear: plain `http://` to a host that is
    /// not loopback (127.0.0.0/8, ::1, `localhost`), for any of the zone's addresses.
    pub fn is_cleartext_remote(&self) -> bool {
        self.endpoints.iter().any(|u| is_cleartext_remote(u))
    }

    /// The endpoint after `failed` becomes the one in use (unless another request moved on
    /// already); the one in use now.
    fn move_on(&self, failed: usize) -> usize {
        let next = (failed + 1) % self.endpoints.len();
        match self
            .current
            .compare_exchange(failed, next, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => next,
            Err(now) => now,
        }
    }

    /// The endpoint `url` was built on.
    fn endpoint_of(&self, url: &reqwest::Url) -> Option<usize> {
        self.endpoints.iter().position(|e| url.as_str().starts_with(&**e))
    }
}

fn is_cleartext_remote(zone_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(zone_url) else {
        return true;
    };
    if url.scheme() != "http" {
        return false;
    }
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => !ip.is_loopback(),
        Err(_) => !host.eq_ignore_ascii_case("localhost"),
    }
}

impl Client {
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// `/api/v1` + `route`, for routes without a path parameter.
    pub(crate) fn url(&self, route: &str) -> String {
        format!("{}{API_PREFIX}{route}", self.zone_url())
    }

    /// `/api/v1/{route}/{*path}`: the logical path without its leading slash, each
    /// component percent-encoded.
    pub(crate) fn path_url(&self, route: &str, path: &LogicalPath) -> String {
        format!("{}{API_PREFIX}/{route}/{}", self.zone_url(), encode_path(path))
    }

    /// `/api/v1/{route}/{name}` for one name (user, group, resource, upload id).
    pub(crate) fn name_url(&self, route: &str, name: &str) -> String {
        format!("{}{API_PREFIX}/{route}/{}", self.zone_url(), encode_segment(name))
    }

    pub(crate) fn request(&self, method: Method, url: String) -> RequestBuilder {
        let mut req = self.http.request(method, url);
        if let Some(id) = crate::request_id::current() {
            req = req.header(crate::request_id::REQUEST_ID_HEADER, &*id);
        }
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// Sends a request as it is (`path_and_query` starts with `/api/v1/`) and returns the
    /// answer whatever its status: for zones relaying their users' requests to a peer.
    /// Only end-to-end headers are passed on; the bearer token is this client's.
    pub async fn forward(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &reqwest::header::HeaderMap,
        body: reqwest::Body,
    ) -> Result<Response, ClientError> {
        let mut req = self.request(method, format!("{}{path_and_query}", self.zone_url()));
        for (name, value) in headers {
            // The request's id goes along as this zone's own (`request`).
            if !is_hop_by_hop(name)
                && name != reqwest::header::AUTHORIZATION
                && name != reqwest::header::HOST
                && name.as_str() != crate::request_id::REQUEST_ID_HEADER
            {
                req = req.header(name, value);
            }
        }
        self.execute(req.body(body)).await
    }

    /// Sends `req`. With several endpoints, a connection that cannot be made or a 503
    /// moves the client on to the next endpoint, and the request is sent there again if its
    /// body can be (it is in memory); otherwise the caller's retry goes there.
    async fn execute(&self, req: RequestBuilder) -> Result<Response, ClientError> {
        let mut request = req.build().map_err(|e| self.transport(e))?;
        let mut left = self.endpoints.len() - 1;
        loop {
            let again = (left > 0).then(|| request.try_clone()).flatten();
            let used = self.endpoint_of(request.url());
            let outcome = self.http.execute(request).await;
            let unavailable = match &outcome {
                Err(e) => e.is_connect(),
                Ok(r) => r.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE,
            };
            let (Some(used), true) = (used, unavailable && self.endpoints.len() > 1) else {
                return outcome.map_err(|e| self.transport(e));
            };
            let next = self.move_on(used);
            let Some(mut retry) = again else {
                return outcome.map_err(|e| self.transport(e));
            };
            let rebased = retry
                .url()
                .as_str()
                .replacen(&*self.endpoints[used], &self.endpoints[next], 1);
            *retry.url_mut() =
                reqwest::Url::parse(&rebased).map_err(|e| ClientError::Invalid(format!("{rebased}: {e}")))?;
            tracing::warn!(from = %self.endpoints[used], to = %self.endpoints[next], "zone server unavailable; trying the next");
            request = retry;
            left -= 1;
        }
    }

    /// Sends and turns every non-2xx answer into `ClientError::Api`.
    pub(crate) async fn send(&self, req: RequestBuilder) -> Result<Response, ClientError> {
        let resp = self.execute(req).await?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status().as_u16();
        // An unreadable error body still leaves the status to go by.
        let body = resp.bytes().await.unwrap_or_default();
        Err(ClientError::from_answer(status, &body))
    }

    pub(crate) async fn json<T: DeserializeOwned>(&self, req: RequestBuilder) -> Result<T, ClientError> {
        let resp = self.send(req).await?;
        let url = resp.url().path().to_owned();
        let body = resp.bytes().await.map_err(|e| self.transport(e))?;
        serde_json::from_slice(&body).map_err(|e| ClientError::Protocol(format!("{url}: {e}")))
    }

    /// For routes answering 204: the body is ignored.
    pub(crate) async fn empty(&self, req: RequestBuilder) -> Result<(), ClientError> {
        self.send(req).await.map(drop)
    }

    pub(crate) fn transport(&self, e: reqwest::Error) -> ClientError {
        ClientError::from_reqwest(self.zone_url(), e)
    }
}

pub(crate) fn encode_segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

pub(crate) fn encode_path(path: &LogicalPath) -> String {
    path.as_str()[1..]
        .split('/')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// Accepts `host:port`-style mistakes early with a clear message rather than an obscure
/// transport error later.
fn normalise_base_url(base: &str) -> Result<String, ClientError> {
    let trimmed = base.trim().trim_end_matches('/');
    let trimmed = trimmed.strip_suffix(API_PREFIX).unwrap_or(trimmed);
    let url = reqwest::Url::parse(trimmed).map_err(|e| {
        ClientError::Invalid(format!(
            "zone URL {base:?} is not a URL ({e}); write it as https://host:port"
        ))
    })?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(ClientError::Invalid(format!(
                "zone URL {base:?} has scheme {other:?}; write it as https://host:port"
            )))
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ClientError::Invalid(format!("zone URL {base:?} has no host")));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ClientError::Invalid(format!(
            "zone URL {base:?} must not have a query or fragment"
        )));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1); a relay drops
/// them.
pub fn is_hop_by_hop(name: &reqwest::header::HeaderName) -> bool {
    use reqwest::header::*;
    name == CONNECTION
        || name == TRANSFER_ENCODING
        || name == TE
        || name == UPGRADE
        || name == PROXY_AUTHORIZATION
        || name == PROXY_AUTHENTICATE
        || name == TRAILER
        || name.as_str() == "keep-alive"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        let c = Client::new("http://127.0.0.1:8080/", None).unwrap();
        assert_eq!(c.zone_url(), "http://127.0.0.1:8080");
        assert_eq!(c.url("/whoami"), "http://127.0.0.1:8080/api/v1/whoami");
        let c = Client::new("http://zone.example:1/api/v1", Some(String::new())).unwrap();
        assert_eq!(c.zone_url(), "http://zone.example:1");
        assert!(!c.has_token());
        let c = Client::new("http://h/prefix/", Some("t".into())).unwrap();
        assert_eq!(c.url("/health"), "http://h/prefix/api/v1/health");
        assert!(c.has_token());
        let c = Client::new("https://zone.example:8640/", None).unwrap();
        assert_eq!(c.zone_url(), "https://zone.example:8640");
        for bad in ["localhost:8080", "ftp://h", "", "http://h/?q=1", "https://"] {
            assert!(Client::new(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn cleartext_only_off_loopback() {
        let remote = |u: &str| Client::new(u, None).unwrap().is_cleartext_remote();
        for u in [
            "http://127.0.0.1:8640",
            "http://127.1.2.3",
            "http://[::1]:1",
            "http://localhost:8640",
            "http://LocalHost",
            "https://example.org",
            "https://10.0.0.1:8640",
        ] {
            assert!(!remote(u), "{u}");
        }
        for u in [
            "http://example.org",
            "http://10.0.0.1:8640",
            "http://[2001:db8::1]",
            "http://localhost.example.org",
            "http://128.0.0.1",
        ] {
            assert!(remote(u), "{u}");
        }
    }

    #[test]
    fn ca_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.pem");
        let e = TrustedCas::from_pem_file(&missing).unwrap_err();
        assert!(e.to_string().contains("none.pem"), "{e}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let e = TrustedCas::from_pem_file(&empty).unwrap_err();
        assert!(e.to_string().contains("empty.pem"), "{e}");
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
    }

    #[test]
    fn paths_are_encoded_per_component() {
        let c = Client::new("http://h:1", None).unwrap();
        let p = LogicalPath::parse("/z/home/a b/x%y?#/ä.nc").unwrap();
        assert_eq!(
            c.path_url("data", &p),
            "http://h:1/api/v1/data/z/home/a%20b/x%25y%3F%23/%C3%A4.nc"
        );
        assert_eq!(c.name_url("users", "al ice"), "http://h:1/api/v1/users/al%20ice");
        // reqwest must not re-encode or decode what was encoded.
        let u = reqwest::Url::parse(&c.path_url("data", &p)).unwrap();
        assert_eq!(u.path(), "/api/v1/data/z/home/a%20b/x%25y%3F%23/%C3%A4.nc");
    }

    #[test]
    fn debug_hides_the_token() {
        let c = Client::new("http://h:1", Some("secret-token".into())).unwrap();
        assert!(!format!("{c:?}").contains("secret"));
    }

    /// A server that answers every request on one connection with `status` and a health
    /// body; how many requests it got.
    fn answering(status: u16) -> (u16, Arc<AtomicUsize>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let mut s = conn.unwrap();
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                counted.fetch_add(1, Ordering::SeqCst);
                let body = r#"{"status":"ok","zone":"z","version":"1"}"#;
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (port, hits)
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    /// Several URLs: a server that cannot be reached or answers 503 is passed over, for
    /// that request and the ones after it.
    #[tokio::test]
    async fn several_urls_fail_over() {
        let dead = free_port();
        let (busy, busy_hits) = answering(503);
        let (good, good_hits) = answering(200);
        let urls =
            format!("http://127.0.0.1:{dead}, http://127.0.0.1:{busy}/,http://127.0.0.1:{good}/api/v1");
        let c = Client::new(&urls, None).unwrap();
        assert_eq!(
            c.zone_urls(),
            format!("http://127.0.0.1:{dead},http://127.0.0.1:{busy},http://127.0.0.1:{good}")
        );
        c.health().await.unwrap();
        assert_eq!(c.zone_url(), format!("http://127.0.0.1:{good}"));
        assert_eq!(
            (busy_hits.load(Ordering::SeqCst), good_hits.load(Ordering::SeqCst)),
            (1, 1)
        );
        // The next request goes straight to the one that answered; clones share it.
        c.clone().health().await.unwrap();
        assert_eq!(
            (busy_hits.load(Ordering::SeqCst), good_hits.load(Ordering::SeqCst)),
            (1, 2)
        );

        // All unavailable: the last answer is the error, after one try each.
        let (busy2, hits2) = answering(503);
        let c = Client::new(
            &format!("http://127.0.0.1:{},http://127.0.0.1:{busy2}", free_port()),
            None,
        )
        .unwrap();
        let e = c.health().await.unwrap_err();
        assert_eq!((e.status(), hits2.load(Ordering::SeqCst)), (Some(503), 1));
        for bad in ["http://h:1,", "http://h:1,ftp://h"] {
            assert!(Client::new(bad, None).is_err(), "{bad}");
        }
        assert!(Client::new("https://a.example,http://b.example", None)
            .unwrap()
            .is_cleartext_remote());
    }

    #[tokio::test]
    async fn unreachable_zone_is_named() {
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = Client::new(&format!("http://127.0.0.1:{port}"), None).unwrap();
        let e = c.health().await.unwrap_err();
        assert_eq!(e.code(), "unreachable");
        assert_eq!(
            e.to_string(),
            format!(
                "cannot reach zone at http://127.0.0.1:{port}: connection refused — is `weft serve` running?"
            )
        );
        assert!(e.is_temporary());
    }
}
