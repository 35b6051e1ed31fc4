//! Flags shared by every service; each binary flattens them into its own `Config`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::Args;
use snarkflow_bus::{BusConfig, NatsSecurity, Secret};
use snarkflow_telemetry::{OtlpProtocol, TelemetryConfig};

/// How to reach NATS and how redelivery behaves.
#[derive(Debug, Clone, Args)]
pub struct NatsArgs {
    /// NATS server URL.
    #[arg(long = "nats-url", env = "SNARKFLOW_NATS_URL", default_value = BusConfig::DEFAULT_URL)]
    pub url: String,
    /// Seconds without an ack or heartbeat after which a work message is redelivered.
    #[arg(long, env = "SNARKFLOW_ACK_WAIT_SECS", default_value_t = BusConfig::DEFAULT_ACK_WAIT.as_secs())]
    pub ack_wait_secs: u64,
    /// Deliveries of one work message before it is given up.
    #[arg(long, env = "SNARKFLOW_MAX_DELIVER", default_value_t = BusConfig::DEFAULT_MAX_DELIVER)]
    pub max_deliver: i64,
    /// Hours a finished job and its proof stay in the ledger (applied when the ledger bucket
    /// is first created).
    #[arg(long, env = "SNARKFLOW_JOB_RETENTION_HOURS", default_value_t = BusConfig::DEFAULT_JOB_RETENTION.as_secs() / 3600)]
    pub job_retention_hours: u64,
    /// Copies of every stream and bucket in a JetStream cluster (3 in a three-node cluster
    /// survives losing a node); applied when they are first created. `--nats-url` takes the
    /// cluster's URLs comma-separated.
    #[arg(long, env = "SNARKFLOW_NATS_REPLICAS", default_value_t = 1)]
    pub nats_replicas: usize,
    /// NATS user name (with a password from --nats-password-file or SNARKFLOW_NATS_PASSWORD).
    #[arg(long, env = "SNARKFLOW_NATS_USER")]
    pub nats_user: Option<String>,
    /// File holding the NATS user's password (first line).
    #[arg(long, env = "SNARKFLOW_NATS_PASSWORD_FILE")]
    pub nats_password_file: Option<PathBuf>,
    /// The NATS user's password; prefer the file (a flag shows in the process list).
    #[arg(long, env = "SNARKFLOW_NATS_PASSWORD", hide_env_values = true, hide = true)]
    pub nats_password: Option<String>,
    /// File holding a NATS server token.
    #[arg(long, env = "SNARKFLOW_NATS_TOKEN_FILE")]
    pub nats_token_file: Option<PathBuf>,
    /// File holding an NATS nkey user seed (`SU...`).
    #[arg(long, env = "SNARKFLOW_NATS_NKEY_FILE")]
    pub nats_nkey_file: Option<PathBuf>,
    /// NATS `.creds` file (JWT and seed, from nsc).
    #[arg(long, env = "SNARKFLOW_NATS_CREDS")]
    pub nats_creds: Option<PathBuf>,
    /// PEM CA certificate to trust for the NATS server (turns TLS on).
    #[arg(long, env = "SNARKFLOW_NATS_TLS_CA")]
    pub nats_tls_ca: Option<PathBuf>,
    /// PEM client certificate for mutual TLS with NATS (with --nats-tls-key).
    #[arg(long, env = "SNARKFLOW_NATS_TLS_CERT")]
    pub nats_tls_cert: Option<PathBuf>,
    /// PEM private key of --nats-tls-cert.
    #[arg(long, env = "SNARKFLOW_NATS_TLS_KEY")]
    pub nats_tls_key: Option<PathBuf>,
    /// Refuse a NATS connection that is not TLS (on whenever a TLS file is given).
    #[arg(long, env = "SNARKFLOW_NATS_REQUIRE_TLS", value_parser = BoolishValueParser::new())]
    pub nats_require_tls: bool,
    /// Largest size of each work stream, the events stream, the dead-letter stream and the
    /// idempotency bucket (`4GiB`, `512MiB`, bytes; 0: as large as the server allows). Full, writes are refused
    /// (a submit answers 503 storage_full) instead of dropping queued work. Applied when they
    /// are first created. The server reserves these limits and the ledger's from its JetStream storage
    /// (by default 75% of its free disk) when it creates them.
    #[arg(long, env = "SNARKFLOW_NATS_MAX_STREAM_BYTES", default_value = "1GiB", value_parser = parse_bytes)]
    pub nats_max_stream_bytes: u64,
    /// Largest size of the job ledger (`2GiB`, bytes; 0: as large as the server allows). A
    /// finished 10-partition 32 GiB PoRep's record is ~10 KiB and records stay for the
    /// retention (a week): size it as jobs per week × their records. The gateway refuses new
    /// jobs (503 storage_full, Retry-After) while less room is left than the jobs in flight
    /// may still need. Applied when the bucket is first created.
    #[arg(long, env = "SNARKFLOW_NATS_MAX_LEDGER_BYTES", default_value = "1GiB", value_parser = parse_bytes)]
    pub nats_max_ledger_bytes: u64,
    /// Largest size of the object store holding job inputs and synthesized partitions (0: as
    /// large as the server allows). A submit whose input does not fit answers 503
    /// storage_full; a synthesized partition that does not fit waits and is retried.
    #[arg(long, env = "SNARKFLOW_NATS_MAX_OBJECT_BYTES", default_value = "0", value_parser = parse_bytes)]
    pub nats_max_object_bytes: u64,
}

