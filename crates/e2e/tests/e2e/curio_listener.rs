//! The cuzk listener's protection: a private socket, control RPCs refused, no other tenant's
//! job shown, tokens required on request, and uploads that stall holding nothing.

use std::time::Duration;

use filecoin_proofs_api::RegisteredSealProof;
use serde_json::Value;
use snarkflow_e2e::cuzk::await_proof_response::Status as ProofStatus;
use snarkflow_e2e::{add_test_token, cuzk, cuzk_tcp, cuzk_unix, filecoin_env, free_port, Stack};
use snarkflow_filecoin::fixtures::seal_sector;

use super::curio::{grpc_flags, params_for, winning_request, MINER};

/// The listener's protection on its default path: a socket only its owner and group may open,
/// control RPCs refused, and a job on a GPU named only to its own tenant.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_cuzk_listener_is_private_and_shows_no_other_tenants_jobs() {
    use snarkflow_service::tokens::Scope;
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let flags = grpc_flags(&format!("unix://{}", socket.display()));
    let stack = Stack::start_with_gateway(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await.unwrap();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "socket mode {mode:o}");
    let mut client = cuzk_unix(&socket).await.unwrap();

    for denied in [
        client.preload_srs(cuzk::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap_err(),
        client.evict_srs(cuzk::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap_err(),
    ] {
        assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied:?}");
        assert!(denied.message().contains("--grpc-enable-control"), "{denied:?}");
    }

    // another tenant's job on the (CPU) prover: Curio's tenant sees the device busy, not the id
    let other = add_test_token("other-tenant", &[Scope::Submit, Scope::Read], snarkflow_wire::Priority::Normal);
    let http = snarkflow_e2e::client_with_token(&other);
    let body = serde_json::json!({"kind": "dense-chain", "input": {"constraints": 16384, "partitions": 64}});
    // (64 partitions: it proves for seconds, long enough to be seen; it is cancelled at the end)
    // the gateway reads a changed tokens file within a second or so
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let r = loop {
        let r = http.post(format!("{}/v1/jobs", stack.base)).json(&body).send().await.unwrap();
        if r.status() != 401 || std::time::Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(r.status(), 202);
    let job_id = r.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    let busy = loop {
        let status = client.get_status(cuzk::GetStatusRequest {}).await.unwrap().into_inner();
        if let Some(gpu) = status.gpus.iter().find(|g| g.current_proof_kind == "dense-chain") {
            break gpu.clone();
        }
        assert!(std::time::Instant::now() < deadline, "the job never reached the prover: {status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(busy.current_job_id, "", "another tenant's job id leaked: {busy:?}");
    // its own tenant, calling with its token, sees it (the workers report between partitions
    // too, when the device shows no job: ask until a report shows it, while the job proves)
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut request = tonic::Request::new(cuzk::GetStatusRequest {});
        request.metadata_mut().insert("authorization", format!("Bearer {other}").parse().unwrap());
        let mine = client.get_status(request).await.unwrap().into_inner();
        if mine.gpus.iter().any(|g| g.current_job_id == job_id) {
            break;
        }
        // (a job is `synthesizing` until its last partition is synthesized, while its first
        // ones prove)
        let state = stack.job(&job_id).await.unwrap()["state"].clone();
        assert!(
            (state == "synthesizing" || state == "proving") && std::time::Instant::now() < deadline,
            "the owner never saw its job on the device (job {state}): {mine:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut bad = tonic::Request::new(cuzk::GetStatusRequest {});
    bad.metadata_mut().insert("authorization", "Bearer not-a-token".parse().unwrap());
    assert_eq!(client.get_status(bad).await.unwrap_err().code(), tonic::Code::Unauthenticated);
    http.delete(format!("{}/v1/jobs/{job_id}", stack.base)).send().await.unwrap();
}

/// `--grpc-require-token`: a call without a token is refused, one with a token acts as it.
/// A call whose `authorization` says who it is... or says nothing: the answer to a call
/// without a token (with `--grpc-require-token`) comes from its metadata, before its message
/// is read, so streams that declare 200 MiB messages and then stall are refused at once and
/// hold nothing. A caller with a token who stalls holds at most half the body budget, and only
/// until the body timeout: meanwhile another caller's WinningPoSt is proved (issue 39 item 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cuzk_listener_can_require_tokens_and_stalled_uploads_hold_nothing() {
    filecoin_env();
    let dir = tempfile::tempdir().unwrap();
    let randomness = [7u8; 32];
    let winning = {
        let dir = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            let sector = seal_sector(&dir, RegisteredSealProof::StackedDrg2KiBV1_1, MINER, 7, 1).unwrap();
            sector.post_request_input(false, randomness).unwrap()
        })
        .await
        .unwrap()
    };
    params_for(&[snarkflow_circuits::circuit("winning-post-2KiB")]).await;
    let addr = format!("127.0.0.1:{}", free_port());
    let flags = [
        "--grpc-listen",
        &addr,
        "--grpc-require-token",
        "--grpc-max-streams-per-connection",
        "200",
        "--grpc-max-body-memory",
        &(512u64 << 20).to_string(),
        "--grpc-body-timeout-secs",
        "3",
    ];
    let stack = Stack::start_with_gateway(&flags).await.unwrap();
    let mut client = cuzk_tcp(&addr).await.unwrap();
    let refused = client.get_status(cuzk::GetStatusRequest {}).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let admin = snarkflow_e2e::test_tokens().admin.clone();
    let metrics = client.get_metrics(with_token(&admin, cuzk::GetMetricsRequest {})).await.unwrap();
    assert!(metrics.into_inner().prometheus_text.contains("snarkflow_"));

    // 128 calls without a token, each declaring a 200 MiB message and sending no more of it
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    let unauthenticated = (0..128).map(|_| stalled_call(channel.clone(), addr.clone(), None));
    let answers = tokio::time::timeout(Duration::from_secs(5), futures::future::join_all(unauthenticated))
        .await
        .expect("calls without a token are answered from their metadata, not after their message");
    for (status, _) in &answers {
        assert_eq!(status.as_deref(), Some("16"), "UNAUTHENTICATED");
    }

    // a caller with a token stalls two 200 MiB uploads: the first takes its half of the 512
    // MiB budget, the second waits for room; both end at the body timeout
    let staller = add_test_token("staller", &[snarkflow_service::tokens::Scope::Submit], snarkflow_wire::Priority::Low);
    // the gateway reads the tokens file again within a second
    for _ in 0..50 {
        let answer = client.get_status(with_token(&staller, cuzk::GetStatusRequest {})).await;
        if answer.as_ref().err().is_none_or(|e| e.code() != tonic::Code::Unauthenticated) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stalls: Vec<_> =
        (0..2).map(|_| tokio::spawn(stalled_call(channel.clone(), addr.clone(), Some(staller.clone())))).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // meanwhile another caller's WinningPoSt
    let winning_request = winning_request("stall", &winning, randomness);
    let proved = client
        .prove(with_token(&admin, cuzk::ProveRequest { submit: Some(winning_request) }))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(proved.status, ProofStatus::Completed as i32, "{proved:?}");
    for stall in stalls {
        let (status, message) = tokio::time::timeout(Duration::from_secs(30), stall).await.unwrap().unwrap();
        // DEADLINE_EXCEEDED, from the body timeout
        assert_eq!(status.as_deref(), Some("4"), "{message:?}");
    }
    drop(stack);
}

fn with_token<T>(token: &str, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

/// A unary call to SubmitProof whose body is the header of a 200 MiB message and then nothing:
/// its grpc-status and grpc-message, whenever the answer comes.
async fn stalled_call(
    channel: tonic::transport::Channel,
    addr: String,
    token: Option<String>,
) -> (Option<String>, Option<String>) {
    use bytes::Bytes;
    use futures::StreamExt as _;
    use http_body::Frame;
    use tonic::codegen::http;
    use tower::ServiceExt as _;

    let mut head = vec![0u8];
    head.extend_from_slice(&(200u32 << 20).to_be_bytes());
    let frames = futures::stream::iter([Ok::<_, tonic::Status>(Frame::data(Bytes::from(head)))])
        .chain(futures::stream::pending());
    let body = tonic::body::Body::new(http_body_util::StreamBody::new(frames));
    let mut request = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/cuzk.v1.ProvingEngine/SubmitProof"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = channel.oneshot(request.body(body).unwrap()).await.unwrap();
    let header = |map: &http::HeaderMap, name: &str| map.get(name).map(|v| v.to_str().unwrap().to_owned());
    if let Some(status) = header(response.headers(), "grpc-status") {
        return (Some(status), header(response.headers(), "grpc-message"));
    }
    // not trailers-only: the status is in the trailers
    let trailers = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().trailers().cloned();
    let trailers = trailers.unwrap_or_default();
    (header(&trailers, "grpc-status"), header(&trailers, "grpc-message"))
}
