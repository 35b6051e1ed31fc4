//! Security end to end: a nats-server with TLS (mutual), one user per role holding the
//! permissions of `deploy/nats/permissions.conf`, the real services proving through it, a
//! service with wrong credentials saying why it is not ready, each role denied what it has no
//! business doing, and the gateway over HTTPS refusing plaintext.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use snarkflow_e2e::{
    api_client, init_test_logging, start_gateway_https, start_gateway_with, start_gpu_worker_with,
    start_synth_worker_with, test_tokens, verify_job_proof, wait_job,
};
use snarkflow_testkit::pki::TestPki;
use snarkflow_testkit::NatsServer;
use tokio::sync::mpsc;

const ROLES: [(&str, &str); 3] = [("gateway", "gw-secret"), ("synth-worker", "sw-secret"), ("gpu-worker", "pw-secret")];

/// A nats-server with mutual TLS and the shipped per-role permissions.
struct SecureNats {
    server: NatsServer,
    pki: TestPki,
    dir: tempfile::TempDir,
}

impl SecureNats {
    fn start() -> SecureNats {
        let dir = tempfile::tempdir().unwrap();
        let pki = TestPki::generate(dir.path());
        let permissions =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/nats/permissions.conf"))
                .unwrap();
        // the users block of deploy/nats/nats.conf, with known passwords
        let conf = format!(
            r#"
include permissions.conf
authorization {{
  users = [
    {{user: gateway, password: "{}", permissions: $GATEWAY_PERMISSIONS}}
    {{user: "synth-worker", password: "{}", permissions: $SYNTH_WORKER_PERMISSIONS}}
    {{user: "gpu-worker", password: "{}", permissions: $GPU_WORKER_PERMISSIONS}}
  ]
}}
tls {{
  cert_file: "{}"
  key_file: "{}"
  ca_file: "{}"
  verify: true
  timeout: 2
}}
"#,
            ROLES[0].1,
            ROLES[1].1,
            ROLES[2].1,
            pki.server_cert.display(),
            pki.server_key.display(),
            pki.ca.display()
        );
        for (user, password) in ROLES {
            std::fs::write(dir.path().join(format!("{user}.password")), format!("{password}\n")).unwrap();
        }
        let server = NatsServer::start_with_config(&[("nats.conf", conf), ("permissions.conf", permissions)]);
        SecureNats { server, pki, dir }
    }

    fn url(&self) -> String {
        self.server.url()
    }

    fn password_file(&self, user: &str) -> PathBuf {
        self.dir.path().join(format!("{user}.password"))
    }

