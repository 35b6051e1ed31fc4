//! Clients of the cuzk gRPC interface that are not Go's (Curio's): Python's grpcio on the Unix
//! socket, from the venv `deploy/scripts/install-deps.sh` makes (or `SNARKFLOW_GRPC_PYTHON`).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use snarkflow_e2e::start_gateway_with;
use snarkflow_testkit::NatsServer;

/// One unary call to a method no service has; prints the status code's name (and details).
const CALL: &str = r#"
import sys, grpc
target = sys.argv[1]
options = [("grpc.default_authority", sys.argv[2])] if len(sys.argv) > 2 else []
call = grpc.insecure_channel(target, options=options).unary_unary(
    "/cuzk.v1.Nowhere/Nothing", request_serializer=lambda b: b, response_deserializer=lambda b: b)
try:
    call(b"", timeout=20)
    print("OK")
except grpc.RpcError as e:
    print(e.code().name, e.details())
"#;

fn python_with_grpcio() -> PathBuf {
    let python = std::env::var_os("SNARKFLOW_GRPC_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").expect("HOME");
        PathBuf::from(home).join(".cache/snarkflow/grpcio-1.85.3/bin/python")
    });
    let ok = Command::new(&python).args(["-c", "import grpc"]).status().is_ok_and(|s| s.success());
    assert!(ok, "no Python with grpcio at {}: run deploy/scripts/install-deps.sh", python.display());
    python
}

/// Python's default authority on a Unix socket is the socket's path, which the HTTP/2 layer
/// under the gateway refuses (the stream is reset before the gateway sees it): the documented
/// limit (docs/curio.md). With a host name as the authority the call reaches the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_grpcio_reaches_the_unix_socket_with_a_host_authority_and_is_reset_without_one() {
    let python = python_with_grpcio();
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let target = format!("unix://{}", socket.display());
    let (gateway, _) = start_gateway_with(&nats.url(), &["--grpc-listen", &target]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "the gateway never made its socket");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let script = dir.path().join("call.py");
    std::fs::write(&script, CALL).unwrap();
    let call = |authority: &[&str]| {
        let (python, script, target) = (python.clone(), script.clone(), target.clone());
        let authority: Vec<String> = authority.iter().map(|s| s.to_string()).collect();
        async move {
            tokio::task::spawn_blocking(move || {
                let out = Command::new(python).arg(script).arg(target).args(authority).output().unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                String::from_utf8(out.stdout).unwrap().trim().to_owned()
            })
            .await
            .unwrap()
        }
    };
    let reached = call(&["localhost"]).await;
    assert!(reached.starts_with("UNIMPLEMENTED"), "the call did not reach the gateway: {reached}");
    let reset = call(&[]).await;
    assert!(reset.starts_with("INTERNAL") && reset.contains("RST_STREAM"), "{reset}");
    gateway.stop().await.unwrap();
}
