//! Who a service is to NATS and how it proves it: credentials, TLS, and a per-role inbox
//! prefix (so a server's permissions can confine each role's replies to its own inboxes).

use std::path::PathBuf;

use async_nats::ConnectOptions;

/// A secret read from a file or the environment; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How a service authenticates to NATS and secures the connection. Everything is optional:
/// the default is a plaintext, anonymous connection (a local development server).
#[derive(Debug, Clone, Default)]
pub struct NatsSecurity {
    /// User name; with `password` for user/password authentication.
    pub user: Option<String>,
    pub password: Option<Secret>,
    /// A server token (`authorization { token }`).
    pub token: Option<Secret>,
    /// An nkey seed (`SU...`).
    pub nkey_seed: Option<Secret>,
    /// A `.creds` file (JWT + nkey seed) from `nsc`.
    pub creds_file: Option<PathBuf>,
    /// PEM CA certificate(s) to trust for the server's certificate; implies TLS.
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate and key for mutual TLS; implies TLS.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Refuse a connection the server does not secure with TLS.
    pub require_tls: bool,
    /// Prefix of this service's reply inboxes (`_INBOX_gateway`, ...): the server's per-role
    /// permissions allow each role to subscribe to its own prefix only.
    pub inbox_prefix: Option<String>,
}

/// The prefix of `role`'s reply inboxes (`_INBOX_gateway`): the per-role server permissions
/// let each role subscribe to its own prefix only, and a worker takes control requests only
/// from the gateway's.
pub fn inbox_prefix(role: &str) -> String {
    format!("_INBOX_{role}")
}

/// What is wrong with a security setting, before any connection is tried.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    #[error("a NATS password needs a user name (--nats-user)")]
    PasswordWithoutUser,
    #[error("a NATS user needs a password (--nats-password-file or SNARKFLOW_NATS_PASSWORD)")]
    UserWithoutPassword,
    #[error("--nats-tls-cert and --nats-tls-key go together")]
    HalfAClientCertificate,
    #[error("choose one way to authenticate to NATS; got {0}")]
    SeveralMethods(String),
    #[error("reading NATS credentials file {path}: {source}")]
    Creds { path: PathBuf, source: std::io::Error },
    #[error("NATS nkey seed: {0}")]
    Nkey(String),
}

impl NatsSecurity {
    /// The authentication method in use, for logs (never the secret).
    pub fn method(&self) -> &'static str {
        match self {
            s if s.creds_file.is_some() => "creds file",
            s if s.nkey_seed.is_some() => "nkey",
            s if s.token.is_some() => "token",
            s if s.user.is_some() => "user/password",
            _ => "none",
        }
    }

    /// Whether the connection will be TLS.
    pub fn tls(&self) -> bool {
        self.require_tls || self.tls_ca.is_some() || self.tls_cert.is_some()
    }

    fn check(&self) -> Result<(), SecurityError> {
        let methods: Vec<&str> = [
            (self.user.is_some() || self.password.is_some(), "user/password"),
            (self.token.is_some(), "token"),
            (self.nkey_seed.is_some(), "nkey"),
            (self.creds_file.is_some(), "creds file"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect();
        if methods.len() > 1 {
            return Err(SecurityError::SeveralMethods(methods.join(" and ")));
        }
        match (&self.user, &self.password) {
            (None, Some(_)) => return Err(SecurityError::PasswordWithoutUser),
            (Some(_), None) => return Err(SecurityError::UserWithoutPassword),
            _ => {}
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err(SecurityError::HalfAClientCertificate);
        }
        if let Some(seed) = &self.nkey_seed {
            if !seed.expose().starts_with("SU") {
                return Err(SecurityError::Nkey("a user seed starts with SU".into()));
            }
        }
        Ok(())
    }

    /// `options` with these credentials and TLS settings applied.
    pub(crate) async fn apply(&self, mut options: ConnectOptions) -> Result<ConnectOptions, SecurityError> {
        self.check()?;
        if let (Some(user), Some(password)) = (&self.user, &self.password) {
            options = options.user_and_password(user.clone(), password.expose().to_owned());
        }
        if let Some(token) = &self.token {
            options = options.token(token.expose().to_owned());
        }
        if let Some(seed) = &self.nkey_seed {
            options = options.nkey(seed.expose().to_owned());
        }
        if let Some(path) = &self.creds_file {
            options = options
                .credentials_file(path)
                .await
                .map_err(|source| SecurityError::Creds { path: path.clone(), source })?;
        }
        if let Some(ca) = &self.tls_ca {
            options = options.add_root_certificates(ca.clone());
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
        if self.tls() {
            options = options.require_tls(true);
        }
        if let Some(prefix) = &self.inbox_prefix {
            options = options.custom_inbox_prefix(prefix);
        }
        Ok(options)
    }
}

/// `url` with any user, password or token in it replaced by `***`, for logs and errors.
pub fn redact_url(url: &str) -> String {
    url.split(',')
        .map(|server| match server.split_once("://") {
            Some((scheme, rest)) => match rest.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://***@{host}"),
                None => server.to_owned(),
            },
            None => match server.rsplit_once('@') {
                Some((_, host)) => format!("***@{host}"),
                None => server.to_owned(),
            },
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(redact_url("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
        assert_eq!(redact_url("nats://gw:s3cret@10.0.0.1:4222"), "nats://***@10.0.0.1:4222");
        assert_eq!(redact_url("tls://tok@a:1,nats://b:2"), "tls://***@a:1,nats://b:2");
        assert_eq!(redact_url("u:p@host:4222"), "***@host:4222");
    }

    #[test]
    fn secrets_do_not_print() {
        let s = NatsSecurity { user: Some("gw".into()), password: Some(Secret::new("hunter2")), ..Default::default() };
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn contradictory_settings_are_refused() {
        let both = NatsSecurity {
            user: Some("gw".into()),
            password: Some(Secret::new("p")),
            token: Some(Secret::new("t")),
            ..Default::default()
        };
        assert!(matches!(both.check(), Err(SecurityError::SeveralMethods(_))));
        let half = NatsSecurity { tls_cert: Some("c.pem".into()), ..Default::default() };
        assert!(matches!(half.check(), Err(SecurityError::HalfAClientCertificate)));
        let user_only = NatsSecurity { user: Some("gw".into()), ..Default::default() };
        assert!(matches!(user_only.check(), Err(SecurityError::UserWithoutPassword)));
        assert!(NatsSecurity::default().check().is_ok());
    }
}
