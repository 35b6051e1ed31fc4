//! `--lanes`, as both workers take it: which priority lanes a worker pulls from, so an operator
//! can run a small always-on pool for PoSt (WinningPoSt's default lane is `critical`,
//! WindowPoSt's `high`) beside an autoscaled sealing pool (`normal,low`: PoRep and SnapDeals).

use snarkflow_wire::Priority;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct LaneArgs {
    /// Pull only these lanes (comma-separated: critical, high, normal, low). Default: all.
    #[arg(long, env = "SNARKFLOW_LANES", value_delimiter = ',', value_parser = parse_lane)]
    pub lanes: Vec<Priority>,
}

fn parse_lane(s: &str) -> Result<Priority, NotALane> {
    Priority::parse(s.trim()).ok_or_else(|| NotALane(s.to_owned()))
}

/// A `--lanes` entry that names no lane.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a lane: critical, high, normal or low")]
pub(crate) struct NotALane(String);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        lanes: LaneArgs,
    }

    #[test]
    fn lanes_parse_as_a_list_and_unknown_names_are_refused() {
        let cli = Cli::try_parse_from(["w", "--lanes", "critical,high"]).unwrap();
        assert_eq!(cli.lanes.lanes, vec![Priority::Critical, Priority::High]);
        assert!(Cli::try_parse_from(["w"]).unwrap().lanes.lanes.is_empty(), "all by default");
        let err = Cli::try_parse_from(["w", "--lanes", "urgent"]).err().unwrap().to_string();
        assert!(err.contains("not a lane"), "{err}");
    }
}
