//! A PoRep submit through cuzk's gRPC interface: the C1 envelope's bytes (what Curio sends as
//! `vanilla_proof`) checked the way the gateway did before `FilecoinRequest` (parsed into a JSON
//! tree, wrapped as the HTTP API's `input`, checked, fingerprinted over that JSON) and the way it
//! does now (`FilecoinRequest`: the envelope read straight into its fields, fingerprinted over
//! the binary fields). Seconds for each, for a sparse C1 output of the given sector size. Both
//! include filecoin-proofs' vanilla check of the C1, which is the same work.
//!
//! ```text
//! cargo run --release -p snarkflow-filecoin --example submit_input -- 32GiB
//! ```

use std::time::Instant;

use rand::SeedableRng;
use sha2::Digest as _;
use snarkflow_filecoin::{porep, FilecoinRequest};

fn main() -> anyhow::Result<()> {
    let size = std::env::args().nth(1).unwrap_or_else(|| "2KiB".into());
    let bytes =
        snarkflow_wire::parse_sector_size(&size).ok_or_else(|| anyhow::anyhow!("unknown sector size {size}"))?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let prover_id = snarkflow_filecoin::prover_id(1000);
    let c1 = snarkflow_filecoin::sparse::porep_c1(porep::registered_proof(bytes, false)?, prover_id, 7, &mut rng)?;
    let envelope = serde_json::to_vec(&porep::c1_envelope(&c1, 7))?;
    drop(c1);

    let started = Instant::now();
    let tree: serde_json::Value = serde_json::from_slice(&envelope)?;
    let input = serde_json::json!({ "miner_id": 1000, "c1": tree });
    let before = porep::parse(input.as_object().expect("an object"))?;
    let canonical = serde_json::json!({ "kind": "porep-c2", "input": input });
    let fingerprint = hex::encode(sha2::Sha256::digest(serde_json::to_vec(&canonical)?));
    let json_s = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let request = FilecoinRequest::PorepC2 { miner_id: 1000, envelope: envelope.clone() };
    let typed_fingerprint = request.fingerprint();
    let now = request.check()?;
    let typed_s = started.elapsed().as_secs_f64();

    anyhow::ensure!(before.partitions == now.partitions && before.spec == now.spec, "the two paths differ");
    anyhow::ensure!(fingerprint.len() == typed_fingerprint.len(), "fingerprints");
    println!(
        "SUBMIT_INPUT porep-c2 {size}: envelope {} B | JSON tree, JSON input, JSON fingerprint {json_s:.3} s | FilecoinRequest {typed_s:.3} s",
        envelope.len()
    );
    Ok(())
}
