//! gpu-worker configuration.

use clap::builder::BoolishValueParser;
use clap::Parser;
use snarkflow_runtime::WorkerArgs;
use snarkflow_service::ParamsDir;

/// snarkflow gpu-worker: proves synthesized partitions with parameters kept loaded.
#[derive(Debug, Clone, Parser)]
#[command(name = "gpu-worker", version)]
pub struct Config {
    /// Groth16 parameter files (`<circuit-id>.params`, filecoin-proofs' names for the
    /// Filecoin kinds) and constraint shapes.
    #[command(flatten)]
    pub params: ParamsDir,
    /// Generate random (NOT trusted-setup) parameters for a test circuit whose file is
    /// missing, instead of failing its jobs. For development and tests only.
    #[arg(long, env = "SNARKFLOW_GENERATE_MISSING_PARAMS", value_parser = BoolishValueParser::new(), default_value_t = false)]
    pub generate_missing_params: bool,
    /// The parameter directory holds test parameters (random, under filecoin-proofs' file
    /// names): do not check files against the digests filecoin-proofs publishes. Without it
    /// (and without --generate-missing-params) a published file name with another digest is
    /// refused before its first job.
    #[arg(long, env = "SNARKFLOW_TEST_PARAMS", value_parser = BoolishValueParser::new(), default_value_t = false)]
    pub test_params: bool,
    /// A `parameters.json` (filecoin-proofs' format) to check parameter files against instead
    /// of the one filecoin-proofs 19.1 carries.
    #[arg(long, env = "SNARKFLOW_PARAMS_MANIFEST")]
    pub params_manifest: Option<std::path::PathBuf>,
    /// Circuit ids to load before reporting ready, comma-separated (e.g. `sha256-chain-b1`).
    #[arg(long, env = "SNARKFLOW_PRELOAD", value_delimiter = ',')]
    pub preload: Vec<String>,
    /// Threads decoding compact witnesses and rebuilding a, b, c from them (default: a quarter
    /// of the cores, at least 2), so preparing the next partition does not starve the prover's
    /// CPU side.
    #[arg(long, env = "SNARKFLOW_REBUILD_THREADS")]
    pub rebuild_threads: Option<usize>,
    /// The prover: `cuda-resident` (parameters and constraint shape kept in GPU memory; a, b, c,
    /// h and every MSM on the device), `cuda-supraseal`, `cuda` or `cpu`, among those this build
    /// has. Default: the first of those, in that order.
    #[arg(long, env = "SNARKFLOW_BACKEND")]
    pub backend: Option<String>,
    /// Where the resident prover keeps each circuit's key: `auto` (the fastest plan that fits
    /// the device's free memory: `resident`, then `partly-resident` with the L, A and B points
    /// in host memory, then `streamed` with all of it in host memory), or one of those three.
    /// Where none fits, a build with supraseal-c2 proves that circuit with it (the log says why).
    #[arg(long, env = "SNARKFLOW_MEMORY_PLAN", default_value = "auto", value_parser = snarkflow_prover::memory_plan::PlanRequest::parse)]
    pub memory_plan: snarkflow_prover::memory_plan::PlanRequest,
    /// Use only this GPU (sets `CUDA_VISIBLE_DEVICES` for the process): one gpu-worker per GPU,
    /// each owning its device.
    #[arg(long, env = "SNARKFLOW_GPU")]
    pub gpu: Option<u32>,
    /// Partitions prepared (fetched, decoded, a/b/c rebuilt) while another is on the GPU.
    /// Kernel work stays serialized: one partition on the device at a time. 0 = no overlap.
    #[arg(long, env = "SNARKFLOW_PREFETCH", default_value_t = 1)]
    pub prefetch: usize,
    /// The GPUs CUDA shows this process (set by `--gpu`, or by the operator), for `/readyz`.
    #[arg(long, env = "CUDA_VISIBLE_DEVICES", hide = true)]
    pub cuda_visible_devices: Option<String>,
    /// The flags every worker takes: id, lanes, urgent slots, memory budget, status address,
    /// drain, task timeout, NATS, telemetry.
    #[command(flatten)]
    pub worker: WorkerArgs,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    #[test]
    fn the_flags_are_well_formed() {
        // clap checks its definitions only in debug builds, at parse time
        super::Config::command().debug_assert();
    }

    #[test]
    fn boolean_environment_variables_take_the_usual_spellings() {
        use clap::Parser as _;
        // operators write `=1` in environment files; clap's plain bool parser takes only
        // true/false. (The only test here that sets this variable.)
        for (value, expected) in [("1", true), ("yes", true), ("true", true), ("0", false), ("false", false)] {
            std::env::set_var("SNARKFLOW_TEST_PARAMS", value);
            let config = super::Config::try_parse_from(["gpu-worker"]);
            std::env::remove_var("SNARKFLOW_TEST_PARAMS");
            assert_eq!(config.expect(value).test_params, expected, "SNARKFLOW_TEST_PARAMS={value}");
        }
        let config = super::Config::try_parse_from(["gpu-worker", "--test-params"]).unwrap();
        assert!(config.test_params, "the bare flag still means true");
    }
}
