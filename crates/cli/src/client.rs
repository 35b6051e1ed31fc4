//! A thin HTTP client for the gateway API.

use anyhow::{bail, Context as _};
use serde_json::Value;

pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
}

/// A request the gateway did not answer with success; `status` is `None` when it was not
/// reached at all.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct GatewayError {
    pub(crate) status: Option<reqwest::StatusCode>,
    message: String,
}

impl GatewayError {
    /// Whether the same request can succeed later: the gateway unreachable or not answering in
    /// time, busy (429) or unavailable (5xx). Anything else (401, 404, a refused request) will
    /// not change by asking again.
    pub(crate) fn transient(&self) -> bool {
        self.status.is_none_or(|s| s == reqwest::StatusCode::TOO_MANY_REQUESTS || s.is_server_error())
    }

    fn unreachable(base: &str, e: reqwest::Error) -> anyhow::Error {
        anyhow::Error::new(GatewayError { status: None, message: format!("reaching the gateway at {base}: {e}") })
    }
}

/// Whether `e` is a [`GatewayError`] worth retrying.
pub(crate) fn is_transient(e: &anyhow::Error) -> bool {
    e.downcast_ref::<GatewayError>().is_some_and(GatewayError::transient)
}

async fn error_of(resp: reqwest::Response) -> anyhow::Error {
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    let msg = body["error"]["message"].as_str().unwrap_or("no error message");
    let hint = if status == reqwest::StatusCode::UNAUTHORIZED {
        " (set SNARKFLOW_API_TOKEN or --token-file; `snarkflow admin token create` makes one)"
    } else {
        ""
    };
    anyhow::Error::new(GatewayError {
        status: Some(status),
        message: format!("gateway answered {status}: {msg}{hint}"),
    })
}

impl Client {
    /// A client for the gateway at `base`, sending `token` as a bearer token and trusting
    /// `ca_cert` (PEM) besides the system's roots.
    pub(crate) fn new(base: &str, token: Option<String>, ca_cert: Option<&std::path::Path>) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder();
        if let Some(token) = token {
            let mut headers = reqwest::header::HeaderMap::new();
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
                .context("the API token has characters a header cannot carry")?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
            builder = builder.default_headers(headers);
        }
        if let Some(path) = ca_cert {
            let pem = std::fs::read(path).with_context(|| format!("reading the CA certificate {}", path.display()))?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem)
                .with_context(|| format!("{} is not a PEM certificate bundle", path.display()))?;
            anyhow::ensure!(!certificates.is_empty(), "{} holds no PEM certificate", path.display());
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        Ok(Client { http: builder.build()?, base: base.trim_end_matches('/').to_owned() })
    }

    pub(crate) async fn submit(&self, body: &Value) -> anyhow::Result<Value> {
        let resp = self
            .http
            .post(format!("{}/v1/jobs", self.base))
            .json(body)
            .send()
            .await
            .map_err(|e| GatewayError::unreachable(&self.base, e))?;
        if !resp.status().is_success() {
            return Err(error_of(resp).await);
        }
        Ok(resp.json().await?)
    }

    pub(crate) async fn status(&self, id: &str) -> anyhow::Result<Value> {
        self.get_json(&format!("/v1/jobs/{id}")).await
    }

    /// `GET path` on the gateway, its JSON answer.
    async fn get_json(&self, path: &str) -> anyhow::Result<Value> {
        let resp = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .map_err(|e| GatewayError::unreachable(&self.base, e))?;
        if !resp.status().is_success() {
            return Err(error_of(resp).await);
        }
        Ok(resp.json().await?)
    }

    /// The gateway's clock against ours: its `Date` header (whole seconds) minus the midpoint of
    /// the request, in seconds; `None` when it sent none.
    pub(crate) async fn clock_skew(&self) -> anyhow::Result<Option<f64>> {
        let sent = std::time::SystemTime::now();
        let resp = self
            .http
            .get(format!("{}/healthz", self.base))
            .send()
            .await
            .map_err(|e| GatewayError::unreachable(&self.base, e))?;
        let received = std::time::SystemTime::now();
        let Some(date) = resp.headers().get(reqwest::header::DATE).and_then(|d| d.to_str().ok()) else {
            return Ok(None);
        };
        let theirs = httpdate::parse_http_date(date).with_context(|| format!("unreadable Date header {date:?}"))?;
        let midpoint = sent + received.duration_since(sent).unwrap_or_default() / 2;
        Ok(Some(skew_secs(theirs, midpoint)))
    }

    /// `GET /v1/cluster`.
    pub(crate) async fn cluster(&self) -> anyhow::Result<Value> {
        self.get_json("/v1/cluster").await
    }

    pub(crate) async fn list(&self, state: Option<&str>, limit: usize) -> anyhow::Result<Value> {
        let mut req = self.http.get(format!("{}/v1/jobs", self.base)).query(&[("limit", limit.to_string())]);
        if let Some(s) = state {
            req = req.query(&[("state", s)]);
        }
        let resp = req.send().await.context("reaching the gateway")?;
        if !resp.status().is_success() {
            return Err(error_of(resp).await);
        }
        Ok(resp.json().await?)
    }

    pub(crate) async fn proof(&self, id: &str) -> anyhow::Result<Vec<u8>> {
        let resp =
            self.http.get(format!("{}/v1/jobs/{id}/proof", self.base)).send().await.context("reaching the gateway")?;
        if !resp.status().is_success() {
            return Err(error_of(resp).await);
        }
        let bytes = resp.bytes().await?.to_vec();
        if bytes.is_empty() || bytes.len() % snarkflow_wire::PARTITION_PROOF_BYTES != 0 {
            bail!("proof of {} bytes is not a whole number of 192-byte partition proofs", bytes.len());
        }
        Ok(bytes)
    }

    pub(crate) async fn cancel(&self, id: &str) -> anyhow::Result<Value> {
        let resp =
            self.http.delete(format!("{}/v1/jobs/{id}", self.base)).send().await.context("reaching the gateway")?;
        if !resp.status().is_success() {
            return Err(error_of(resp).await);
        }
        Ok(resp.json().await?)
    }
}

