//! HTTPS (feature `tls`): a server with a certificate of a test CA answers a client that trusts
//! that CA, and refuses plain HTTP on the same port.

use std::sync::Arc;

use pjrt_serve::{ModelConfig, Server, ServerOptions, TlsConfig};

use crate::harness::{client, data, Running};

fn certificate() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (issuer.pem(), leaf.pem(), key.serialize_pem())
}

#[test]
fn https_answers_a_client_that_trusts_the_ca_and_refuses_plain_http() {
    let (ca, cert, key) = certificate();
    let mut options = ServerOptions::default();
    options.tls = Some(TlsConfig::from_pem(cert, key).unwrap());
    let server = Server::new(client(), options);
    server.load(ModelConfig::new("cnn", data("jax_export/jax-0.10.2/cnn/model.jaxexport"))).unwrap();
    let server = Running::start(server);

    use ureq::tls::{Certificate, RootCerts, TlsConfig as ClientTls, TlsProvider};
    let tls = ClientTls::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::new_with_certs(&[Certificate::from_pem(ca.as_bytes()).unwrap()]))
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().tls_config(tls).proxy(None).build());
    let url = format!("https://{}/v2/models/cnn", server.address());
    let mut response = agent.get(&url).call().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let meta: serde_json::Value = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(meta["name"], "cnn");

    // Plain HTTP to the TLS port gets no answer.
    let plain = ureq::Agent::new_with_config(ureq::Agent::config_builder().proxy(None).build());
    assert!(plain.get(format!("http://{}/v2/health/live", server.address())).call().is_err());
    // A client that does not trust the CA is refused in the handshake.
    let untrusting = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .tls_config(
                ClientTls::builder()
                    .provider(TlsProvider::Rustls)
                    .root_certs(RootCerts::new_with_certs(&[]))
                    .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
                    .build(),
            )
            .proxy(None)
            .build(),
    );
    assert!(untrusting.get(&url).call().is_err());
}
