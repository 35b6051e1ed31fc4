//! `snarkflow bench stock-c2`: the stock path, filecoin-proofs' own C2, for comparison.

use std::time::Instant;

/// `snarkflow bench stock-c2`: filecoin-proofs' own C2, in this process, over a stream of
/// inputs (`runs` passes). Returns how many proofs failed (filecoin-proofs verifies its own
/// result and errors out on an invalid proof).
pub(super) fn stock_c2(
    inputs: &[serde_json::Value],
    runs: usize,
    params_dir: &std::path::Path,
) -> anyhow::Result<usize> {
    snarkflow_filecoin::check_parameter_dir(params_dir)?;
    let mut parsed = Vec::new();
    for input in inputs {
        let obj = input.as_object().ok_or_else(|| anyhow::anyhow!("input is not an object"))?;
        let job = snarkflow_filecoin::porep::parse(obj)?;
        let spec = snarkflow_circuits::circuit_spec::<snarkflow_circuits::filecoin_kinds::Porep>(&job.spec);
        parsed.push((spec, job.input));
    }
    println!(
        "stock seal_commit_phase2 ({} build): {} inputs x {} runs, {}, parameters {}",
        snarkflow_prover::backend_name(),
        parsed.len(),
        runs.max(1),
        parsed[0].0.circuit_id(),
        params_dir.display()
    );
    let (mut seconds, mut failed) = (Vec::new(), 0);
    let started = Instant::now();
    for run in 0..runs.max(1) {
        for (spec, porep) in &parsed {
            match snarkflow_filecoin::stock::seal_commit_phase2(porep) {
                Ok(out) => {
                    println!(
                        "run {run} sector {}: {:.3} s, {} bytes, verified by filecoin-proofs ({})",
                        porep.sector_id,
                        out.seconds,
                        out.proof.len(),
                        spec.circuit_id()
                    );
                    seconds.push(out.seconds);
                }
                Err(e) => {
                    failed += 1;
                    println!("run {run} sector {}: FAILED: {e}", porep.sector_id);
                }
            }
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let done = seconds.len();
    let first = seconds.first().copied().unwrap_or(0.0);
    seconds.sort_by(f64::total_cmp);
    let median = seconds.get(seconds.len() / 2).copied().unwrap_or(0.0);
    println!(
        "STOCK proofs {done} failed {failed} wall {wall:.2} s => {:.1} proofs/min; median {median:.3} s per proof; first (incl. parameter load) {first:.3} s",
        60.0 * done as f64 / wall
    );
    Ok(failed)
}
