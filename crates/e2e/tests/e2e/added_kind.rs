//! Adding a proof kind takes one module and one registry line: `cube`
//! (crates/circuits/src/kinds/cube.rs, registered by one line behind the `example-kind` feature,
//! which this test binary turns on) goes through the real stack like any kind. Nothing else in
//! snarkflow names it: the gateway parses its request, stores its own input type and lists it
//! by name; the synth-worker reads that input back and synthesizes its circuit; the gpu-worker
//! makes its parameters and proves it; the proof verifies against public inputs the kind
//! computes from the input.

use std::time::Duration;

use serde_json::json;
use snarkflow_e2e::{params_dir, Stack};
use snarkflow_prover::ParamStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_kind_added_as_one_module_is_proved_end_to_end() {
    let kind = snarkflow_circuits::kind_named("cube").expect("the example kind is registered in this build");
    assert!(snarkflow_circuits::KINDS.contains(&kind));
    assert!(!snarkflow_circuits::documented_kinds().contains(&kind), "test-build kinds stay out of the API doc");

    let stack = Stack::start().await.unwrap();
    let request = json!({"kind": "cube", "input": {"rounds": 64, "x": 3, "partitions": 2}});
    let id = stack.submit(&request).await.unwrap();
    let job = stack.wait_finished(&id, Duration::from_secs(300)).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["kind"], "cube");
    assert_eq!(job["circuit_id"], "cube-r64");
    let (status, proof) = stack.proof(&id).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(proof.len(), 2 * 192);

    // verified independently: the kind's public inputs from the same input, the key on disk
    let parsed = snarkflow_circuits::parse_request(kind, request["input"].as_object().unwrap()).unwrap();
    let inputs = snarkflow_circuits::public_inputs(&parsed.spec, 0, 2, parsed.input.as_ref()).unwrap();
    let params = ParamStore::new(params_dir(), snarkflow_circuits::catalog()).get(&parsed.spec, false).unwrap();
    for (chunk, inputs) in proof.chunks(192).zip(&inputs) {
        let p = bellperson::groth16::Proof::<blstrs::Bls12>::read(chunk).unwrap();
        assert!(snarkflow_prover::verify(&params.pvk, &p, inputs));
    }
    // and a wrong input does not verify: the proof is of this input's chain
    let other = json!({"rounds": 64, "x": 4, "partitions": 2});
    let other = snarkflow_circuits::parse_request(kind, other.as_object().unwrap()).unwrap();
    let wrong = snarkflow_circuits::public_inputs(&other.spec, 0, 2, other.input.as_ref()).unwrap();
    let p = bellperson::groth16::Proof::<blstrs::Bls12>::read(&proof[..192]).unwrap();
    assert!(!snarkflow_prover::verify(&params.pvk, &p, &wrong[0]));

    // bad input is the kind's to refuse, with a 4xx and its reason
    let (status, body) = stack.post_job(&json!({"kind": "cube", "input": {"rounds": 0, "x": 1}})).await.unwrap();
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("input.rounds must be between 1 and 65536"), "{body}");
}
