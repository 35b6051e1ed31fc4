//! Curio's view of snarkflow: the gateway's `cuzk.v1.ProvingEngine` gRPC interface, spoken by
//! a client generated from the .proto apart from the server. Every Filecoin kind is sent the
//! way Curio sends it (a sealed 2 KiB sector's C1 envelope, raw commitments, ABI numbers for
//! the registered proofs) and must come back COMPLETED with the bytes Curio verifies.

use std::time::Duration;

use base64::Engine as _;
use filecoin_proofs_api::RegisteredSealProof;
use serde_json::Value;
use snarkflow_e2e::cuzk::{await_proof_response::Status as ProofStatus, ProofKind};
use snarkflow_e2e::{cuzk, cuzk_tcp, cuzk_unix, filecoin_env, free_port, params_dir, CuzkClient, Stack};
use snarkflow_filecoin::fixtures::seal_sector;
use snarkflow_prover::ParamStore;
use snarkflow_wire::CircuitSpec;

pub(super) const MINER: u64 = 1000;
/// go-state-types ABI numbers, as Curio sends them.
const SEAL_2KIB_V1_1: u64 = 5;
const WINNING_2KIB_V1: u64 = 0;
const WINDOW_2KIB_V1_1: u64 = 10;
const UPDATE_2KIB_V1: u64 = 0;

pub(super) async fn params_for(specs: &[CircuitSpec]) {
    let specs = specs.to_vec();
    tokio::task::spawn_blocking(move || {
        let store = ParamStore::new(params_dir(), snarkflow_circuits::catalog());
        for spec in specs {
            store.generate(&spec, false).unwrap();
        }
    })
    .await
    .unwrap();
}

fn b64_list(v: &Value) -> Vec<Vec<u8>> {
    let b64 = base64::engine::general_purpose::STANDARD;
    v.as_array().unwrap().iter().map(|p| b64.decode(p.as_str().unwrap()).unwrap()).collect()
}

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

fn porep_request(envelope: &Value, sector: u64) -> cuzk::SubmitProofRequest {
    cuzk::SubmitProofRequest {
        request_id: format!("porep-{MINER}-{sector}"),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: SEAL_2KIB_V1_1,
        priority: cuzk::Priority::Normal as i32,
        vanilla_proof: serde_json::to_vec(envelope).unwrap(),
        sector_number: sector,
        miner_id: MINER,
        ..Default::default()
    }
}

/// A 2 KiB WinningPoSt as Curio sends it, from a fixture's request input.
pub(super) fn winning_request(id: &str, input: &Value, randomness: [u8; 32]) -> cuzk::SubmitProofRequest {
    cuzk::SubmitProofRequest {
        request_id: format!("winpost-{MINER}-{id}"),
        proof_kind: ProofKind::WinningPost as i32,
        sector_size: 2048,
        registered_proof: WINNING_2KIB_V1,
        priority: cuzk::Priority::Critical as i32,
        vanilla_proofs: b64_list(&input["vanilla_proofs"]),
        miner_id: MINER,
        randomness: randomness.to_vec(),
        ..Default::default()
    }
}

async fn prove(client: &mut CuzkClient, submit: cuzk::SubmitProofRequest) -> cuzk::AwaitProofResponse {
    client.prove(cuzk::ProveRequest { submit: Some(submit) }).await.unwrap().into_inner().result.unwrap()
}

pub(super) fn grpc_flags(listen: &str) -> Vec<String> {
    vec!["--grpc-listen".into(), listen.into()]
}

