//! A thin HTTP client for the gateway API.

use anyhow::{bail, Context as _};
use serde_json::Value;

pub struct Client {
    http: reqwest::Client,
    base: String,
}

async fn error_of(resp: reqwest::Response) -> anyhow::Error {
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    let msg = body["error"]["message"].as_str().unwrap_or("no error message");
    anyhow::anyhow!("gateway answered {status}: {msg}")
}

impl Client {
    pub fn new(base: &str) -> Self {
        Client { http: reqwest::Client::new(), base: base.trim_end_matches('/').to_owned() }
    }

    pub async fn submit(&self, body: &Value) -> anyhow::Result<Value> {
        let resp = self
            .http
            .post(format!("{}/v1/jobs", self.base))
            .json(body)
            .send()
            .await
            .with_context(|| format!("reaching the gateway at {}", self.base))?;
        if !resp.status().is_success() {
            return Err(error_of(resp).await);
        }
        Ok(resp.json().await?)
    }

    pub async fn status(&self, id: &str) -> anyhow::Result<Value> {
        let resp = self.http.get(format!("{}/v1/jobs/{id}", self.base)).send().await.context("reaching the gateway")?;
        if !resp.status().is_success() {
            return Err(error_of(resp).await);
        }
        Ok(resp.json().await?)
    }

    pub async fn list(&self, state: Option<&str>, limit: usize) -> anyhow::Result<Value> {
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

    pub async fn proof(&self, id: &str) -> anyhow::Result<Vec<u8>> {
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

    pub async fn cancel(&self, id: &str) -> anyhow::Result<Value> {
        let resp =
            self.http.delete(format!("{}/v1/jobs/{id}", self.base)).send().await.context("reaching the gateway")?;
        if !resp.status().is_success() {
            return Err(error_of(resp).await);
        }
        Ok(resp.json().await?)
    }
}
