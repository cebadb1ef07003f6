//! TLS settings: the CA bundle that signs the etcd members' certificates, and the client
//! certificate and key for mutual TLS.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use pjrt_client::KvError;
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsProvider};

/// How to check the etcd members and, for mutual TLS, who we are: the CA bundle that signs the
/// members' certificates (only those are trusted; the system's roots are not used) and an
/// optional client certificate with its private key. The members' names are checked against
/// their certificates (the host of each `https://` endpoint: a DNS name or an IP address).
///
/// The private key never appears in `Debug` output or in error messages.
///
/// ```
/// use pjrt_etcd::TlsConfig;
///
/// // A file that does not exist: an error that names it (nothing is read lazily).
/// let err = TlsConfig::from_ca_file("/no/such/ca.pem").unwrap_err();
/// assert!(err.message().contains("/no/such/ca.pem"), "{err}");
/// // PEM without a certificate is refused too.
/// assert!(TlsConfig::from_pem(b"not a certificate", None).is_err());
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    roots: Vec<Certificate<'static>>,
    client: Option<ClientCert>,
    /// Where the CA came from, for error messages ("the CA in FILE").
    ca_source: String,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("ca", &self.ca_source)
            .field("ca_certificates", &self.roots.len())
            .field("client_certificate", &self.client.is_some())
            .finish()
    }
}

impl TlsConfig {
    /// Reads the CA bundle (PEM, one or more certificates) and, for mutual TLS, the client
    /// certificate chain and its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub fn from_pem_files(
        ca_file: impl AsRef<Path>,
        client: Option<(impl AsRef<Path>, impl AsRef<Path>)>,
    ) -> Result<Self, KvError> {
        let ca_file = ca_file.as_ref();
        let read = |path: &Path, what: &str| {
            std::fs::read(path)
                .map_err(|e| KvError::invalid_argument(format!("cannot read the etcd {what} {}: {e}", path.display())))
        };
        let ca = read(ca_file, "CA bundle")?;
        let client_pem = match &client {
            Some((cert, key)) => {
                Some((read(cert.as_ref(), "client certificate")?, read(key.as_ref(), "client key")?, cert.as_ref()))
            }
            None => None,
        };
        let mut config = Self::from_pem(&ca, client_pem.as_ref().map(|(c, k, _)| (&c[..], &k[..]))).map_err(|e| {
            let source = match &client_pem {
                Some((_, _, cert)) => format!("{} / {}", ca_file.display(), cert.display()),
                None => ca_file.display().to_string(),
            };
            KvError::invalid_argument(format!("{} (in {source})", e.message()))
        })?;
        config.ca_source = ca_file.display().to_string();
        Ok(config)
    }

    /// Only a CA bundle (no client certificate): for members without `--client-cert-auth`.
    pub fn from_ca_file(ca_file: impl AsRef<Path>) -> Result<Self, KvError> {
        Self::from_pem_files(ca_file, None::<(&Path, &Path)>)
    }

    /// The same from PEM text in memory: the CA bundle and optionally (certificate chain, key).
    pub fn from_pem(ca_pem: &[u8], client: Option<(&[u8], &[u8])>) -> Result<Self, KvError> {
        let roots: Vec<Certificate<'static>> = certificates(ca_pem, "CA bundle")?;
        let client = match client {
            Some((cert_pem, key_pem)) => {
                let chain = certificates(cert_pem, "client certificate")?;
                let key = PrivateKey::from_pem(key_pem).map_err(|_| {
                    KvError::invalid_argument(
                        "the etcd client key is not a PEM private key (PKCS#8, PKCS#1 or SEC1)".to_string(),
                    )
                })?;
                Some(ClientCert::new_with_certs(&chain, key))
            }
            None => None,
        };
        Ok(Self { roots, client, ca_source: "the CA bundle given".to_string() })
    }

    /// Whether a client certificate is set (mutual TLS).
    pub fn has_client_certificate(&self) -> bool {
        self.client.is_some()
    }

    pub(crate) fn ca_source(&self) -> &str {
        &self.ca_source
    }

    pub(crate) fn to_ureq(&self) -> ureq::tls::TlsConfig {
        ureq::tls::TlsConfig::builder()
            .provider(TlsProvider::Rustls)
            .root_certs(RootCerts::Specific(Arc::new(self.roots.clone())))
            .client_cert(self.client.clone())
            .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .build()
    }
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<Certificate<'static>>, KvError> {
    let mut out = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(PemItem::Certificate(cert)) => out.push(cert),
            Ok(_) => {}
            Err(_) => return Err(KvError::invalid_argument(format!("the etcd {what} is not valid PEM"))),
        }
    }
    if out.is_empty() {
        return Err(KvError::invalid_argument(format!(
            "the etcd {what} holds no certificate (expected PEM: -----BEGIN CERTIFICATE-----)"
        )));
    }
    Ok(out)
}