#[ignore = "slow tier: a CPU PoRep and every other kind (~140 s on 2 cores)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curio_proves_every_kind_through_the_cuzk_interface() {
    filecoin_env();
    let dir = tempfile::tempdir().unwrap();
    let sector = {
        let dir = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            seal_sector(&dir, RegisteredSealProof::StackedDrg2KiBV1_1, MINER, 7, 1).unwrap()
        })
        .await
        .unwrap()
    };
    let randomness = [7u8; 32];
    let (window, winning, snap) = {
        let (s, d) = (sector.clone(), dir.path().join("snap"));
        tokio::task::spawn_blocking(move || {
            (
                s.post_request_input(true, randomness).unwrap(),
                s.post_request_input(false, randomness).unwrap(),
                s.snap_request_input(&d, 4).unwrap(),
            )
        })
        .await
        .unwrap()
    };
    params_for(&[
        snarkflow_circuits::circuit("porep-c2-2KiB"),
        snarkflow_circuits::circuit("window-post-2KiB"),
        snarkflow_circuits::circuit("winning-post-2KiB"),
        snarkflow_circuits::circuit("snap-update-2KiB"),
    ])
    .await;
    let addr = format!("127.0.0.1:{}", free_port());
    let flags = grpc_flags(&addr);
    let stack = Stack::start_with_gateway(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await.unwrap();
    let mut client = cuzk_tcp(&addr).await.unwrap();

    // PoRep: the C1 envelope as Curio sends it; the proof must pass filecoin-proofs' verify_seal
    let porep = porep_request(&sector.envelope(), 7);
    let result = prove(&mut client, porep.clone()).await;
    assert_eq!(result.status, ProofStatus::Completed as i32, "{result:?}");
    assert_eq!(result.proof.len(), 192, "2 KiB PoRep has one partition");
    assert!(
        result.gpu_compute_ms > 0 && result.synthesis_ms > 0 && result.total_ms >= result.gpu_compute_ms,
        "{result:?}"
    );
    let c1 = &sector.c1;
    let verify = |sector_num: u64, proof: &[u8]| {
        filecoin_proofs_api::seal::verify_seal(
            c1.registered_proof,
            c1.comm_r,
            c1.comm_d,
            sector.prover_id,
            sector_num.into(),
            c1.ticket,
            c1.seed,
            proof,
        )
        .unwrap_or(false)
    };
    assert!(verify(7, &result.proof), "verify_seal rejected the proof the cuzk interface returned");
    assert!(!verify(8, &result.proof));
    println!(
        "porep via Prove: queue {} ms, synthesis {} ms, gpu {} ms, total {} ms",
        result.queue_wait_ms, result.synthesis_ms, result.gpu_compute_ms, result.total_ms
    );

    // Curio retries with the same request_id: the same job, not a second proof
    let again = client.submit_proof(porep.clone()).await.unwrap().into_inner();
    assert_eq!(again.job_id, result.job_id, "a retried request_id made another job");
    let listed: Value = stack.http.get(format!("{}/v1/jobs", stack.base)).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1, "{listed}");
    // the same request_id for a different request is refused, never answered with that proof
    let mut other = porep.clone();
    other.proof_kind = ProofKind::WinningPost as i32;
    other.registered_proof = WINNING_2KIB_V1;
    other.randomness = randomness.to_vec();
    other.vanilla_proofs = b64_list(&winning["vanilla_proofs"]);
    let refused = client.submit_proof(other).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::AlreadyExists, "{refused:?}");
    assert!(refused.message().contains("different request"), "{refused:?}");
    // bad input: the HTTP API's message, as INVALID_ARGUMENT, and nothing queued
    let mut wrong_sector = porep.clone();
    wrong_sector.request_id = "porep-1000-8".into();
    wrong_sector.sector_number = 8;
    let refused = client.submit_proof(wrong_sector).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    assert!(refused.message().contains("SectorNum 7"), "{refused:?}");

    // SnapDeals, WindowPoSt, WinningPoSt as Curio sends them (raw bytes, ABI numbers); the
    // SnapDeals one in the shape of Curio's Snark Market (PSProve): a `ps-snap-` id and
    // `sector_size` left 0
    let snap_request = cuzk::SubmitProofRequest {
        request_id: format!("ps-snap-{MINER}-7-31337"),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size: 0,
        registered_proof: UPDATE_2KIB_V1,
        priority: cuzk::Priority::Normal as i32,
        vanilla_proofs: b64_list(&snap["vanilla_proofs"]),
        sector_number: 7,
        miner_id: MINER,
        comm_r_old: unhex(&snap["comm_r_old"]),
        comm_r_new: unhex(&snap["comm_r_new"]),
        comm_d_new: unhex(&snap["comm_d_new"]),
        ..Default::default()
    };
    let window_request = cuzk::SubmitProofRequest {
        request_id: format!("wdpost-{MINER}-0-0707"),
        proof_kind: ProofKind::WindowPostPartition as i32,
        sector_size: 2048,
        registered_proof: WINDOW_2KIB_V1_1,
        priority: cuzk::Priority::High as i32,
        vanilla_proofs: b64_list(&window["vanilla_proofs"]),
        miner_id: MINER,
        randomness: randomness.to_vec(),
        partition_index: 0,
        ..Default::default()
    };
    let winning_request = winning_request("0707", &winning, randomness);
    for (what, request, priority) in
        [("snap", snap_request, "normal"), ("window", window_request, "high"), ("winning", winning_request, "critical")]
    {
        let result = prove(&mut client, request).await;
        assert_eq!(result.status, ProofStatus::Completed as i32, "{what}: {result:?}");
        let job = stack.job(&result.job_id).await.unwrap();
        assert_eq!(job["priority"], priority, "{what}: {job}");
        // exactly what the HTTP API returns for the job: the bytes the gateway verified
        let (_, http_proof) = stack.proof(&result.job_id).await.unwrap();
        assert_eq!(result.proof, http_proof, "{what}");
        assert_eq!(result.proof.len() % 192, 0, "{what}");
    }

    // GetStatus: the CPU gpu-worker, the parameters it holds, the finished jobs. Its counts
    // come from the gateway's ledger index, which follows the ledger through a KV watch: the
    // last job's `done` may reach it a moment after Prove has answered.
    let mut status = client.get_status(cuzk::GetStatusRequest {}).await.unwrap().into_inner();
    for _ in 0..50 {
        let in_queue: u32 = status.queues.iter().map(|q| q.pending + q.in_progress).sum();
        if status.total_proofs_completed == 4 && in_queue == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        status = client.get_status(cuzk::GetStatusRequest {}).await.unwrap().into_inner();
    }
    assert!(status.gpus.iter().any(|g| g.name.contains("gpu-1")), "{status:?}");
    assert!(status.loaded_srs.iter().any(|s| s.circuit_id == "porep-c2-2KiB" && s.size_bytes > 0), "{status:?}");
    assert_eq!(status.total_proofs_completed, 4, "{status:?}");
    let in_queue: u32 = status.queues.iter().map(|q| q.pending + q.in_progress).sum();
    assert_eq!(in_queue, 0, "{status:?}");
    let metrics = client.get_metrics(cuzk::GetMetricsRequest {}).await.unwrap().into_inner();
    assert!(metrics.prometheus_text.contains("snarkflow_jobs_submitted_total"), "{}", metrics.prometheus_text);
}

