//! The gateway's API tokens: a JSON file the operator owns (`snarkflow admin token ...`
//! writes it, the gateway reads it and notices changes). Only a token's SHA-256 is stored;
//! the token itself is shown once, when created.
//!
//! A token is `sfk_<id>_<secret>`: `id` (8 hex digits) names the token in listings and
//! revocations, `secret` is 256 random bits. Presented tokens are hashed and compared with
//! the stored hash in constant time.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use rand::RngCore as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use snarkflow_wire::Priority;
use subtle::ConstantTimeEq as _;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Submit jobs (up to the token's highest priority).
    Submit,
    /// Read its tenant's jobs and proofs.
    Read,
    /// Cancel its tenant's jobs.
    Cancel,
    /// Everything, for every tenant.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Submit, Scope::Read, Scope::Cancel, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Submit => "submit",
            Scope::Read => "read",
            Scope::Cancel => "cancel",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == s)
    }

    /// `submit,read` → scopes; an unknown name is an error naming it.
    pub fn parse_list(s: &str) -> anyhow::Result<Vec<Scope>> {
        let mut scopes = Vec::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let scope = Scope::parse(name)
                .with_context(|| format!("unknown scope {name:?}; scopes are submit, read, cancel, admin"))?;
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        anyhow::ensure!(!scopes.is_empty(), "a token needs at least one scope (submit, read, cancel, admin)");
        scopes.sort();
        Ok(scopes)
    }
}

/// One token as stored: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    pub id: String,
    pub tenant: String,
    pub scopes: Vec<Scope>,
    /// The most urgent priority this token may submit at.
    pub max_priority: Priority,
    pub sha256_hex: String,
    pub created_at_ms: u64,
}

/// Who presented a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub token_id: String,
    pub tenant: String,
    pub scopes: Vec<Scope>,
    pub max_priority: Priority,
}

impl Principal {
    /// `admin` implies every scope.
    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(&Scope::Admin) || self.scopes.contains(&scope)
    }

    pub fn is_admin(&self) -> bool {
        self.scopes.contains(&Scope::Admin)
    }
}

/// The tokens file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenFile {
    pub tokens: Vec<TokenRecord>,
}

const PREFIX: &str = "sfk_";

fn sha256_hex(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A tenant name: what job records, metrics and quotas are keyed by.
fn check_tenant(tenant: &str) -> anyhow::Result<()> {
    let ok = !tenant.is_empty()
        && tenant.len() <= 64
        && tenant.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    anyhow::ensure!(ok, "tenant {tenant:?} must be 1-64 characters of letters, digits, '-', '_' or '.'");
    Ok(())
}

impl TokenFile {
    /// The file's tokens; a missing file has none.
    pub fn load(path: &Path) -> anyhow::Result<TokenFile> {
        match std::fs::read(path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).with_context(|| format!("parsing tokens file {}", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TokenFile::default()),
            Err(e) => Err(e).with_context(|| format!("reading tokens file {}", path.display())),
        }
    }

    /// Load, change and save the file under an exclusive lock (`<file>.lock`): two admin
    /// commands changing it at once take turns, so neither change is lost.
    pub fn update<T>(path: &Path, change: impl FnOnce(&mut TokenFile) -> anyhow::Result<T>) -> anyhow::Result<T> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let lock_path = PathBuf::from(format!("{}.lock", path.display()));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("opening {}", lock_path.display()))?;
        lock.lock().with_context(|| format!("locking {}", lock_path.display()))?;
        let mut file = TokenFile::load(path)?;
        let out = change(&mut file)?;
        file.save(path)?;
        Ok(out)
    }

    /// Write atomically (a reader never sees half a file). A new file is readable by its
    /// owner only; a replaced one keeps its mode (an operator may have opened it to the
    /// gateway's user: it holds hashes, not tokens). The temporary file is created new
    /// (`O_EXCL`) under a name no other writer uses, never opened through a planted link.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let unique =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let tmp = PathBuf::from(format!("{}.tmp-{}-{unique}", path.display(), std::process::id()));
        {
            use std::io::Write as _;
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
            file.write_all(&serde_json::to_vec_pretty(self)?)?;
            file.sync_all()?;
            if let Ok(existing) = std::fs::metadata(path) {
                file.set_permissions(existing.permissions())?;
            }
        }
        std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
    }

    /// Add a new token; returns the token (shown once) and its record.
    pub fn create(
        &mut self,
        tenant: &str,
        scopes: Vec<Scope>,
        max_priority: Priority,
        now_ms: u64,
    ) -> anyhow::Result<(String, TokenRecord)> {
        check_tenant(tenant)?;
        anyhow::ensure!(!scopes.is_empty(), "a token needs at least one scope");
        let mut rng = rand::rngs::OsRng;
        let id = loop {
            let id = hex::encode(rng.next_u32().to_be_bytes());
            if !self.tokens.iter().any(|t| t.id == id) {
                break id;
            }
        };
        let mut secret = [0u8; 32];
        rng.fill_bytes(&mut secret);
        let token = format!("{PREFIX}{id}_{}", hex::encode(secret));
        let record = TokenRecord {
            id,
            tenant: tenant.to_owned(),
            scopes,
            max_priority,
            sha256_hex: sha256_hex(&token),
            created_at_ms: now_ms,
        };
        self.tokens.push(record.clone());
        Ok((token, record))
    }

    /// Remove the token with this id; false when there is none.
    pub fn revoke(&mut self, id: &str) -> bool {
        let before = self.tokens.len();
        self.tokens.retain(|t| t.id != id);
        self.tokens.len() != before
    }

    /// The principal a presented token stands for, if it is one of these.
    pub fn authenticate(&self, presented: &str) -> Option<Principal> {
        let id = presented.strip_prefix(PREFIX)?.split('_').next()?;
        let record = self.tokens.iter().find(|t| t.id == id)?;
        let presented_hash = Sha256::digest(presented.as_bytes());
        let stored = hex::decode(&record.sha256_hex).ok()?;
        if !bool::from(presented_hash.as_slice().ct_eq(&stored)) {
            return None;
        }
        Some(Principal {
            token_id: record.id.clone(),
            tenant: record.tenant.clone(),
            scopes: record.scopes.clone(),
            max_priority: record.max_priority,
        })
    }
}