/// The first line of a secret file, without its line ending.
fn read_secret(path: &Path, what: &str) -> anyhow::Result<Secret> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the {what} file {}", path.display()))?;
    let line = text.lines().next().unwrap_or("").trim();
    anyhow::ensure!(!line.is_empty(), "the {what} file {} is empty", path.display());
    Ok(Secret::new(line))
}

impl NatsArgs {
    /// The bus settings for a service of `role` (`gateway`, `synth`, `gpu`): its reply
    /// inboxes are `_INBOX_<role>.*`, which the per-role server permissions rely on. Reads
    /// the secret files.
    pub fn bus_config(&self, role: &str) -> anyhow::Result<BusConfig> {
        let password = match (&self.nats_password_file, &self.nats_password) {
            (Some(path), _) => Some(read_secret(path, "NATS password")?),
            (None, Some(p)) => Some(Secret::new(p.clone())),
            (None, None) => None,
        };
        let security = NatsSecurity {
            user: self.nats_user.clone(),
            password,
            token: self.nats_token_file.as_deref().map(|p| read_secret(p, "NATS token")).transpose()?,
            nkey_seed: self.nats_nkey_file.as_deref().map(|p| read_secret(p, "NATS nkey seed")).transpose()?,
            creds_file: self.nats_creds.clone(),
            tls_ca: self.nats_tls_ca.clone(),
            tls_cert: self.nats_tls_cert.clone(),
            tls_key: self.nats_tls_key.clone(),
            require_tls: self.nats_require_tls,
            inbox_prefix: Some(snarkflow_bus::inbox_prefix(role)),
        };
        Ok(BusConfig {
            ack_wait: Duration::from_secs(self.ack_wait_secs.max(1)),
            max_deliver: self.max_deliver,
            job_retention: Duration::from_secs(self.job_retention_hours.max(1) * 3600),
            security,
            replicas: self.nats_replicas.max(1),
            max_stream_bytes: Some(self.nats_max_stream_bytes).filter(|b| *b > 0),
            max_ledger_bytes: Some(self.nats_max_ledger_bytes).filter(|b| *b > 0),
            max_object_bytes: Some(self.nats_max_object_bytes).filter(|b| *b > 0),
            ..BusConfig::new(self.url.clone())
        })
    }
}

/// Logging and trace export.
#[derive(Debug, Clone, Args)]
pub struct TelemetryArgs {
    /// OTLP endpoint for spans (e.g. http://localhost:4318); unset exports nothing.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    /// OTLP transport: http/protobuf or grpc.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_PROTOCOL", default_value = "http/protobuf")]
    pub otlp_protocol: OtlpProtocol,
    /// Log filter (tracing EnvFilter syntax).
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    pub log: String,
}

impl TelemetryArgs {
    pub fn to_config(&self, service: &str) -> TelemetryConfig {
        TelemetryConfig {
            service: service.to_owned(),
            otlp_endpoint: self.otlp_endpoint.clone(),
            otlp_protocol: self.otlp_protocol,
            log_filter: self.log.clone(),
        }
    }
}