#[ignore = "slow tier: CPU PoRep proofs (~115 s on 2 cores)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn await_times_out_cancel_stops_the_job_and_a_unix_socket_serves() {
    filecoin_env();
    let spec = snarkflow_circuits::circuit("porep-c2-2KiB");
    params_for(&[spec]).await;
    let prover_id = snarkflow_filecoin::prover_id(MINER);
    let c1 = tokio::task::spawn_blocking(move || {
        snarkflow_filecoin::sparse::porep_c1(
            RegisteredSealProof::StackedDrg2KiBV1_1,
            prover_id,
            21,
            &mut rand::thread_rng(),
        )
    })
    .await
    .unwrap()
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let mut flags = grpc_flags(&format!("unix://{}", socket.display()));
    flags.push("--grpc-enable-control".into());
    let stack = Stack::start_with_gateway(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await.unwrap();
    let mut client = cuzk_unix(&socket).await.unwrap();

    // the gpu-worker is listed once it has probed its device and connected
    let status = gpu_listed(&mut client).await;
    assert_eq!(status.gpus.len(), 1, "{status:?}");
    assert_eq!(status.gpus[0].name, format!("cpu (gpu-1 on {})", snarkflow_telemetry::host_name()));

    // parameters loaded and dropped on request, by cuzk's circuit names
    let evicted = client.evict_srs(cuzk::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(!evicted.was_loaded, "{evicted:?}");
    let preloaded =
        client.preload_srs(cuzk::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(!preloaded.already_loaded, "{preloaded:?}");
    let again =
        client.preload_srs(cuzk::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(again.already_loaded, "{again:?}");
    let status = client.get_status(cuzk::GetStatusRequest {}).await.unwrap().into_inner();
    assert!(status.loaded_srs.iter().any(|s| s.circuit_id == "porep-c2-2KiB"), "{status:?}");
    let unknown = client.preload_srs(cuzk::PreloadSrsRequest { circuit_id: "porep-16g".into() }).await.unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::InvalidArgument, "{unknown:?}");
    // only circuits the cluster serves: a test circuit past the job bound (2^24 constraints) is
    // not built, and one past what its kind makes at all is not a circuit
    let huge =
        client.preload_srs(cuzk::PreloadSrsRequest { circuit_id: "dense-chain-c67108864".into() }).await.unwrap_err();
    assert_eq!(huge.code(), tonic::Code::InvalidArgument, "{huge:?}");
    assert!(huge.message().contains("max-test-job-constraints"), "{huge:?}");
    let beyond =
        client.preload_srs(cuzk::PreloadSrsRequest { circuit_id: "dense-chain-c4000000000".into() }).await.unwrap_err();
    assert_eq!(beyond.code(), tonic::Code::InvalidArgument, "{beyond:?}");
    assert!(beyond.message().contains("unknown circuit_id"), "{beyond:?}");

    // AwaitProof with a timeout answers TIMEOUT and the job keeps running
    let envelope = snarkflow_filecoin::porep::c1_envelope(&c1, 21);
    let job_id = client.submit_proof(porep_request(&envelope, 21)).await.unwrap().into_inner().job_id;
    let waited = client
        .await_proof(cuzk::AwaitProofRequest { job_id: job_id.clone(), timeout_ms: 200 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(waited.status, ProofStatus::Timeout as i32, "{waited:?}");
    // once it is on the prover, CancelProof really cancels it
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let job = stack.job(&job_id).await.unwrap();
        if job["state"] == "proving" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the job never reached the prover: {job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = client.get_status(cuzk::GetStatusRequest {}).await.unwrap().into_inner();
    let running: u32 = status.queues.iter().map(|q| q.in_progress).sum();
    assert_eq!(running, 1, "Curio's back-pressure counts the running job: {status:?}");
    let cancelled =
        client.cancel_proof(cuzk::CancelProofRequest { job_id: job_id.clone() }).await.unwrap().into_inner();
    assert!(cancelled.was_running);
    let waited = client.await_proof(cuzk::AwaitProofRequest { job_id: job_id.clone(), timeout_ms: 0 }).await.unwrap();
    assert_eq!(waited.into_inner().status, ProofStatus::Cancelled as i32);
    assert_eq!(stack.job(&job_id).await.unwrap()["state"], "cancelled");
    // a cancelled job's request_id proves again when Curio retries the task
    let retried = client.submit_proof(porep_request(&envelope, 21)).await.unwrap().into_inner().job_id;
    assert_ne!(retried, job_id, "a retry after a cancel must start a new job");
    // (proving it again would only repeat the first test; cancel it, and its await says so)
    client.cancel_proof(cuzk::CancelProofRequest { job_id: retried.clone() }).await.unwrap();
    let result = client.await_proof(cuzk::AwaitProofRequest { job_id: retried, timeout_ms: 0 }).await.unwrap();
    assert_eq!(result.into_inner().status, ProofStatus::Cancelled as i32);
    let missing = client.await_proof(cuzk::AwaitProofRequest { job_id: uuid_like(), timeout_ms: 0 }).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound, "{missing:?}");
}

/// GetStatus once it lists a gpu-worker.
async fn gpu_listed(client: &mut CuzkClient) -> cuzk::GetStatusResponse {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let status = client.get_status(cuzk::GetStatusRequest {}).await.unwrap().into_inner();
        if !status.gpus.is_empty() || std::time::Instant::now() > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn uuid_like() -> String {
    "00000000-0000-4000-8000-000000000000".into()
}
