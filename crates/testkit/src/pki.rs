//! A throwaway certificate authority for TLS tests: a CA, a server certificate for
//! `localhost`/`127.0.0.1`, and a client certificate, as PEM files.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

/// PEM files of one test PKI.
#[derive(Debug, Clone)]
pub struct TestPki {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl TestPki {
    /// Generate everything into `dir`.
    pub fn generate(dir: &Path) -> TestPki {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "snarkflow test CA");
        let ca_key = KeyPair::generate().expect("ca key");
        let ca = ca_params.self_signed(&ca_key).expect("ca certificate");
        let issue = |names: Vec<String>, cn: &str| {
            let mut params = CertificateParams::new(names).expect("params");
            params.distinguished_name.push(DnType::CommonName, cn);
            let key = KeyPair::generate().expect("key");
            let cert = params.signed_by(&key, &ca, &ca_key).expect("certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = issue(vec!["localhost".into(), "127.0.0.1".into()], "localhost");
        let (client_cert, client_key) = issue(vec!["snarkflow-client".into()], "snarkflow-client");
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("writing a PEM file");
            path
        };
        TestPki {
            ca: write("ca.pem", &ca.pem()),
            server_cert: write("server-cert.pem", &server_cert),
            server_key: write("server-key.pem", &server_key),
            client_cert: write("client-cert.pem", &client_cert),
            client_key: write("client-key.pem", &client_key),
        }
    }
}
