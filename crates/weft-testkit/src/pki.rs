//! A test CA and a server certificate it signed for 127.0.0.1 and localhost, as PEM files:
//! for the servers the tests start with TLS (zones, MinIO, stand-ins) and the clients that
//! must trust them only through this CA.

use std::path::{Path, PathBuf};

pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// Files: `ca.pem`, `server.pem`, `server.key`, and `other.key` (a key that belongs to
    /// no certificate here).
    pub fn new() -> Pki {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
            KeyUsagePurpose,
        };
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("valid parameters");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "weft test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().expect("a key");
        let ca_cert = ca.self_signed(&ca_key).expect("a CA certificate");
        let issuer = Issuer::new(ca, ca_key);

        let mut server = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("valid parameters");
        server
            .distinguished_name
            .push(DnType::CommonName, "weft test server");
        server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate().expect("a key");
        let server_cert = server
            .signed_by(&server_key, &issuer)
            .expect("a server certificate");

        let write = |name: &str, pem: String| {
            std::fs::write(dir.path().join(name), pem).unwrap_or_else(|e| panic!("writing {name}: {e}"))
        };
        write("ca.pem", ca_cert.pem());
        write("server.pem", server_cert.pem());
        write("server.key", server_key.serialize_pem());
        write("other.key", KeyPair::generate().expect("a key").serialize_pem());
        Pki { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn ca(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// A client trusting this CA besides the system roots.
    pub fn client(&self) -> reqwest::Client {
        let pem = std::fs::read(self.ca()).expect("the CA file");
        reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("a PEM certificate"))
            .build()
            .expect("a client")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Default for Pki {
    fn default() -> Self {
        Pki::new()
    }
}
