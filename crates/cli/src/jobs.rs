//! `status`, `list`, `proof` and `cancel`: a job through the gateway's HTTP API.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use serde_json::Value;
use snarkflow_prover::ParamStore;

use crate::client::Client;

/// `snarkflow status`: the job as the gateway shows it.
pub(crate) async fn status(client: &Client, id: &str) -> anyhow::Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(&client.status(id).await?)?);
    Ok(ExitCode::SUCCESS)
}

/// `snarkflow list`: one line per job, newest first.
pub(crate) async fn list(client: &Client, state: Option<&str>, limit: usize) -> anyhow::Result<ExitCode> {
    let jobs = client.list(state, limit).await?;
    for job in jobs["jobs"].as_array().into_iter().flatten() {
        println!(
            "{}  {:<12} {:<22} {}",
            job["id"].as_str().unwrap_or("?"),
            job["state"].as_str().unwrap_or("?"),
            job["circuit_id"].as_str().unwrap_or("?"),
            job["priority"].as_str().unwrap_or("?")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `snarkflow proof`: the finished job's proof into `output`; with `verify_with`, every
/// partition proof checked here against that parameter directory's verifying key.
pub(crate) async fn proof(
    client: &Client,
    id: &str,
    output: &Path,
    verify_with: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let bytes = client.proof(id).await?;
    std::fs::write(output, &bytes).with_context(|| format!("writing {}", output.display()))?;
    println!("wrote {} bytes ({} partition proofs) to {}", bytes.len(), bytes.len() / 192, output.display());
    if let Some(params_dir) = verify_with {
        let job = client.status(id).await?;
        verify_locally(&job, &bytes, params_dir)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `snarkflow cancel`.
pub(crate) async fn cancel(client: &Client, id: &str) -> anyhow::Result<ExitCode> {
    let job = client.cancel(id).await?;
    println!("job {} is {}", id, job["state"].as_str().unwrap_or("?"));
    Ok(ExitCode::SUCCESS)
}

fn verify_locally(job: &Value, bytes: &[u8], params_dir: PathBuf) -> anyhow::Result<()> {
    let spec = snarkflow_circuits::parse_circuit_id(job["circuit_id"].as_str().context("job has no circuit id")?)
        .context("unknown circuit id")?;
    if snarkflow_circuits::verified_whole(spec.kind()) {
        bail!(
            "local --verify covers the synthetic kinds; the gateway verified this {} proof with filecoin-proofs \
             before marking the job done",
            spec.kind().as_str()
        );
    }
    let seed = job["seed"].as_u64().context("job has no seed")?;
    let store = ParamStore::new(params_dir, snarkflow_circuits::catalog());
    let params = store.get(&spec, false)?;
    let partitions = (bytes.len() / 192) as u32;
    let inputs = snarkflow_circuits::public_inputs(&spec, seed, partitions, None)?;
    for (i, (chunk, inputs)) in bytes.chunks(192).zip(&inputs).enumerate() {
        let proof = bellperson::groth16::Proof::<blstrs::Bls12>::read(chunk).context("malformed proof")?;
        if !snarkflow_prover::verify(&params.pvk, &proof, inputs) {
            bail!("partition {i} proof does NOT verify");
        }
    }
    println!("verified {} partition proofs locally", bytes.len() / 192);
    Ok(())
}
