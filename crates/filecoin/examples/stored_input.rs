//! A PoRep job input stored as JSON (what gateways stored before) against the binary form
//! (`JobInput::to_bytes`): bytes, and seconds to write and to read each, for a sparse C1 output
//! of the given sector size.
//!
//! ```text
//! cargo run --release -p snarkflow-filecoin --example stored_input -- 32GiB
//! ```

use std::time::Instant;

use rand::SeedableRng;
use snarkflow_filecoin::{porep, JobInput, PorepInput};

fn main() -> anyhow::Result<()> {
    let size = std::env::args().nth(1).unwrap_or_else(|| "2KiB".into());
    let bytes =
        snarkflow_wire::parse_sector_size(&size).ok_or_else(|| anyhow::anyhow!("unknown sector size {size}"))?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let prover_id = snarkflow_filecoin::prover_id(1000);
    let c1 = snarkflow_filecoin::sparse::porep_c1(porep::registered_proof(bytes, false)?, prover_id, 7, &mut rng)?;
    let input = JobInput::PorepC2(PorepInput { miner_id: 1000, sector_id: 7, prover_id, c1 });
    let timed = |f: &dyn Fn() -> usize| {
        let started = Instant::now();
        let n = f();
        (n, started.elapsed().as_secs_f64())
    };
    let (json, binary) = (input.to_json(), input.to_bytes());
    let (_, json_write) = timed(&|| input.to_json().len());
    let (_, binary_write) = timed(&|| input.to_bytes().len());
    let (_, json_read) = timed(&|| JobInput::from_bytes(&json).map(|_| 0).expect("reads"));
    let (_, binary_read) = timed(&|| JobInput::from_bytes(&binary).map(|_| 0).expect("reads"));
    println!("STORED_INPUT porep-c2 {size}: json {} B, write {json_write:.3} s, read {json_read:.3} s", json.len());
    println!(
        "STORED_INPUT porep-c2 {size}: binary {} B, write {binary_write:.3} s, read {binary_read:.3} s",
        binary.len()
    );
    Ok(())
}
