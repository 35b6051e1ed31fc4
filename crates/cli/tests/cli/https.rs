//! The `snarkflow` command line against a gateway serving HTTPS: it submits and follows a job
//! when given the CA (`--ca-cert`) and an API token, and refuses a gateway it cannot trust.

use std::process::Command;

use snarkflow_e2e::{start_gateway_https, start_gpu_worker, start_synth_worker, test_tokens};
use snarkflow_testkit::pki::TestPki;
use snarkflow_testkit::NatsServer;

fn snarkflow(args: &[String], token: Option<&str>) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_snarkflow"));
    command.args(args).env_remove("SNARKFLOW_API_TOKEN_FILE").env_remove("SNARKFLOW_CA_CERT");
    match token {
        Some(token) => command.env("SNARKFLOW_API_TOKEN", token),
        None => command.env_remove("SNARKFLOW_API_TOKEN"),
    };
    command.output().expect("running snarkflow")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_cli_submits_over_https_with_a_token_and_a_trusted_ca() {
    snarkflow_e2e::init_test_logging();
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&pki.ca).unwrap()).unwrap();
    let client = reqwest::Client::builder().add_root_certificate(ca).build().unwrap();
    let (gateway, base) = start_gateway_https(&nats.url(), &pki.server_cert, &pki.server_key, client).await.unwrap();
    let synth = start_synth_worker(&nats.url(), "synth-cli").unwrap();
    let gpu = start_gpu_worker(&nats.url(), "gpu-cli").unwrap();
    let ca_path = pki.ca.display().to_string();
    let admin = test_tokens().admin.clone();

    let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let submit =
        args(&["--gateway", &base, "--ca-cert", &ca_path, "submit", "--kind", "dense-chain", "--constraints", "64"]);
    let waiting = [submit.clone(), args(&["--wait"])].concat();
    let token = admin.clone();
    let output = tokio::task::spawn_blocking(move || snarkflow(&waiting, Some(&token))).await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.lines().any(|l| l.starts_with("job ") && l.ends_with(" done")), "{stdout}");

    // without the token: 401, with the hint
    let no_token = tokio::task::spawn_blocking(move || snarkflow(&submit, None)).await.unwrap();
    let stderr = String::from_utf8_lossy(&no_token.stderr);
    assert!(!no_token.status.success());
    assert!(stderr.contains("401") && stderr.contains("SNARKFLOW_API_TOKEN"), "{stderr}");

    // without the CA: the gateway's certificate is not trusted
    let list = args(&["--gateway", &base, "list"]);
    let untrusted = tokio::task::spawn_blocking(move || snarkflow(&list, Some(&admin))).await.unwrap();
    assert!(!untrusted.status.success(), "{}", String::from_utf8_lossy(&untrusted.stdout));

    for service in [gpu, synth, gateway] {
        service.stop().await.unwrap();
    }
}