/// filecoin-proofs' own default parameter directory (lotus and Curio fetch into it).
pub const FILECOIN_PROOFS_PARAMS_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// Where Groth16 parameter files (and verifying keys) live. Filecoin kinds keep
/// filecoin-proofs' own file names, so this can be an operator's `FIL_PROOFS_PARAMETER_CACHE`.
#[derive(Debug, Clone, Default, Args)]
pub struct ParamsDir {
    /// Directory of Groth16 parameter files and verifying keys; default
    /// `$FIL_PROOFS_PARAMETER_CACHE`, else `/var/tmp/filecoin-proof-parameters` (as
    /// filecoin-proofs, lotus and Curio).
    #[arg(long = "params-dir", env = "SNARKFLOW_PARAMS_DIR")]
    pub explicit: Option<PathBuf>,
    /// filecoin-proofs' own parameter directory setting, read from its environment variable.
    #[arg(long = "fil-proofs-parameter-cache", env = "FIL_PROOFS_PARAMETER_CACHE", hide = true)]
    pub fil_proofs_parameter_cache: Option<PathBuf>,
}

impl ParamsDir {
    /// `--params-dir` / `SNARKFLOW_PARAMS_DIR`, else `$FIL_PROOFS_PARAMETER_CACHE` (where
    /// operators already keep their parameters), else filecoin-proofs' own default,
    /// [`FILECOIN_PROOFS_PARAMS_DIR`]: a host where lotus or Curio fetched the parameters needs
    /// no setting.
    pub fn dir(&self) -> PathBuf {
        self.explicit
            .clone()
            .or_else(|| self.fil_proofs_parameter_cache.clone().filter(|d| !d.as_os_str().is_empty()))
            .unwrap_or_else(|| PathBuf::from(FILECOIN_PROOFS_PARAMS_DIR))
    }

    /// Point filecoin-proofs' own lookups (`verify_seal` and friends read
    /// `FIL_PROOFS_PARAMETER_CACHE` once, at first use) at [`ParamsDir::dir`]. Call from `main`
    /// before any thread exists: it changes the process environment.
    pub fn export_for_filecoin_proofs(&self) -> PathBuf {
        let dir = self.dir();
        if let Some(theirs) = self.fil_proofs_parameter_cache.as_ref().filter(|t| **t != dir) {
            eprintln!(
                "warning: FIL_PROOFS_PARAMETER_CACHE is {} but the parameter directory is {}; filecoin-proofs will use {}",
                theirs.display(),
                dir.display(),
                dir.display()
            );
        }
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        dir
    }
}

/// A byte count as operators write it: `68719476736`, `64GiB`, `512MiB`, `1.5TiB`.
pub fn parse_bytes(s: &str) -> Result<u64, BadByteCount> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: f64 = number.parse().map_err(|_| BadByteCount::Number(s.to_owned()))?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        other => return Err(BadByteCount::Unit { unit: other.to_owned(), input: s.to_owned() }),
    };
    Ok((number * scale as f64) as u64)
}

/// Why [`parse_bytes`] refused a byte count.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadByteCount {
    #[error("{0:?} is not a byte count (e.g. 64GiB)")]
    Number(String),
    #[error("unknown unit {unit:?} in {input:?} (B, KiB, MiB, GiB, TiB)")]
    Unit { unit: String, input: String },
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{parse_bytes, BadByteCount, ParamsDir, FILECOIN_PROOFS_PARAMS_DIR};

    #[test]
    fn the_parameter_directory_is_the_flag_then_filecoin_proofs_setting_then_its_default() {
        let dir = |explicit: Option<&str>, fil: Option<&str>| {
            ParamsDir { explicit: explicit.map(PathBuf::from), fil_proofs_parameter_cache: fil.map(PathBuf::from) }
                .dir()
        };
        assert_eq!(dir(Some("/a"), Some("/b")), PathBuf::from("/a"));
        assert_eq!(dir(None, Some("/b")), PathBuf::from("/b"));
        // unset or empty: where lotus and Curio keep them
        assert_eq!(dir(None, Some("")), PathBuf::from("/var/tmp/filecoin-proof-parameters"));
        assert_eq!(dir(None, None), PathBuf::from(FILECOIN_PROOFS_PARAMS_DIR));
    }

    #[test]
    fn byte_counts_take_binary_units() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("64GiB"), Ok(64 << 30));
        assert_eq!(parse_bytes("1.5 KiB"), Ok(1536));
        assert_eq!(parse_bytes("12GB"), Err(BadByteCount::Unit { unit: "GB".into(), input: "12GB".into() }));
        assert_eq!(parse_bytes("lots"), Err(BadByteCount::Number("lots".into())));
    }
}
