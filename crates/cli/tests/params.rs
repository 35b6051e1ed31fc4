//! `snarkflow params fetch` and `params check` against a manifest of this test's own (the real
//! published files are gigabytes): a fetch continues a part an earlier one left, installs only
//! files with the published digest, refuses names nobody publishes; a check finds a tampered
//! file. The HTTP(S) source is exercised the same way through a local static server.

use std::path::Path;
use std::process::{Command, Output};

use snarkflow_filecoin::manifest::digest_file;

fn snarkflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snarkflow"))
        .args(args)
        .env_remove("SNARKFLOW_PARAMS_DIR")
        .env_remove("FIL_PROOFS_PARAMETER_CACHE")
        .output()
        .expect("running snarkflow")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Files `name → bytes` in `dir`, and a parameters.json naming them with their digests
/// (`wrong` listed with a digest its bytes do not have).
fn source(dir: &Path, files: &[(&str, Vec<u8>)], wrong: &str) -> std::path::PathBuf {
    let mut manifest = serde_json::Map::new();
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let mut digest = digest_file(&path).unwrap();
        if *name == wrong {
            digest = "0".repeat(32);
        }
        manifest.insert(name.to_string(), serde_json::json!({"cid": "Qm", "digest": digest, "sector_size": 2048}));
    }
    let path = dir.join("parameters.json");
    std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    path
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn fetch_continues_checks_and_installs_and_check_finds_a_tampered_file() {
    let src = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let big = bytes(1 << 20, 1);
    let manifest = source(
        src.path(),
        &[("v28-a.params", big.clone()), ("v28-a.vk", bytes(1000, 2)), ("v28-c.params", bytes(5000, 3))],
        "v28-c.params",
    );
    let (m, s, c) = (manifest.to_str().unwrap(), src.path().to_str().unwrap(), cache.path().to_str().unwrap());
    // an earlier fetch stopped a third of the way
    std::fs::write(cache.path().join("v28-a.params.part"), &big[..300_000]).unwrap();

    let out = snarkflow(&[
        "params",
        "fetch",
        "--from",
        s,
        "--file",
        "v28-a.params",
        "--file",
        "v28-a.vk",
        "--manifest",
        m,
        "--params-dir",
        c,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("continued after 300000"), "{}", text(&out));
    assert_eq!(std::fs::read(cache.path().join("v28-a.params")).unwrap(), big);
    assert!(!cache.path().join("v28-a.params.part").exists());

    let out = snarkflow(&["params", "fetch", "--from", s, "--file", "v28-a.vk", "--manifest", m, "--params-dir", c]);
    assert!(out.status.success() && text(&out).contains("already here"), "{}", text(&out));

    // the source's file is not the published one: nothing is installed
    let out =
        snarkflow(&["params", "fetch", "--from", s, "--file", "v28-c.params", "--manifest", m, "--params-dir", c]);
    assert!(!out.status.success() && text(&out).contains("not installed"), "{}", text(&out));
    assert!(!cache.path().join("v28-c.params").exists() && !cache.path().join("v28-c.params.part").exists());

    // nothing but published files
    let out = snarkflow(&[
        "params",
        "fetch",
        "--from",
        s,
        "--file",
        "sha256-chain-b1.params",
        "--manifest",
        m,
        "--params-dir",
        c,
    ]);
    assert!(!out.status.success() && text(&out).contains("not a file filecoin-proofs publishes"), "{}", text(&out));

    let out = snarkflow(&["params", "check", "--manifest", m, "--params-dir", c]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out).matches("ok ").count(), 2, "{}", text(&out));
    let mut vk = std::fs::read(cache.path().join("v28-a.vk")).unwrap();
    vk[10] ^= 1;
    std::fs::write(cache.path().join("v28-a.vk"), vk).unwrap();
    let out = snarkflow(&[
        "params",
        "check",
        "--manifest",
        m,
        "--params-dir",
        c,
        "--file",
        "v28-a.vk",
        "--file",
        "v28-c.params",
    ]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("WRONG   v28-a.vk") && text(&out).contains("MISSING v28-c.params"), "{}", text(&out));
}

/// A static file server that honours `Range: bytes=N-`, as a mirror (nginx, S3, a CDN) does.
async fn mirror(dir: std::path::PathBuf) -> String {
    use axum::extract::Path as UrlPath;
    use axum::http::{header, HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    let app = axum::Router::new().route(
        "/params/{name}",
        axum::routing::get(move |UrlPath(name): UrlPath<String>, headers: HeaderMap| {
            let dir = dir.clone();
            async move {
                let Ok(data) = std::fs::read(dir.join(&name)) else { return StatusCode::NOT_FOUND.into_response() };
                let from = headers
                    .get(header::RANGE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("bytes="))
                    .and_then(|v| v.trim_end_matches('-').parse::<usize>().ok());
                match from {
                    Some(from) => (StatusCode::PARTIAL_CONTENT, data[from..].to_vec()).into_response(),
                    None => data.into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/params")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_from_an_http_mirror_continues_with_a_range() {
    let src = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let big = bytes(700_000, 9);
    let manifest = source(src.path(), &[("v28-h.params", big.clone())], "");
    let url = mirror(src.path().to_path_buf()).await;
    std::fs::write(cache.path().join("v28-h.params.part"), &big[..123_456]).unwrap();
    let (m, c) = (manifest.to_str().unwrap().to_owned(), cache.path().to_str().unwrap().to_owned());
    let out = tokio::task::spawn_blocking(move || {
        snarkflow(&["params", "fetch", "--from", &url, "--file", "v28-h.params", "--manifest", &m, "--params-dir", &c])
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("continued after 123456"), "{}", text(&out));
    assert_eq!(std::fs::read(cache.path().join("v28-h.params")).unwrap(), big);
}

/// `params generate --circuit ID` names any circuit by its id, and gives the same file as the
/// kind with its size flags; mixing the two ways is refused.
#[test]
fn generate_takes_a_circuit_id_as_well_as_a_kind_and_its_size() {
    let by_id = tempfile::tempdir().unwrap();
    let by_flags = tempfile::tempdir().unwrap();
    let (i, f) = (by_id.path().to_str().unwrap(), by_flags.path().to_str().unwrap());
    let out = snarkflow(&["params", "generate", "--circuit", "dense-chain-c8", "--seed", "5", "--params-dir", i]);
    assert!(out.status.success(), "{}", text(&out));
    let out = snarkflow(&[
        "params",
        "generate",
        "--kind",
        "dense-chain",
        "--constraints",
        "8",
        "--seed",
        "5",
        "--params-dir",
        f,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let file = "dense-chain-c8.params";
    assert_eq!(std::fs::read(by_id.path().join(file)).unwrap(), std::fs::read(by_flags.path().join(file)).unwrap());

    let out =
        snarkflow(&["params", "generate", "--circuit", "dense-chain-c8", "--kind", "dense-chain", "--params-dir", i]);
    assert!(!out.status.success());
    let out = snarkflow(&["params", "generate", "--circuit", "dense-chain-cX", "--params-dir", i]);
    assert!(!out.status.success());
    assert!(text(&out).contains("\"dense-chain-cX\" is not a circuit id this build knows"), "{}", text(&out));
}