    /// The NATS flags of a service connecting as `user`.
    fn flags(&self, user: &str) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        vec![
            "--nats-user".into(),
            user.into(),
            "--nats-password-file".into(),
            path(&self.password_file(user)),
            "--nats-tls-ca".into(),
            path(&self.pki.ca),
            "--nats-tls-cert".into(),
            path(&self.pki.client_cert),
            "--nats-tls-key".into(),
            path(&self.pki.client_key),
        ]
    }

    /// A raw client as `user` with that role's inbox prefix, and the server errors it gets.
    async fn client(&self, user: &str, inbox_role: &str) -> (async_nats::Client, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let password = ROLES.iter().find(|(u, _)| *u == user).unwrap().1;
        let client = async_nats::ConnectOptions::with_user_and_password(user.into(), password.into())
            .add_root_certificates(self.pki.ca.clone())
            .add_client_certificate(self.pki.client_cert.clone(), self.pki.client_key.clone())
            .require_tls(true)
            .custom_inbox_prefix(format!("_INBOX_{inbox_role}"))
            .event_callback(move |event| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(event.to_string());
                }
            })
            .connect(self.url())
            .await
            .unwrap();
        (client, rx)
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn services_prove_through_nats_with_tls_and_per_role_permissions() {
    init_test_logging();
    let nats = SecureNats::start();
    let socket_dir = tempfile::tempdir().unwrap();
    let socket = socket_dir.path().join("cuzk.sock");
    let mut gateway_flags = nats.flags("gateway");
    gateway_flags.extend([
        "--grpc-listen".to_owned(),
        format!("unix://{}", socket.display()),
        "--grpc-enable-control".to_owned(),
    ]);
    let (gateway, base) = start_gateway_with(&nats.url(), &strs(&gateway_flags)).await.unwrap();
    let synth = start_synth_worker_with(&nats.url(), "synth-sec", &strs(&nats.flags("synth-worker"))).unwrap();
    let gpu = start_gpu_worker_with(&nats.url(), "gpu-sec", &strs(&nats.flags("gpu-worker"))).unwrap();
    let http = api_client();
    let body = json!({"kind": "dense-chain", "input": {"constraints": 256, "partitions": 2}});
    let submitted: serde_json::Value =
        http.post(format!("{base}/v1/jobs")).json(&body).send().await.unwrap().json().await.unwrap();
    let id = submitted["id"].as_str().unwrap_or_else(|| panic!("{submitted}")).to_owned();
    let job = wait_job(&http, &base, &id, Duration::from_secs(300)).await.unwrap();
    assert_eq!(job["state"], "done", "{job}");
    let proof = http.get(format!("{base}/v1/jobs/{id}/proof")).send().await.unwrap().bytes().await.unwrap();
    verify_job_proof(&job, &proof).unwrap();
    // control requests pass the permissions: the gateway asks, the gpu-worker answers
    let mut cuzk = snarkflow_e2e::cuzk_unix(&socket).await.unwrap();
    let status = cuzk.get_status(snarkflow_e2e::cuzk::GetStatusRequest {}).await.unwrap().into_inner();
    assert!(status.gpus.iter().any(|g| g.name.contains("gpu-sec")), "{status:?}");
    // grpcurl's `list` works: server reflection names the interface
    let services = reflected_services(&socket).await;
    assert!(services.iter().any(|s| s == "cuzk.v1.ProvingEngine"), "{services:?}");
    // and the older reflection version, which Python's grpcio-reflection asks
    let services = reflected_services_v1alpha(&socket).await;
    assert!(services.iter().any(|s| s == "cuzk.v1.ProvingEngine"), "{services:?}");
    forged_control_is_delivered_but_ignored(&nats, "dense-chain-c256").await;
    let status = cuzk.get_status(snarkflow_e2e::cuzk::GetStatusRequest {}).await.unwrap().into_inner();
    assert!(
        status.loaded_srs.iter().any(|srs| srs.circuit_id == "dense-chain-c256"),
        "the forged eviction was ignored: {status:?}"
    );
    let evicted = cuzk
        .evict_srs(snarkflow_e2e::cuzk::EvictSrsRequest { circuit_id: "dense-chain-c256".into() })
        .await
        .unwrap()
        .into_inner();
    assert!(evicted.was_loaded, "{evicted:?}");
    for service in [gpu, synth, gateway] {
        service.stop().await.unwrap();
    }
}

/// The services the gRPC listener at `socket` names through server reflection, asked in the
/// reflection version `$v` (`v1`, `v1alpha`: the same messages in two packages).
macro_rules! reflected_services_fn {
    ($name:ident, $v:ident) => {
        async fn $name(socket: &Path) -> Vec<String> {
            use tonic_reflection::pb::$v::server_reflection_client::ServerReflectionClient;
            use tonic_reflection::pb::$v::server_reflection_request::MessageRequest;
            use tonic_reflection::pb::$v::server_reflection_response::MessageResponse;
            use tonic_reflection::pb::$v::ServerReflectionRequest;
            let mut client = ServerReflectionClient::new(snarkflow_e2e::unix_channel(socket).await.unwrap());
            let request = ServerReflectionRequest {
                host: String::new(),
                message_request: Some(MessageRequest::ListServices(String::new())),
            };
            let mut answers =
                client.server_reflection_info(futures::stream::iter([request])).await.unwrap().into_inner();
            let answer = answers.message().await.unwrap().expect("an answer");
            match answer.message_response {
                Some(MessageResponse::ListServicesResponse(list)) => list.service.into_iter().map(|s| s.name).collect(),
                other => panic!("not a service list: {other:?}"),
            }
        }
    };
}
reflected_services_fn!(reflected_services, v1);
reflected_services_fn!(reflected_services_v1alpha, v1alpha);