/// `$SNARKFLOW_TOKENS_FILE`, else `<user config dir>/snarkflow/tokens.json`.
pub fn default_tokens_file() -> PathBuf {
    match std::env::var_os("SNARKFLOW_TOKENS_FILE") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => dirs::config_dir().unwrap_or_else(std::env::temp_dir).join("snarkflow").join("tokens.json"),
    }
}

/// Parse a priority name for `--max-priority`.
pub fn parse_priority(s: &str) -> anyhow::Result<Priority> {
    match Priority::parse(s) {
        Some(p) => Ok(p),
        None => bail!("priority must be one of critical, high, normal, low; got {s:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_token_authenticates_and_nothing_else_does() {
        let mut file = TokenFile::default();
        let (token, record) = file.create("acme", vec![Scope::Submit, Scope::Read], Priority::High, 1).unwrap();
        assert!(token.starts_with("sfk_"));
        assert!(!serde_json::to_string(&file).unwrap().contains(&token[12..]), "only the hash is stored");
        let who = file.authenticate(&token).unwrap();
        assert_eq!((who.tenant.as_str(), who.max_priority), ("acme", Priority::High));
        assert!(who.may(Scope::Read) && !who.may(Scope::Cancel));
        // a wrong secret under the right id, a bare id, garbage
        let mut wrong = token.clone();
        wrong.replace_range(token.len() - 1.., if token.ends_with('0') { "1" } else { "0" });
        assert_eq!(file.authenticate(&wrong), None);
        assert_eq!(file.authenticate(&format!("sfk_{}", record.id)), None);
        assert_eq!(file.authenticate("Bearer nonsense"), None);
        assert!(file.revoke(&record.id));
        assert_eq!(file.authenticate(&token), None, "revoked");
    }

    #[test]
    fn the_file_round_trips_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("tokens.json");
        assert_eq!(TokenFile::load(&path).unwrap(), TokenFile::default(), "a missing file has no tokens");
        let mut file = TokenFile::default();
        let (token, _) = file.create("ops", vec![Scope::Admin], Priority::Critical, 7).unwrap();
        file.save(&path).unwrap();
        let loaded = TokenFile::load(&path).unwrap();
        assert_eq!(loaded, file);
        assert!(loaded.authenticate(&token).unwrap().is_admin());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }

    #[test]
    fn scopes_and_tenants_are_checked() {
        assert_eq!(Scope::parse_list("read, submit,read").unwrap(), vec![Scope::Submit, Scope::Read]);
        assert!(Scope::parse_list("read,write").unwrap_err().to_string().contains("\"write\""));
        assert!(Scope::parse_list("").is_err());
        let mut file = TokenFile::default();
        assert!(file.create("has space", vec![Scope::Read], Priority::Low, 0).is_err());
        assert!(file.create("", vec![Scope::Read], Priority::Low, 0).is_err());
    }
}
