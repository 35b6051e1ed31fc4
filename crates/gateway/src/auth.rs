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

/// The tokens file, re-read when its modification time changes (looked at once a second at
/// most). A file that stops parsing keeps the last good tokens, loudly.
pub struct TokenStore {
    path: PathBuf,
    cached: Mutex<Cached>,
}

struct Cached {
    checked: Instant,
    modified: Option<SystemTime>,
    tokens: Arc<TokenFile>,
}

const RECHECK: Duration = Duration::from_secs(1);

fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl TokenStore {
    /// Load `path` (a missing file means no tokens: every request is 401 until one is created).
    pub fn open(path: PathBuf) -> anyhow::Result<TokenStore> {
        let tokens = TokenFile::load(&path)?;
        if tokens.tokens.is_empty() {
            warn!(path = %path.display(), "no API tokens yet: every API request is refused until `snarkflow admin token create` adds one");
        }
        let cached = Cached { checked: Instant::now(), modified: modified(&path), tokens: Arc::new(tokens) };
        Ok(TokenStore { path, cached: Mutex::new(cached) })
    }

    fn tokens(&self) -> Arc<TokenFile> {
        let mut cached = self.cached.lock().expect("token cache");
        if cached.checked.elapsed() >= RECHECK {
            cached.checked = Instant::now();
            let now = modified(&self.path);
            if now != cached.modified {
                match TokenFile::load(&self.path) {
                    Ok(tokens) => {
                        cached.tokens = Arc::new(tokens);
                        cached.modified = now;
                    }
                    Err(e) => error!(
                        error = format!("{e:#}"),
                        "the tokens file no longer parses; keeping the tokens loaded before"
                    ),
                }
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
