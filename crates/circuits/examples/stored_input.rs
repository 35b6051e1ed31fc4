//! For a sparse C1 output of the given sector size:
//! - a PoRep job input as JSON (what gateways stored before the binary form) against the binary form
//!   (`JobInput::to_bytes`): bytes, and seconds to write and to read each;
//! - a submit through cuzk's gRPC interface: the C1 envelope's bytes (Curio's `vanilla_proof`)
//!   checked the way the gateway did before `FilecoinRequest` (a JSON tree, wrapped as the HTTP
//!   API's `input`, parsed, fingerprinted over that JSON) and the way it does now (read straight
//!   into its fields, fingerprinted over the binary fields). Both include the C1 JSON parse and
//!   filecoin-proofs' vanilla check, which are the same work.
//!
//! ```text
//! cargo run --release -p snarkflow-circuits --example stored_input -- 32GiB
//! ```

use std::time::Instant;

use rand::SeedableRng;
use sha2::Digest as _;
use snarkflow_circuits::JobInput;
use snarkflow_filecoin::{porep, FilecoinRequest};

fn main() -> anyhow::Result<()> {
    let size = std::env::args().nth(1).unwrap_or_else(|| "2KiB".into());
    let bytes =
        snarkflow_wire::parse_sector_size(&size).ok_or_else(|| anyhow::anyhow!("unknown sector size {size}"))?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let prover_id = snarkflow_filecoin::prover_id(1000);
    let c1 = snarkflow_filecoin::sparse::porep_c1(porep::registered_proof(bytes, false)?, prover_id, 7, &mut rng)?;
    let envelope = serde_json::to_vec(&porep::c1_envelope(&c1, 7))?;
    let kind = snarkflow_circuits::kind_named("porep-c2").expect("this build proves PoRep");
    let envelope_json = serde_json::json!({ "miner_id": 1000, "c1": porep::c1_envelope(&c1, 7) });
    let input = snarkflow_circuits::parse_request(kind, envelope_json.as_object().expect("an object"))?
        .input
        .expect("a PoRep job has an input");
    // the JSON form gateways once stored: the kind's input type through serde_json
    let typed = porep::parse(envelope_json.as_object().expect("an object"))?.input;
    let to_json = || serde_json::to_vec(&typed).expect("inputs serialize");
    let timed = |f: &dyn Fn() -> usize| {
        let started = Instant::now();
        let n = f();
        (n, started.elapsed().as_secs_f64())
    };
    let (json, binary) = (to_json(), input.to_bytes());
    let (_, json_write) = timed(&|| to_json().len());
    let (_, binary_write) = timed(&|| input.to_bytes().len());
    let (_, json_read) =
        timed(&|| serde_json::from_slice::<snarkflow_filecoin::PorepInput>(&json).map(|_| 0).expect("reads"));
    let (_, binary_read) = timed(&|| JobInput::from_bytes(kind, &binary).map(|_| 0).expect("reads"));
    println!("STORED_INPUT porep-c2 {size}: json {} B, write {json_write:.3} s, read {json_read:.3} s", json.len());
    println!(
        "STORED_INPUT porep-c2 {size}: binary {} B, write {binary_write:.3} s, read {binary_read:.3} s",
        binary.len()
    );
    submit(&size, envelope)
}

/// The gRPC submit both ways (module docs).
fn submit(size: &str, envelope: Vec<u8>) -> anyhow::Result<()> {
    let started = Instant::now();
    let tree: serde_json::Value = serde_json::from_slice(&envelope)?;
    let input = serde_json::json!({ "miner_id": 1000, "c1": tree });
    let before = porep::parse(input.as_object().expect("an object"))?;
    let canonical = serde_json::json!({ "kind": "porep-c2", "input": input });
    let _fingerprint = hex::encode(sha2::Sha256::digest(serde_json::to_vec(&canonical)?));
    let json_s = started.elapsed().as_secs_f64();

    let envelope_bytes = envelope.len();
    let started = Instant::now();
    let request = FilecoinRequest::PorepC2 { miner_id: 1000, envelope };
    let _fingerprint = request.fingerprint("porep-c2");
    let now = snarkflow_circuits::parse_filecoin_request(request)?;
    let typed_s = started.elapsed().as_secs_f64();
    let same_circuit = snarkflow_circuits::filecoin_sector_size(&now.spec) == Some(before.spec.sector_size);
    anyhow::ensure!(before.partitions == now.partitions && same_circuit, "the two paths differ");
    println!(
        "SUBMIT_INPUT porep-c2 {size}: envelope {envelope_bytes} B | JSON tree, JSON input, JSON fingerprint {json_s:.3} s | FilecoinRequest {typed_s:.3} s"
    );
    Ok(())
}
