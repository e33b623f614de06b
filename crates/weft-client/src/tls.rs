//! Which servers a client trusts over HTTPS: the system's roots always, plus the
//! certificates of a CA file (PEM) for zones and issuers whose certificates a private CA
//! signed.

use crate::error::ClientError;
use std::path::{Path, PathBuf};

/// Certificates trusted besides the system roots. Cheap to clone; the default adds none.
#[derive(Clone, Default)]
pub struct TrustedCas {
    certs: Vec<reqwest::Certificate>,
    /// Where they came from (for messages).
    source: Option<PathBuf>,
}

impl std::fmt::Debug for TrustedCas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustedCas")
            .field("certs", &self.certs.len())
            .field("source", &self.source)
            .finish()
    }
}

impl TrustedCas {
    /// Every certificate of the PEM file `path`. Errors name the file: it cannot be read, or
    /// it holds no certificate.
    pub fn from_pem_file(path: &Path) -> Result<TrustedCas, ClientError> {
        let pem = std::fs::read(path)
            .map_err(|e| ClientError::Invalid(format!("cannot read CA file {}: {e}", path.display())))?;
        let mut cas = TrustedCas::from_pem(&pem)
            .map_err(|e| ClientError::Invalid(format!("CA file {}: {e}", path.display())))?;
        cas.source = Some(path.to_owned());
        Ok(cas)
    }

    /// Every certificate of a PEM bundle (at least one).
    pub fn from_pem(pem: &[u8]) -> Result<TrustedCas, ClientError> {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| ClientError::Invalid(format!("not a PEM certificate bundle: {e}")))?;
        if certs.is_empty() {
            return Err(ClientError::Invalid(
                "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
            ));
        }
        Ok(TrustedCas { certs, source: None })
    }

    pub fn is_empty(&self) -> bool {
        self.certs.is_empty()
    }

    /// The file the certificates were read from, if any.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// `builder` trusting these certificates as well as the system roots: for other HTTP
    /// clients of a zone (an OIDC issuer's keys).
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        self.certs
            .iter()
            .fold(builder, |b, c| b.add_root_certificate(c.clone()))
    }
}
