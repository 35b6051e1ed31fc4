//! Curio across the network: Curio's own proto on the curio-proxy's Unix socket, the proxy
//! forwarding over mutual TLS with a token to two gateways, the first one SIGKILLed while the
//! job it recorded waits for a GPU.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser as _;
use snarkflow_e2e::cuzk::{await_proof_response::Status as ProofStatus, ProofKind};
use snarkflow_e2e::{
    cuzk, cuzk_unix, filecoin_env, free_port, init_test_logging, params_dir, start_gateway_with, start_gpu_worker,
    start_synth_worker, test_gateway_flags, test_tokens,
};
use snarkflow_prover::ParamStore;
use snarkflow_testkit::pki::TestPki;
use snarkflow_testkit::NatsServer;
use tokio_util::sync::CancellationToken;

#[derive(clap::Parser)]
struct Proxy {
    #[command(flatten)]
    args: snarkflow_curio_proxy::ProxyArgs,
}

/// The gateway flags of a gRPC listener on `port` that takes only the test CA's clients, with
/// a token.
fn mtls_flags(port: u16, pki: &TestPki) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    vec![
        "--grpc-listen".into(),
        format!("127.0.0.1:{port}"),
        "--grpc-tls-cert".into(),
        path(&pki.server_cert),
        "--grpc-tls-key".into(),
        path(&pki.server_key),
        "--grpc-tls-client-ca".into(),
        path(&pki.ca),
        "--grpc-require-token".into(),
    ]
}

/// Gateway A, a process of its own (to be SIGKILLed), once its gRPC port takes connections.
fn gateway_process(nats_url: &str, flags: &[String], grpc_port: u16) -> Child {
    let listen = format!("127.0.0.1:{}", free_port());
    let mut args = vec!["--listen".to_owned(), listen, "--params-dir".into(), params_dir().display().to_string()];
    args.extend(["--nats-url".to_owned(), nats_url.to_owned()]);
    args.extend(test_gateway_flags());
    args.extend(flags.iter().cloned());
    let child = Command::new(env!("CARGO_BIN_EXE_e2e-gateway"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting gateway A");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", grpc_port)).is_err() {
        assert!(Instant::now() < deadline, "gateway A's gRPC port never opened");
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curio_through_the_proxy_gets_its_proof_when_the_gateway_it_submitted_to_is_killed() {
    init_test_logging();
    filecoin_env();
    tokio::task::spawn_blocking(|| {
        let spec = snarkflow_circuits::circuit("winning-post-2KiB");
        ParamStore::new(params_dir(), snarkflow_circuits::catalog()).generate(&spec, false).unwrap();
    })
    .await
    .unwrap();
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let (port_a, port_b) = (free_port(), free_port());
    let mut gateway_a = gateway_process(&nats.url(), &mtls_flags(port_a, &pki), port_a);
    let flags_b = mtls_flags(port_b, &pki);
    let (gateway_b, base_b) =
        start_gateway_with(&nats.url(), &flags_b.iter().map(String::as_str).collect::<Vec<_>>()).await.unwrap();
    let synth = start_synth_worker(&nats.url(), "synth-proxy").unwrap();

    let token_file = dir.path().join("proxy-token");
    std::fs::write(&token_file, format!("{}\n", test_tokens().admin)).unwrap();
    let socket = dir.path().join("cuzk.sock");
    let path = |p: &Path| p.display().to_string();
    let proxy = Proxy::try_parse_from([
        "curio-proxy".to_owned(),
        "--listen".into(),
        format!("unix://{}", path(&socket)),
        "--gateways".into(),
        format!("https://localhost:{port_a},https://localhost:{port_b}"),
        "--tls-ca".into(),
        path(&pki.ca),
        "--tls-cert".into(),
        path(&pki.client_cert),
        "--tls-key".into(),
        path(&pki.client_key),
        "--token-file".into(),
        path(&token_file),
    ])
    .unwrap();
    let stop_proxy = CancellationToken::new();
    let proxy = tokio::spawn(snarkflow_curio_proxy::run(proxy.args, stop_proxy.clone()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "the proxy's socket never appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut curio = cuzk_unix(&socket).await.unwrap();
    let status = curio.get_status(cuzk::GetStatusRequest {}).await.expect("GetStatus through the proxy");
    assert!(status.into_inner().gpus.is_empty(), "no gpu-worker yet");

    // a WinningPoSt as Curio sends it; no gpu-worker, so the job waits on gateway A
    let input = snarkflow_filecoin::sparse_post::post_request(
        snarkflow_filecoin::PostKind::Winning,
        2048,
        1000,
        &[5],
        &mut rand::thread_rng(),
    )
    .unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let submit = cuzk::SubmitProofRequest {
        request_id: "winpost-1000-proxy".into(),
        proof_kind: ProofKind::WinningPost as i32,
        sector_size: 2048,
        registered_proof: 0,
        priority: cuzk::Priority::Critical as i32,
        vanilla_proofs: input["vanilla_proofs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| base64::Engine::decode(&b64, p.as_str().unwrap()).unwrap())
            .collect(),
        miner_id: 1000,
        randomness: hex::decode(input["randomness"].as_str().unwrap()).unwrap(),
        ..Default::default()
    };
    let mut proving = curio.clone();
    let call = tokio::spawn(async move { proving.prove(cuzk::ProveRequest { submit: Some(submit) }).await });
    let http = snarkflow_e2e::api_client();
    let jobs = |http: reqwest::Client, base: String| async move {
        let list: serde_json::Value = http.get(format!("{base}/v1/jobs")).send().await.unwrap().json().await.unwrap();
        list["jobs"].as_array().unwrap().clone()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while jobs(http.clone(), base_b.clone()).await.is_empty() {
        assert!(Instant::now() < deadline, "the job was never recorded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // gateway A (the first the proxy tries) holds Curio's call: kill it
    gateway_a.kill().unwrap();
    gateway_a.wait().unwrap();
    let gpu = start_gpu_worker(&nats.url(), "gpu-proxy").unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(300), call).await.expect("the proof in time").unwrap();
    let result = answer.expect("Prove through the proxy").into_inner().result.unwrap();
    assert_eq!(result.status, ProofStatus::Completed as i32, "{result:?}");
    assert_eq!(result.proof.len(), 192, "a 2 KiB WinningPoSt is one partition");
    let listed = jobs(http.clone(), base_b.clone()).await;
    assert_eq!(listed.len(), 1, "the job was recorded once, not once per gateway: {listed:?}");
    assert_eq!(listed[0]["state"], "done");

    stop_proxy.cancel();
    proxy.await.unwrap().unwrap();
    for service in [gpu, synth, gateway_b] {
        service.stop().await.unwrap();
    }
}
