//! Subcommands.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use snarkflow_service::ParamsDir;

use crate::client::Client;
use crate::params::ParamsCommand;

/// snarkflow: distributed Groth16 proving.
#[derive(Debug, Parser)]
#[command(name = "snarkflow", version)]
pub(crate) struct Cli {
    /// Gateway base URL.
    #[arg(long, global = true, env = "SNARKFLOW_GATEWAY_URL", default_value = "http://127.0.0.1:8080")]
    gateway: String,
    /// File holding the API token to send (default: `.state/api-token` here if it exists,
    /// else `~/.config/snarkflow/api-token`); `SNARKFLOW_API_TOKEN` wins over any file.
    #[arg(long, global = true, env = "SNARKFLOW_API_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// PEM CA certificate to trust for an HTTPS gateway (besides the system's).
    #[arg(long, global = true, env = "SNARKFLOW_CA_CERT")]
    ca_cert: Option<PathBuf>,
    /// The prover for local proving commands (benchmarks, `proof --verify` aside): one this
    /// build has (`cuda-resident`, `cuda-supraseal`, `cuda`, `cpu`); default the first of those.
    #[arg(long, global = true, env = "SNARKFLOW_BACKEND")]
    backend: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Submit a job; with --wait, follow it to the end.
    Submit(crate::submit::SubmitArgs),
    /// Show a job's state, progress, timings and bytes.
    Status { id: String },
    /// List jobs, newest first.
    List {
        #[arg(long)]
        state: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Download a finished job's proof (192 bytes per partition, in partition order).
    Proof {
        id: String,
        #[arg(short, long)]
        output: PathBuf,
        /// Also verify every partition proof locally against the parameter directory's
        /// verifying key and the natively recomputed public inputs.
        #[arg(long)]
        verify: bool,
        #[command(flatten)]
        params: ParamsDir,
    },
    /// Cancel a job that has not finished.
    Cancel { id: String },
    /// The seed-style waterfall and GPU-utilization report of one job or a time window.
    Waterfall(crate::waterfall::WaterfallArgs),
    /// Trace tools.
    Traces {
        #[command(subcommand)]
        command: TracesCommand,
    },
    /// Benchmarks that print numbers.
    Bench {
        #[command(subcommand)]
        command: crate::bench::BenchCommand,
    },
    /// Filecoin test inputs made with filecoin-proofs (no lotus needed).
    Filecoin {
        #[command(subcommand)]
        command: crate::filecoin::FilecoinCommand,
    },
    /// What on this host would fail a job (NATS, parameter files, the device), each with what
    /// to do about it; exits non-zero when anything would.
    Doctor(crate::doctor::DoctorArgs),
    /// Groth16 parameter files.
    Params {
        #[command(subcommand)]
        command: ParamsCommand,
    },
    /// The cluster as the gateway sees it.
    Cluster {
        #[command(subcommand)]
        command: crate::cluster::ClusterCommand,
    },
    /// On a Curio host: serve cuzk's interface where Curio dials it (a Unix socket or a
    /// loopback port) and forward every call to the gateways over mutual TLS with a token,
    /// failing over between them (docs/curio.md).
    CurioProxy(snarkflow_curio_proxy::ProxyArgs),
    /// Operator tasks: the gateway's API tokens.
    Admin {
        #[command(subcommand)]
        command: crate::admin::AdminCommand,
    },
}

#[derive(Debug, Subcommand)]
enum TracesCommand {
    /// Receive OTLP/HTTP spans (point OTEL_EXPORTER_OTLP_ENDPOINT here) and append them to a
    /// file as OTLP/JSON, for `snarkflow waterfall --otlp-file` without Jaeger.
    Collect {
        #[arg(long, default_value = "127.0.0.1:4318")]
        listen: std::net::SocketAddr,
        #[arg(long, short)]
        out: PathBuf,
    },
}

impl Cli {
    /// The parameter directory the command uses, if it uses one (`main` points
    /// filecoin-proofs at it before any thread exists).
    pub(crate) fn params_dir(&self) -> Option<&ParamsDir> {
        match &self.command {
            Command::Proof { params, .. } | Command::Params { command: ParamsCommand::Generate { params, .. } } => {
                Some(params)
            }
            Command::Bench { command } => command.params_dir(),
            _ => None,
        }
    }
}

/// Run the command; each lives in its own module.
pub(crate) async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(name) = &cli.backend {
        let backend =
            snarkflow_prover::Backend::parse(name).ok_or_else(|| anyhow::anyhow!("unknown --backend {name:?}"))?;
        snarkflow_prover::backend::select(backend)?;
    }
    let client = Client::new(&cli.gateway, crate::client::api_token(cli.token_file.as_ref())?, cli.ca_cert.as_deref())?;
    match cli.command {
        Command::Admin { command } => crate::admin::run(command),
        Command::Submit(args) => crate::submit::submit(&client, args).await,
        Command::Status { id } => crate::jobs::status(&client, &id).await,
        Command::List { state, limit } => crate::jobs::list(&client, state.as_deref(), limit).await,
        Command::Proof { id, output, verify, params } => {
            crate::jobs::proof(&client, &id, &output, verify.then(|| params.dir())).await
        }
        Command::Cancel { id } => crate::jobs::cancel(&client, &id).await,
        Command::Waterfall(args) => crate::waterfall::waterfall(args, &client).await.map(|()| ExitCode::SUCCESS),
        Command::Bench { command } => crate::bench::run(command).await,
        Command::Filecoin { command } => crate::filecoin::run(command).await,
        Command::Traces { command: TracesCommand::Collect { listen, out } } => {
            crate::waterfall::collect(listen, out).await.map(|()| ExitCode::SUCCESS)
        }
        Command::Params { command } => crate::params::run(command).await,
        Command::Doctor(args) => crate::doctor::run(args, &client).await,
        Command::Cluster { command } => crate::cluster::run(&client, command).await,
        Command::CurioProxy(args) => snarkflow_curio_proxy::run_until_signal(args).await.map(|()| ExitCode::SUCCESS),
    }
}
