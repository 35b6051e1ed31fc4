//! synth-worker configuration.

use clap::Parser;
use snarkflow_runtime::WorkerArgs;
use snarkflow_wire::PartitionEncoding;

/// Where witnesses come from (`--witness`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WitnessSource {
    /// The native generator where the kind has one, the gadgets elsewhere.
    Native,
    /// bellperson's gadgets for every kind.
    Gadgets,
}

impl WitnessSource {
    pub fn as_str(self) -> &'static str {
        match self {
            WitnessSource::Native => "native",
            WitnessSource::Gadgets => "gadgets",
        }
    }
}

/// snarkflow synth-worker: builds and synthesizes partition circuits.
#[derive(Debug, Clone, Parser)]
#[command(name = "synth-worker", version)]
pub struct Config {
    /// Partitions synthesized at once. A native witness (PoRep, SnapDeals, PoSt) spreads over
    /// all cores (its challenges in parallel), so a few slots keep a host busy; gadget synthesis
    /// (`--witness gadgets`, the test kinds) is single-threaded, one slot per core you give
    /// this worker.
    #[arg(long, env = "SNARKFLOW_SYNTH_CONCURRENCY", default_value_t = 1)]
    pub concurrency: usize,
    /// How partitions travel to the provers: `compact` (the witness only; provers rebuild
    /// a, b, c from the circuit's shape) or `raw` (the full synthesized partition, ~4× the
    /// witness in field elements alone).
    #[arg(long, env = "SNARKFLOW_WIRE_FORMAT", default_value = "compact")]
    pub wire_format: PartitionEncoding,
    /// Where a partition's witness comes from (compact wire format): `native` computes it
    /// directly for the kinds that have a native generator (PoRep, SnapDeals, WindowPoSt,
    /// WinningPoSt) and uses the gadgets for the others (the synthetic test kinds); `gadgets` runs bellperson's gadgets for every kind (the
    /// reference path).
    #[arg(long, env = "SNARKFLOW_WITNESS", value_enum, default_value = "native")]
    pub witness: WitnessSource,
    /// Also compute every Nth native witness with the gadgets and compare the two (0: never;
    /// 1: every partition, at about twice the witness-only cost). A difference fails the
    /// partition with the first differing variable, never ships either witness.
    #[arg(long, env = "SNARKFLOW_NATIVE_CHECK_EVERY", default_value_t = 0)]
    pub native_check_every: u64,
    /// Record these circuits' constraint shapes at start, before taking work (comma-separated
    /// circuit ids: `winning-post-32GiB,window-post-32GiB`), so the first job of each does not
    /// wait for it (a 32 GiB WinningPoSt's shape is seconds; PoRep's minutes).
    #[arg(long, env = "SNARKFLOW_PRELOAD_SHAPES", value_delimiter = ',')]
    pub preload_shapes: Vec<String>,
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
}
