//! HTTPS for `weft serve`: the certificate chain and key from PEM files, and a listener
//! that hands `axum::serve` connections whose TLS handshake is done.
//!
//! Handshakes run on tasks of their own, bounded in time, so a client that connects and
//! says nothing (or plain HTTP sent to the TLS port) holds up nobody else. Only HTTP/1.1 is
//! offered by ALPN: weft's clients move large files on several parallel connections, and
//! HTTP/2 would fold them into one connection behind its flow-control windows.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
pub use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client has to complete its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections through their handshake that wait for `axum::serve` to take them.
const READY_QUEUE: usize = 128;

/// The server configuration for the chain in `cert` (PEM, the server's certificate first)
/// and the private key in `key` (PEM: PKCS#8, PKCS#1 or SEC1). Every error names the file.
pub fn server_config(cert: &Path, key: &Path) -> Result<ServerConfig, String> {
    let cert_pem = std::fs::read(cert)
        .map_err(|e| format!("cannot read TLS certificate file {}: {e}", cert.display()))?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("TLS certificate file {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "TLS certificate file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            cert.display()
        ));
    }
    let key_pem =
        std::fs::read(key).map_err(|e| format!("cannot read TLS key file {}: {e}", key.display()))?;
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        format!(
            "TLS key file {} holds no usable PEM private key (PKCS#8, PKCS#1 or SEC1): {e}",
            key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS settings: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            format!(
                "TLS key file {} does not go with certificate file {}: {e}",
                key.display(),
                cert.display()
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// `listener`'s connections with TCP_NODELAY (as [`crate::no_delay`]) and TLS, for
/// `axum::serve`. Must be called inside a Tokio runtime.
pub fn listener(listener: TcpListener, config: ServerConfig) -> std::io::Result<TlsListener> {
    let local = listener.local_addr()?;
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let (ready, rx) = tokio::sync::mpsc::channel(READY_QUEUE);
    let accepting = tokio::spawn(accept_loop(listener, acceptor, ready));
    Ok(TlsListener { local, rx, accepting })
}

/// Connections that went through their TLS handshake. Dropping it stops accepting.
pub struct TlsListener {
    local: SocketAddr,
    rx: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            // The accepting task ended (it only does when aborted): nothing more comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    ready: tokio::sync::mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (tcp, addr) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors and the like: wait rather than spin.
                tracing::error!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on a connection");
        }
        let acceptor = acceptor.clone();
        let ready = ready.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => {
                    let _ = ready.send((tls, addr)).await;
                }
                Ok(Err(e)) => tracing::debug!(client = %addr, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(client = %addr, "TLS handshake timed out"),
            }
        });
    }
}

/// Errors of one connection, not of the listener (as axum's own accept loop tells them).
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}
