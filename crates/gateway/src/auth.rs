//! Who is calling: bearer API tokens from the tokens file, bound to a tenant, scopes and a
//! highest priority. Every `/v1` route takes a [`Caller`]; `/healthz`, `/readyz` and
//! `/metrics` stay open (they reveal no job).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use snarkflow_service::tokens::{Principal, Scope, TokenFile};
use snarkflow_wire::{JobRecord, Priority};
use tracing::{error, warn};

use crate::{ApiError, AppState};

/// How the gateway authenticates callers.
#[derive(Clone)]
pub enum Auth {
    Tokens(Arc<TokenStore>),
    /// `--insecure-no-auth`: every caller is an admin of tenant [`ANONYMOUS`].
    Disabled,
}

/// The tenant of every job submitted with authentication off.
pub const ANONYMOUS: &str = "anonymous";

/// The tokens file, re-read when it changes (looked at once a second at most). A file that
/// stops parsing accepts no token at all until it parses again (an edit that revoked a token
/// and broke the file must not leave the token valid), loudly.
pub struct TokenStore {
    path: PathBuf,
    cached: Mutex<Cached>,
}

struct Cached {
    checked: Instant,
    version: Option<Version>,
    tokens: Arc<TokenFile>,
}

/// One version of the file: a save replaces it (another inode), an edit in place changes its
/// time or size. The time alone misses two saves within one tick of the file system's clock.
type Version = (SystemTime, u64, u64);

const RECHECK: Duration = Duration::from_secs(1);

fn version(path: &std::path::Path) -> Option<Version> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

impl TokenStore {
    /// Load `path` (a missing file means no tokens: every request is 401 until one is created).
    pub fn open(path: PathBuf) -> anyhow::Result<TokenStore> {
        let tokens = TokenFile::load(&path)?;
        if tokens.tokens.is_empty() {
            warn!(path = %path.display(), "no API tokens yet: every API request is refused until `snarkflow admin token create` adds one");
        }
        let cached = Cached { checked: Instant::now(), version: version(&path), tokens: Arc::new(tokens) };
        Ok(TokenStore { path, cached: Mutex::new(cached) })
    }

    fn tokens(&self) -> Arc<TokenFile> {
        let mut cached = self.cached.lock().expect("token cache");
        if cached.checked.elapsed() >= RECHECK {
            cached.checked = Instant::now();
            let now = version(&self.path);
            if now != cached.version {
                cached.version = now;
                cached.tokens = Arc::new(match TokenFile::load(&self.path) {
                    Ok(tokens) => tokens,
                    Err(e) => {
                        error!(
                            error = format!("{e:#}"),
                            "the tokens file no longer parses; every API token is refused until it does"
                        );
                        TokenFile::default()
                    }
                });
            }
        }
        cached.tokens.clone()
    }
}

impl Auth {
    /// The principal behind an `Authorization` header value (or gRPC metadata value).
    pub(crate) fn authenticate(&self, header: Option<&str>) -> Result<Principal, ApiError> {
        let store = match self {
            Auth::Disabled => {
                return Ok(Principal {
                    token_id: "none".into(),
                    tenant: ANONYMOUS.into(),
                    scopes: vec![Scope::Admin],
                    max_priority: Priority::Critical,
                })
            }
            Auth::Tokens(store) => store,
        };
        let header = header.ok_or_else(|| {
            ApiError::Unauthorized("an API token is required: send `Authorization: Bearer <token>`".into())
        })?;
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .ok_or_else(|| ApiError::Unauthorized("the Authorization header must be `Bearer <token>`".into()))?;
        store.tokens().authenticate(token).ok_or_else(|| ApiError::Unauthorized("the API token is not valid".into()))
    }
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub(crate) Principal);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = parts.headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let principal = state.auth.authenticate(header)?;
        tracing::Span::current().record("tenant", principal.tenant.as_str());
        Ok(Caller(principal))
    }
}

impl Caller {
    /// The request needs `scope`.
    pub(crate) fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.0.may(scope) {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!("this API token lacks the {:?} scope", scope.as_str())))
    }

    /// The tenant a new job is recorded under.
    pub(crate) fn tenant(&self) -> &str {
        &self.0.tenant
    }

    /// Whether the caller may see `record`: its own tenant's jobs, or any with `admin`.
    pub(crate) fn owns(&self, record: &JobRecord) -> bool {
        self.0.is_admin() || record.tenant.as_deref() == Some(self.0.tenant.as_str())
    }

    pub(crate) fn is_admin(&self) -> bool {
        self.0.is_admin()
    }

    pub(crate) fn max_priority(&self) -> Priority {
        self.0.max_priority
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(token: &str) -> String {
        format!("Bearer {token}")
    }

    #[test]
    fn a_revoke_is_seen_at_once_and_a_broken_file_accepts_no_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let (keep, gone) = TokenFile::update(&path, |f| {
            let keep = f.create("acme", vec![Scope::Submit], Priority::Normal, 0)?.0;
            let gone = f.create("acme", vec![Scope::Submit], Priority::Normal, 0)?.0;
            Ok((keep, gone))
        })
        .unwrap();
        let auth = Auth::Tokens(Arc::new(TokenStore::open(path.clone()).unwrap()));
        assert!(auth.authenticate(Some(&bearer(&gone))).is_ok());
        // revoked within the same tick of the file's clock: a new file all the same
        let id = gone.trim_start_matches("sfk_").split('_').next().unwrap().to_owned();
        TokenFile::update(&path, |f| {
            assert!(f.revoke(&id));
            Ok(())
        })
        .unwrap();
        std::thread::sleep(RECHECK + Duration::from_millis(100));
        assert!(auth.authenticate(Some(&bearer(&gone))).is_err(), "a revoked token still works");
        assert!(auth.authenticate(Some(&bearer(&keep))).is_ok());
        // an edit that breaks the file: no token is accepted until it parses again
        std::fs::write(&path, b"{ \"tokens\": [ oops").unwrap();
        std::thread::sleep(RECHECK + Duration::from_millis(100));
        assert!(auth.authenticate(Some(&bearer(&keep))).is_err(), "a broken file must fail closed");
    }
}