/// The API token: `$SNARKFLOW_API_TOKEN`, else the first line of `--token-file`, else of
/// `.state/api-token` (what `just up` writes) when it is the caller's own file, else of
/// `~/.config/snarkflow/api-token`.
///
/// `.state/api-token` is found relative to the working directory, so in a directory someone
/// else controls it could be anyone's: it is read only when the caller owns it and nobody else
/// may write it (`just up` makes it mode 600), else skipped with a warning.
pub(crate) fn api_token(token_file: Option<&std::path::PathBuf>) -> anyhow::Result<Option<String>> {
    if let Some(token) = std::env::var("SNARKFLOW_API_TOKEN").ok().filter(|t| !t.trim().is_empty()) {
        return Ok(Some(token.trim().to_owned()));
    }
    let read = |path: &std::path::Path| -> anyhow::Result<String> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading the API token file {}", path.display()))?;
        Ok(text.lines().next().unwrap_or("").trim().to_owned())
    };
    if let Some(path) = token_file {
        return Ok(Some(read(path)?));
    }
    let candidates = [
        Some(std::path::PathBuf::from(".state/api-token")),
        dirs_config().map(|d| d.join("snarkflow").join("api-token")),
    ];
    for (i, path) in candidates.into_iter().enumerate() {
        let Some(path) = path.filter(|p| p.exists()) else { continue };
        if i == 0 {
            if let Err(why) = owned_by_caller(&path) {
                eprintln!("warning: not reading the API token in {}: {why}", path.display());
                continue;
            }
        }
        return Ok(Some(read(&path)?));
    }
    Ok(None)
}

/// Whether `path` is the caller's own file that nobody else may write.
fn owned_by_caller(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path)?;
    // the owner of /proc/self is this process's effective user
    let me = std::fs::metadata("/proc/self")?.uid();
    anyhow::ensure!(meta.uid() == me, "it belongs to uid {}, not to you (uid {me})", meta.uid());
    anyhow::ensure!(meta.mode() & 0o022 == 0, "others may write it (mode {:o})", meta.mode() & 0o777);
    Ok(())
}

/// `theirs - ours` in seconds; `theirs` is whole seconds, so ±0.5 s of it is rounding.
fn skew_secs(theirs: std::time::SystemTime, ours: std::time::SystemTime) -> f64 {
    match theirs.duration_since(ours) {
        Ok(ahead) => ahead.as_secs_f64(),
        Err(behind) => -behind.duration().as_secs_f64(),
    }
}

fn dirs_config() -> Option<std::path::PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".config")))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    /// A token file found in the working directory is read only when it is the caller's own
    /// and nobody else may write it.
    #[test]
    fn a_token_file_others_may_write_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api-token");
        std::fs::write(&path, "t\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        super::owned_by_caller(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622)).unwrap();
        let e = super::owned_by_caller(&path).unwrap_err().to_string();
        assert!(e.contains("others may write it (mode 622)"), "{e}");
    }
}
