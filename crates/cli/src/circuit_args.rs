//! How the command line names a circuit: a synthetic kind and its size, or a Filecoin kind
//! and its input (a C1 file, or a request `input` JSON file).

use std::path::PathBuf;

use anyhow::{bail, Context as _};
use serde_json::{json, Value};
use snarkflow_wire::{CircuitSpec, JobKind};

/// Where a Filecoin job's `input` comes from (submit, bench hop).
#[derive(Debug, clap::Args)]
pub(crate) struct FilecoinInputArgs {
    /// porep-c2: the C1 file as Curio/lotus-bench write it (`{"SectorNum", "Phase1Out",
    /// "SectorSize"}`), or the bare C1 JSON (then give --sector-num).
    #[arg(long)]
    c1: Option<PathBuf>,
    /// porep-c2: the storage provider's actor id (1000 for f01000).
    #[arg(long)]
    miner_id: Option<u64>,
    #[arg(long)]
    sector_num: Option<u64>,
    /// Other Filecoin kinds: a JSON file holding the request's whole `input` object.
    #[arg(long, conflicts_with = "c1")]
    input: Option<PathBuf>,
}

impl FilecoinInputArgs {
    /// The request `input`, or `None` when neither --c1 nor --input was given.
    pub(crate) fn request_input(&self) -> anyhow::Result<Option<Value>> {
        if let Some(c1) = &self.c1 {
            return porep_input(c1, self.miner_id, self.sector_num).map(Some);
        }
        match &self.input {
            Some(path) => {
                let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
                Ok(Some(serde_json::from_slice(&text).with_context(|| format!("{} is not JSON", path.display()))?))
            }
            None => Ok(None),
        }
    }
}

/// The circuit of a job or benchmark: a synthetic kind and its size, or a Filecoin kind and its input.
#[derive(Debug, clap::Args)]
pub(crate) struct CircuitArgs {
    /// sha256-chain, dense-chain, porep-c2, snap-update, window-post, winning-post.
    #[arg(long)]
    pub(crate) kind: String,
    #[command(flatten)]
    pub(crate) filecoin: FilecoinInputArgs,
    /// sha256-chain: SHA-256 compressions per partition.
    #[arg(long)]
    pub(crate) blocks: Option<u32>,
    /// dense-chain: constraints per partition.
    #[arg(long)]
    pub(crate) constraints: Option<u32>,
}

impl CircuitArgs {
    /// The circuit, the parsed Filecoin input (checked as the gateway checks it) and how many
    /// partitions that input has (`u32::MAX` for the synthetic kinds: any seed is one).
    pub(crate) fn resolve(&self) -> anyhow::Result<(CircuitSpec, Option<snarkflow_circuits::JobInput>, u32)> {
        match snarkflow_circuits::kind_named(&self.kind) {
            Some(k) if snarkflow_circuits::takes_input(k) => {
                let request = self
                    .filecoin
                    .request_input()?
                    .with_context(|| format!("{} needs --c1 FILE --miner-id N or --input FILE", self.kind))?;
                let obj = request.as_object().context("the input is not a JSON object")?;
                let parsed = snarkflow_circuits::parse_request(k, obj)?;
                Ok((parsed.spec, parsed.input, parsed.partitions))
            }
            _ => Ok((spec_of(&self.kind, self.blocks, self.constraints)?, None, u32::MAX)),
        }
    }
}

/// A Filecoin circuit from `--sector-size` (and `--synthetic`): the circuit id its kind renders
/// for them (`porep-c2-synthetic-32GiB`), read back by the registry.
pub(crate) fn filecoin_spec_of(
    kind: JobKind,
    sector_size: Option<&str>,
    synthetic: bool,
) -> anyhow::Result<CircuitSpec> {
    let size = sector_size.with_context(|| format!("--sector-size is required for {kind}"))?;
    let sector_size = snarkflow_wire::parse_sector_size(size)
        .with_context(|| format!("unknown sector size {size:?} (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"))?;
    let size = snarkflow_wire::sector_size_name(sector_size).context("a published sector size has a name")?;
    let id = if synthetic { format!("{kind}-synthetic-{size}") } else { format!("{kind}-{size}") };
    let spec = snarkflow_circuits::parse_circuit_id(&id);
    let spec = spec.filter(|s| s.kind() == kind && snarkflow_circuits::filecoin_sector_size(s).is_some());
    spec.with_context(|| {
        if synthetic {
            format!("{kind} has no Synthetic PoRep circuit of {size} (--synthetic is for porep-c2)")
        } else {
            format!("{kind} is not a Filecoin kind with a sector size")
        }
    })
}

