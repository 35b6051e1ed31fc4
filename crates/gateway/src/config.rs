//! Gateway configuration: every flag also reads an environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::Parser;
use snarkflow_service::{NatsArgs, ParamsDir, TelemetryArgs};

/// Default listen address: loopback, so a fresh install exposes nothing.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default request body limit: a 32 GiB C1 output is ~70 MB as base64, with room.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 96 * 1024 * 1024;

/// Default submits in flight: 32 × 96 MiB bodies ≈ 3 GiB at most, more than a CPU core each.
pub(crate) const DEFAULT_MAX_CONCURRENT_SUBMITS: usize = 32;

/// Default bound on a test-kind job: 2^24 constraints in all (a 16-partition 2^20 dense
/// chain), a few GiB of witnesses; a 2^26 x 64 request (128 GiB of witnesses) is refused.
pub(crate) const DEFAULT_MAX_TEST_JOB_CONSTRAINTS: u64 = 1 << 24;

/// snarkflow gateway: HTTP API for submitting and following proving jobs.
#[derive(Debug, Clone, Parser)]
#[command(name = "gateway", version)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "SNARKFLOW_GATEWAY_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Submits handled at once (their bodies read and checked); more wait, holding only their
    /// headers. With --max-body-bytes it bounds the memory request bodies take.
    #[arg(long, env = "SNARKFLOW_MAX_CONCURRENT_SUBMITS", default_value_t = DEFAULT_MAX_CONCURRENT_SUBMITS)]
    pub max_concurrent_submits: usize,
    /// Submits of one tenant handled at once; more are answered 429 at once (so one tenant
    /// cannot hold every submit slot). 0: half of --max-concurrent-submits, at least 1.
    #[arg(long, env = "SNARKFLOW_MAX_CONCURRENT_SUBMITS_PER_TENANT", default_value_t = 0)]
    pub max_concurrent_submits_per_tenant: usize,
    /// Whole-proof verifications (Filecoin jobs, before `done`) run at once; one more is kept
    /// for critical jobs. 0: half the cores, at least one.
    #[arg(long, env = "SNARKFLOW_VERIFY_SLOTS", default_value_t = 0)]
    pub verify_slots: usize,
    /// Largest accepted request body in bytes; larger bodies get 413.
    #[arg(long, env = "SNARKFLOW_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Where the Filecoin verifying keys (`v28-*.vk`) are, used to verify every Filecoin
    /// proof before its job is done.
    #[command(flatten)]
    pub params: ParamsDir,
    /// The parameter directory holds test parameters (random, under filecoin-proofs' names): do
    /// not check the verifying keys against the digests filecoin-proofs publishes. Without it a
    /// published name with another digest is refused (503) instead of verifying proofs against
    /// a key the chain does not use.
    #[arg(long, env = "SNARKFLOW_TEST_PARAMS", value_parser = BoolishValueParser::new())]
    pub test_params: bool,
    /// A `parameters.json` (filecoin-proofs' format) to check verifying keys against instead of
    /// the one filecoin-proofs 19.1 carries.
    #[arg(long, env = "SNARKFLOW_PARAMS_MANIFEST")]
    pub params_manifest: Option<PathBuf>,
    /// The API tokens file (`snarkflow admin token create` writes it); re-read when it
    /// changes. Default `$SNARKFLOW_TOKENS_FILE`, else `~/.config/snarkflow/tokens.json`.
    #[arg(long, env = "SNARKFLOW_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,
    /// Serve without authentication: every caller is an admin. For local experiments only.
    #[arg(long, env = "SNARKFLOW_INSECURE_NO_AUTH", value_parser = BoolishValueParser::new())]
    pub insecure_no_auth: bool,
    /// Accept the synthetic test kinds (sha256-chain, dense-chain); off in production.
    #[arg(long, env = "SNARKFLOW_ENABLE_TEST_KINDS", value_parser = BoolishValueParser::new())]
    pub enable_test_kinds: bool,
    /// The deadline of a KIND job whose request names none, instead of the kind's own
    /// (WinningPoSt 30 s, WindowPoSt 30 min, PoRep and SnapDeals 6 h, test kinds 1 h):
    /// `KIND=SECONDS`, repeatable or comma-separated.
    #[arg(long = "default-deadline", env = "SNARKFLOW_DEFAULT_DEADLINE", value_delimiter = ',')]
    pub default_deadlines: Vec<crate::jobs::validate::DefaultDeadline>,
    /// Largest test-kind job, in constraints over all its partitions.
    #[arg(long, env = "SNARKFLOW_MAX_TEST_JOB_CONSTRAINTS", default_value_t = DEFAULT_MAX_TEST_JOB_CONSTRAINTS)]
    pub max_test_job_constraints: u64,
    /// Jobs one tenant may have queued or running at once (0: no limit).
    #[arg(long, env = "SNARKFLOW_TENANT_MAX_JOBS", default_value_t = 256)]
    pub tenant_max_jobs: u64,
    /// Unproved partitions one tenant may have in flight at once (0: no limit).
    #[arg(long, env = "SNARKFLOW_TENANT_MAX_PARTITIONS", default_value_t = 1024)]
    pub tenant_max_partitions: u64,
    /// Submits per minute per tenant, with bursts up to the same number (0: no limit).
    #[arg(long, env = "SNARKFLOW_TENANT_SUBMITS_PER_MINUTE", default_value_t = 600)]
    pub tenant_submits_per_minute: u32,
    /// Seconds a request may take, body upload included, before it is answered 408.
    #[arg(long, env = "SNARKFLOW_REQUEST_TIMEOUT_SECS", default_value_t = 300)]
    pub request_timeout_secs: u64,
    /// Seconds between ledger passes: gauges, tenants' in-flight counts, failing jobs past
    /// their deadline, finishing half-done fan-outs. Each pass reads every record.
    #[arg(long, env = "SNARKFLOW_LEDGER_PASS_SECS", default_value_t = 15)]
    pub ledger_pass_secs: u64,
    /// Constraints one GPU proves per second, for the `snarkflow_backlog_gpu_seconds` gauge
    /// autoscalers follow (default: an H200 with the resident prover, 32 GiB PoRep).
    #[arg(long, env = "SNARKFLOW_GPU_CONSTRAINTS_PER_SECOND", default_value_t = crate::ledger::backlog::DEFAULT_GPU_CONSTRAINTS_PER_SECOND)]
    pub gpu_constraints_per_second: u64,
    /// Share of the job ledger (percent) kept free of new jobs: only the critical lane
    /// (WinningPoSt) may use it. New jobs are refused (503 storage_full) earlier still when the
    /// unfinished jobs may need the room to record their proofs.
    #[arg(long, env = "SNARKFLOW_LEDGER_HEADROOM_PERCENT", default_value_t = crate::ledger::room::DEFAULT_HEADROOM_PERCENT)]
    pub ledger_headroom_percent: u8,
    /// Seconds an object whose job has no record is kept before the ledger pass deletes it
    /// (the input of a submit that failed after storing it). Must exceed
    /// --request-timeout-secs: a submit still in flight stores its input before its record.
    #[arg(long, env = "SNARKFLOW_ORPHAN_GRACE_SECS", default_value_t = 900)]
    pub orphan_grace_secs: u64,
    /// PEM certificate chain to serve HTTPS with (with --tls-key).
    #[arg(long, env = "SNARKFLOW_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "SNARKFLOW_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// cuzk's gRPC interface for Curio, and how it protects itself.
    #[command(flatten)]
    pub grpc: crate::grpc::GrpcArgs,
    #[command(flatten)]
    pub nats: NatsArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    #[test]
    fn the_flags_are_well_formed() {
        // clap checks its definitions only in debug builds, at parse time: a flattened group
        // whose argument id repeats one of ours (`listen`) would pass in a release build
        super::Config::command().debug_assert();
    }
}