/// A synth-worker (any role that may read the object store) stores an "evict" command as an
/// object chunk and creates a push consumer that delivers it to the gpu-workers' control
/// subject: the server delivers it (the deliver subject is not checked against the creator's
/// permissions), and the gpu-worker must not act on it (its reply subject is not the gateway's
/// inbox).
async fn forged_control_is_delivered_but_ignored(nats: &SecureNats, circuit_id: &str) {
    let (synth, _) = nats.client("synth-worker", "synth").await;
    let (listener, _) = nats.client("gpu-worker", "gpu").await;
    let mut seen = listener.subscribe("snarkflow.control.gpu.params").await.unwrap();
    listener.flush().await.unwrap();
    let js = async_nats::jetstream::new(synth.clone());
    let command = json!({"op": "evict", "circuit_id": circuit_id}).to_string();
    js.publish("$O.snarkflow_partitions.C.forged-control", command.clone().into()).await.unwrap().await.unwrap();
    let create = json!({
        "stream_name": "OBJ_snarkflow_partitions",
        "config": {
            "deliver_subject": "snarkflow.control.gpu.params",
            "filter_subject": "$O.snarkflow_partitions.C.forged-control",
            "ack_policy": "none",
            "deliver_policy": "all",
        }
    });
    let reply =
        synth.request("$JS.API.CONSUMER.CREATE.OBJ_snarkflow_partitions", create.to_string().into()).await.unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
    assert!(reply.get("error").is_none(), "the push consumer was created: {reply}");
    let delivered = tokio::time::timeout(Duration::from_secs(10), futures::StreamExt::next(&mut seen))
        .await
        .expect("the forged command reaches the control subject")
        .unwrap();
    assert_eq!(delivered.payload.as_ref(), command.as_bytes());
    // what the gpu-worker would have done arrives within this
    tokio::time::sleep(Duration::from_secs(2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_or_missing_credentials_are_refused_and_the_worker_says_why() {
    init_test_logging();
    let nats = SecureNats::start();
    // no user at all: refused
    let anonymous = async_nats::ConnectOptions::new()
        .add_root_certificates(nats.pki.ca.clone())
        .add_client_certificate(nats.pki.client_cert.clone(), nats.pki.client_key.clone())
        .require_tls(true)
        .connect(nats.url())
        .await;
    assert!(anonymous.is_err(), "an anonymous client is refused");
    // plaintext: refused (the server requires TLS)
    assert!(async_nats::connect(nats.url()).await.is_err(), "a plaintext client is refused");

    // a worker with a wrong password stays not ready, and /readyz says why
    let wrong = nats.dir.path().join("wrong.password");
    std::fs::write(&wrong, "not-the-password\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let status = format!("127.0.0.1:{port}");
    let mut flags = nats.flags("synth-worker");
    let at = flags.iter().position(|f| f == "--nats-password-file").unwrap();
    flags[at + 1] = wrong.display().to_string();
    flags.extend(["--status-listen".to_owned(), status.clone()]);
    let worker = start_synth_worker_with(&nats.url(), "synth-wrong", &strs(&flags)).unwrap();
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let reason = loop {
        if let Ok(r) = http.get(format!("http://{status}/readyz")).send().await {
            assert_eq!(r.status(), 503, "never ready with a wrong password");
            let body: serde_json::Value = r.json().await.unwrap();
            let why = body["detail"]["nats"].as_str().unwrap_or_default().to_lowercase();
            if why.contains("authorization") {
                break why;
            }
        }
        assert!(Instant::now() < deadline, "the worker never said why it is not ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(!reason.contains("not-the-password"), "the secret is not repeated: {reason}");
    worker.stop().await.unwrap();
}

/// Whether publishing to `subject` draws a permissions violation from the server.
async fn publish_is_denied(
    client: &async_nats::Client,
    errors: &mut mpsc::UnboundedReceiver<String>,
    subject: &str,
) -> bool {
    while errors.try_recv().is_ok() {}
    client.publish(subject.to_owned(), "forged".into()).await.unwrap();
    client.flush().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline.into(), errors.recv()).await {
        if event.to_lowercase().contains("permissions violation") && event.contains(subject) {
            return true;
        }
    }
    false
}

/// Whether subscribing to `subject` draws a permissions violation from the server.
async fn subscribe_is_denied(
    client: &async_nats::Client,
    errors: &mut mpsc::UnboundedReceiver<String>,
    subject: &str,
) -> bool {
    while errors.try_recv().is_ok() {}
    let _sub = client.subscribe(subject.to_owned()).await.unwrap();
    client.flush().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline.into(), errors.recv()).await {
        if event.to_lowercase().contains("permissions violation") {
            return true;
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_is_denied_what_it_has_no_business_doing() {
    init_test_logging();
    let nats = SecureNats::start();
    // the gateway declares the topology
    let (gateway, _) = start_gateway_with(&nats.url(), &strs(&nats.flags("gateway"))).await.unwrap();

    let (gpu, mut gpu_errors) = nats.client("gpu-worker", "gpu").await;
    assert!(
        publish_is_denied(&gpu, &mut gpu_errors, "snarkflow.synth.critical").await,
        "a gpu-worker queues no synthesis"
    );
    assert!(publish_is_denied(&gpu, &mut gpu_errors, "snarkflow.prove.normal").await, "nor proving work");
    assert!(publish_is_denied(&gpu, &mut gpu_errors, "$KV.snarkflow_jobs.some-job").await, "nor writes the ledger");
    assert!(!publish_is_denied(&gpu, &mut gpu_errors, "snarkflow.events.some-job").await, "it reports events");

    let (synth, mut synth_errors) = nats.client("synth-worker", "synth").await;
    assert!(
        publish_is_denied(&synth, &mut synth_errors, "snarkflow.synth.normal").await,
        "a synth-worker queues no synthesis"
    );
    assert!(publish_is_denied(&synth, &mut synth_errors, "$KV.snarkflow_jobs.some-job").await, "nor writes the ledger");
    assert!(
        publish_is_denied(&synth, &mut synth_errors, "$JS.API.DIRECT.GET.KV_snarkflow_idempotency").await,
        "nor reads idempotency keys"
    );
    assert!(!publish_is_denied(&synth, &mut synth_errors, "snarkflow.prove.normal").await, "it hands partitions on");
    assert!(
        subscribe_is_denied(&synth, &mut synth_errors, "snarkflow.control.gpu.status").await,
        "a synth-worker does not listen to the gpu-workers' control requests"
    );

    let (gw, mut gw_errors) = nats.client("gateway", "gateway").await;
    assert!(publish_is_denied(&gw, &mut gw_errors, "snarkflow.events.some-job").await, "the gateway forges no events");
    assert!(publish_is_denied(&gw, &mut gw_errors, "snarkflow.prove.high").await, "nor proving work");
    // and no role may read another's replies
    assert!(
        subscribe_is_denied(&gw, &mut gw_errors, "_INBOX_gpu.>").await,
        "the gateway cannot listen to a gpu-worker's inbox"
    );
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_listener_over_tcp_takes_only_clients_with_a_certificate_of_its_ca() {
    init_test_logging();
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let port = snarkflow_e2e::free_port();
    let path = |p: &Path| p.display().to_string();
    let flags = [
        "--grpc-listen".to_owned(),
        format!("127.0.0.1:{port}"),
        "--grpc-tls-cert".to_owned(),
        path(&pki.server_cert),
        "--grpc-tls-key".to_owned(),
        path(&pki.server_key),
        "--grpc-tls-client-ca".to_owned(),
        path(&pki.ca),
    ];
    let (gateway, _) = start_gateway_with(&nats.url(), &strs(&flags)).await.unwrap();
    // with the CA's client certificate: served
    let mut trusted = snarkflow_e2e::cuzk_tls(port, &pki.ca, Some((&pki.client_cert, &pki.client_key))).await.unwrap();
    trusted.get_status(snarkflow_e2e::cuzk::GetStatusRequest {}).await.expect("a client with a certificate is served");
    // TLS without a client certificate: the handshake (or the first call) fails
    let anonymous = match snarkflow_e2e::cuzk_tls(port, &pki.ca, None).await {
        Ok(mut client) => {
            client.get_status(snarkflow_e2e::cuzk::GetStatusRequest {}).await.map(|_| ()).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    };
    assert!(anonymous.is_err(), "a client without a certificate was served");
    // plaintext, as an unconfigured Curio would call: refused
    let plain = match snarkflow_e2e::cuzk_tcp(&format!("127.0.0.1:{port}")).await {
        Ok(mut client) => {
            client.get_status(snarkflow_e2e::cuzk::GetStatusRequest {}).await.map(|_| ()).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    };
    assert!(plain.is_err(), "a plaintext call was served");
    gateway.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_https_and_refuses_plaintext() {
    init_test_logging();
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&pki.ca).unwrap()).unwrap();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {}", test_tokens().admin).parse().unwrap());
    let trusting = reqwest::Client::builder().add_root_certificate(ca).default_headers(headers).build().unwrap();
    let (gateway, base) =
        start_gateway_https(&nats.url(), &pki.server_cert, &pki.server_key, trusting.clone()).await.unwrap();
    let r = trusting.get(format!("{base}/v1/jobs")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    // plaintext HTTP to the TLS port gets no API answer
    let plain = base.replacen("https://", "http://", 1);
    let answered = reqwest::Client::new().get(format!("{plain}/v1/jobs")).send().await;
    assert!(answered.is_err() || !answered.unwrap().status().is_success(), "plaintext is refused");
    // a client that does not trust the CA does not connect
    assert!(reqwest::Client::new().get(format!("{base}/readyz")).send().await.is_err());
    gateway.stop().await.unwrap();
}