/// The request `input` for `porep-c2` from a C1 file: the envelope is passed through
/// unchanged; a bare C1 JSON goes as `c1_raw` with its sector number.
pub(crate) fn porep_input(
    c1: &std::path::Path,
    miner_id: Option<u64>,
    sector_num: Option<u64>,
) -> anyhow::Result<Value> {
    let text = std::fs::read(c1).with_context(|| format!("reading {}", c1.display()))?;
    let file: Value = serde_json::from_slice(&text).with_context(|| format!("{} is not JSON", c1.display()))?;
    let miner_id = miner_id.context("--miner-id is required with --c1")?;
    if file.get("Phase1Out").is_some() {
        Ok(json!({ "miner_id": miner_id, "c1": file }))
    } else {
        let sector_num = sector_num.context("--sector-num is required for a bare C1 JSON (no envelope)")?;
        Ok(json!({ "miner_id": miner_id, "sector_num": sector_num, "c1_raw": file }))
    }
}

/// A synthetic kind's circuit from its size flag: `--blocks N` is the id `<kind>-bN`,
/// `--constraints N` is `<kind>-cN` (the renderings of sha256-chain and dense-chain).
pub(crate) fn spec_of(kind: &str, blocks: Option<u32>, constraints: Option<u32>) -> anyhow::Result<CircuitSpec> {
    let known = || {
        let names: Vec<&str> = snarkflow_circuits::KINDS.iter().map(|k| k.as_str()).collect();
        format!("unknown kind {kind:?} ({})", names.join(", "))
    };
    let kind = snarkflow_circuits::kind_named(kind).with_context(known)?;
    if snarkflow_circuits::kind_info(kind).is_some_and(|k| k.filecoin) {
        bail!("{kind} needs --sector-size");
    }
    let (flag, prefix, size, other_flag, other_prefix) = match (blocks, constraints) {
        (Some(blocks), None) => ("--blocks", 'b', blocks, "--constraints", 'c'),
        (None, Some(constraints)) => ("--constraints", 'c', constraints, "--blocks", 'b'),
        (Some(_), Some(_)) => bail!("give one of --blocks and --constraints"),
        (None, None) => bail!("{kind} needs its size: --blocks for sha256-chain, --constraints for dense-chain"),
    };
    let spec = |prefix: char| {
        snarkflow_circuits::parse_circuit_id(&format!("{kind}-{prefix}{size}")).filter(|s| s.kind() == kind)
    };
    if let Some(spec) = spec(prefix) {
        return Ok(spec);
    }
    if spec(other_prefix).is_some() {
        bail!("{kind} is sized by {other_flag}, not {flag}");
    }
    bail!("{kind} has no circuit of {flag} {size}: out of its range, or not a size it takes (params generate also takes --circuit <id>)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_flags_name_a_synthetic_circuit_or_say_which_flag_the_kind_takes() {
        assert_eq!(spec_of("dense-chain", None, Some(8)).unwrap().circuit_id(), "dense-chain-c8");
        assert_eq!(spec_of("sha256-chain", Some(2), None).unwrap().circuit_id(), "sha256-chain-b2");
        let e = spec_of("sha256-chain", None, Some(8)).unwrap_err().to_string();
        assert!(e.contains("sha256-chain is sized by --blocks, not --constraints"), "{e}");
        let e = spec_of("dense-chain", None, Some(u32::MAX)).unwrap_err().to_string();
        assert!(e.contains("dense-chain has no circuit of --constraints 4294967295"), "{e}");
        let e = spec_of("porep-c2", Some(1), None).unwrap_err().to_string();
        assert!(e.contains("porep-c2 needs --sector-size"), "{e}");
        assert!(spec_of("nope", Some(1), None).unwrap_err().to_string().contains("unknown kind \"nope\""));
        let spec = filecoin_spec_of(JobKind::new("porep-c2"), Some("32GiB"), true).unwrap();
        assert_eq!(spec.circuit_id(), "porep-c2-synthetic-32GiB");
        let e = filecoin_spec_of(JobKind::new("window-post"), Some("2KiB"), true).unwrap_err().to_string();
        assert!(e.contains("window-post has no Synthetic PoRep circuit"), "{e}");
    }
}
