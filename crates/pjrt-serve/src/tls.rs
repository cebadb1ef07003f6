//! HTTPS and gRPC over TLS (feature `tls`): a certificate chain and its key in PEM, served with
//! rustls (the ring provider; TLS 1.2 and 1.3, ALPN `h2` and `http/1.1`).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::ServeError;

/// A server certificate chain and its private key, checked when made.
///
/// ```
/// let key = rcgen::KeyPair::generate().unwrap();
/// let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap().self_signed(&key).unwrap();
/// let tls = pjrt_serve::TlsConfig::from_pem(cert.pem(), key.serialize_pem()).unwrap();
/// assert!(pjrt_serve::TlsConfig::from_pem(cert.pem(), "not a key").is_err());
/// # let _ = tls;
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    cert_pem: Vec<u8>,
    server: Arc<rustls::ServerConfig>,
}

fn bad(message: String) -> ServeError {
    ServeError::load(String::new(), message)
}

impl TlsConfig {
    /// From PEM text: the certificate chain (leaf first) and the private key (PKCS#8, PKCS#1 or
    /// SEC1).
    pub fn from_pem(cert_chain: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Result<TlsConfig, ServeError> {
        let (cert_pem, key_pem) = (cert_chain.into(), key.into());
        let certs = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("the TLS certificate chain is not PEM certificates: {e}")))?;
        if certs.is_empty() {
            return Err(bad("the TLS certificate file holds no certificate (-----BEGIN CERTIFICATE-----)".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|e| bad(format!("the TLS key is not a PEM private key: {e}")))?;
        let mut server =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| bad(format!("TLS: {e}")))?
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .map_err(|e| bad(format!("the TLS certificate and key do not go together: {e}")))?;
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(TlsConfig { cert_pem, server: Arc::new(server) })
    }

    /// From PEM files.
    pub fn from_pem_files(cert_chain: &Path, key: &Path) -> Result<TlsConfig, ServeError> {
        let read = |p: &Path| std::fs::read(p).map_err(|e| bad(format!("{}: {e}", p.display())));
        TlsConfig::from_pem(read(cert_chain)?, read(key)?)
    }

    /// The rustls configuration both ports serve with.
    pub(crate) fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.server.clone()
    }
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TlsConfig").field("cert_pem_bytes", &self.cert_pem.len()).finish_non_exhaustive()
    }
}
