//! `snarkflow params fetch` and `params check` against a manifest of this test's own (the real
//! published files are gigabytes): a fetch continues a part an earlier one left, installs only
//! files with the published digest, refuses names nobody publishes; a check finds a tampered
//! file. The HTTP(S) source is exercised the same way through a local static server, and the
//! IPFS one through a local gateway. `snarkflow doctor`, which checks parameter files among
//! other things, is here too.

use std::path::Path;
use std::process::{Command, Output};

use snarkflow_filecoin::manifest::digest_file;

fn snarkflow(args: &[&str]) -> Output {
    snarkflow_with(args, &[])
}

fn snarkflow_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snarkflow"))
        .args(args)
        .env_remove("SNARKFLOW_PARAMS_DIR")
        .env_remove("FIL_PROOFS_PARAMETER_CACHE")
        .env_remove("IPFS_GATEWAY")
        .env_remove("TRUST_PARAMS")
        .envs(env.iter().copied())
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
        manifest.insert(name.to_string(), serde_json::json!({"cid": cid(name), "digest": digest, "sector_size": 2048}));
    }
    let path = dir.join("parameters.json");
    std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    path
}

/// The test manifest's stand-in for a file's IPFS CID.
fn cid(name: &str) -> String {
    format!("bafy-{name}")
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

/// N of a `Range: bytes=N-` header.
fn range_start(headers: &axum::http::HeaderMap) -> Option<usize> {
    headers
        .get(axum::http::header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("bytes="))
        .and_then(|v| v.trim_end_matches('-').parse::<usize>().ok())
}

/// A static file server that honours `Range: bytes=N-`, as a mirror (nginx, S3, a CDN) does.
async fn mirror(dir: std::path::PathBuf) -> String {
    use axum::extract::Path as UrlPath;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    let app = axum::Router::new().route(
        "/params/{name}",
        axum::routing::get(move |UrlPath(name): UrlPath<String>, headers: HeaderMap| {
            let dir = dir.clone();
            async move {
                let Ok(data) = std::fs::read(dir.join(&name)) else { return StatusCode::NOT_FOUND.into_response() };
                let from = range_start(&headers);
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

/// An IPFS gateway over `dir`: `/ipfs/<cid>` is the file of that CID (`cid()`), answered after
/// 300 ms (so two fetchers overlap); honours `Range: bytes=N-`; its first whole-file answer
/// for `cut` is cut off half way, as a dropped connection leaves it.
async fn ipfs_gateway(dir: std::path::PathBuf, cut: &'static str) -> String {
    use axum::body::Body;
    use axum::extract::Path as UrlPath;
    use axum::http::{header, HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    let cut_once = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let app = axum::Router::new().route(
        "/ipfs/{cid}",
        axum::routing::get(move |UrlPath(cid): UrlPath<String>, headers: HeaderMap| {
            let (dir, cut_once) = (dir.clone(), cut_once.clone());
            async move {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                let Some(name) = cid.strip_prefix("bafy-") else { return StatusCode::NOT_FOUND.into_response() };
                let Ok(data) = std::fs::read(dir.join(name)) else { return StatusCode::NOT_FOUND.into_response() };
                let from = range_start(&headers);
                if let Some(from) = from {
                    return (StatusCode::PARTIAL_CONTENT, data[from..].to_vec()).into_response();
                }
                if name == cut && cut_once.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    let half = data[..data.len() / 2].to_vec();
                    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
                        vec![Ok(half), Err(std::io::Error::other("connection dropped"))];
                    let body = Body::from_stream(futures::stream::iter(chunks));
                    return ([(header::CONTENT_LENGTH, data.len().to_string())], body).into_response();
                }
                data.into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/ipfs/")
}

/// `params fetch` without `--from` takes the files by their CIDs through `IPFS_GATEWAY`, as
/// Curio's fetcher does: a download cut off half way is continued by the next fetch, a file
/// whose bytes are not the published ones is never installed, and two fetchers into one
/// directory take turns (its `fetch.lock`) and both end with the right files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_by_cid_through_an_ipfs_gateway_continues_checks_and_takes_turns() {
    let src = tempfile::tempdir().unwrap();
    let big = bytes(900_000, 4);
    let files = [("v28-g.params", big.clone()), ("v28-g.vk", bytes(2000, 5)), ("v28-w.params", bytes(3000, 6))];
    let manifest = source(src.path(), &files, "v28-w.params");
    let gateway = ipfs_gateway(src.path().to_path_buf(), "v28-g.params").await;
    let m = manifest.to_str().unwrap().to_owned();
    let fetch = move |dir: std::path::PathBuf, what: Vec<&'static str>| {
        let (m, gateway) = (m.clone(), gateway.clone());
        tokio::task::spawn_blocking(move || {
            let d = dir.to_str().unwrap();
            let mut args = vec!["params", "fetch", "--manifest", &m, "--params-dir", d];
            args.extend(what);
            snarkflow_with(&args, &[("IPFS_GATEWAY", &gateway)])
        })
    };

    // cut off half way: the fetch fails and keeps what it got
    let cache = tempfile::tempdir().unwrap();
    let out = fetch(cache.path().to_owned(), vec!["--file", "v28-g.params"]).await.unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let part = std::fs::metadata(cache.path().join("v28-g.params.part")).unwrap().len();
    assert!(part > 0 && part < big.len() as u64, "{part}");
    assert!(!cache.path().join("v28-g.params").exists());
    // the next fetch continues it
    let out = fetch(cache.path().to_owned(), vec!["--file", "v28-g.params"]).await.unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(&format!("continued after {part}")), "{}", text(&out));
    assert!(text(&out).contains("IPFS gateway"), "{}", text(&out));
    assert_eq!(std::fs::read(cache.path().join("v28-g.params")).unwrap(), big);

    // not the published bytes: not installed, nothing left
    let out = fetch(cache.path().to_owned(), vec!["--file", "v28-w.params"]).await.unwrap();
    assert!(!out.status.success() && text(&out).contains("not installed"), "{}", text(&out));
    assert!(!cache.path().join("v28-w.params").exists() && !cache.path().join("v28-w.params.part").exists());

    // two fetchers at once into another directory
    let other = tempfile::tempdir().unwrap();
    let both = vec!["--file", "v28-g.params", "--file", "v28-g.vk"];
    let (a, b) = tokio::join!(fetch(other.path().to_owned(), both.clone()), fetch(other.path().to_owned(), both));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.status.success() && b.status.success(), "{}\n{}", text(&a), text(&b));
    let said = format!("{}{}", text(&a), text(&b));
    assert!(said.contains("waiting for another fetcher"), "{said}");
    assert!(said.contains("already here"), "the second found what the first fetched: {said}");
    assert_eq!(std::fs::read(other.path().join("v28-g.params")).unwrap(), big);
    assert_eq!(std::fs::read(other.path().join("v28-g.vk")).unwrap(), files[1].1);

    // TRUST_PARAMS=1 takes a file in place without hashing it, as Curio does
    std::fs::write(other.path().join("v28-g.vk"), b"not the published bytes").unwrap();
    let out = snarkflow_with(
        &[
            "params",
            "fetch",
            "--manifest",
            manifest.to_str().unwrap(),
            "--params-dir",
            other.path().to_str().unwrap(),
            "--file",
            "v28-g.vk",
        ],
        &[("TRUST_PARAMS", "1")],
    );
    assert!(out.status.success() && text(&out).contains("not checked: TRUST_PARAMS=1"), "{}", text(&out));
    let out = snarkflow_with(
        &[
            "params",
            "fetch",
            "--manifest",
            manifest.to_str().unwrap(),
            "--params-dir",
            other.path().to_str().unwrap(),
            "--sector-size",
            "8MiB",
        ],
        &[],
    );
    assert!(
        !out.status.success() && text(&out).contains("no published parameter file has sector size 8MiB"),
        "{}",
        text(&out)
    );
}

/// `snarkflow doctor` says what on a host would fail a job, with the fix, and exits non-zero
/// then: here the parameters of a circuit it serves missing, and NATS out of reach; on a host
/// where all is well it says so and exits 0.
#[test]
fn doctor_finds_what_would_fail_a_job_and_says_how_to_fix_it() {
    let nats = snarkflow_testkit::NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = snarkflow(&["params", "generate", "--circuit", "dense-chain-c8", "--seed", "5", "--params-dir", d]);
    assert!(out.status.success(), "{}", text(&out));
    let url = nats.url();
    let base = ["doctor", "--role", "gateway", "--params-dir", d, "--gateway", "http://127.0.0.1:1"];

    // (no free-space floor here: the disk check has its own case below, and this machine's
    // free space is not the test's business)
    let all_well = ["--nats-url", &url, "--circuit", "dense-chain-c8", "--min-free-gib", "0"];
    let out = snarkflow(&[&base[..], &all_well].concat());
    assert!(out.status.success(), "{}", text(&out));
    for line in [
        "ok    NATS at",
        "ok    clock: not compared, the gateway is not reachable from here",
        "ok    dense-chain-c8: dense-chain-c8.params present",
        "ok    disk: ",
        "ok    device: cpu backend",
    ] {
        assert!(text(&out).contains(line), "{line:?} in {}", text(&out));
    }
    // a filesystem without the room asked for
    let out = snarkflow(&[&base[..], &["--no-nats", "--no-device", "--min-free-gib", "100000000"]].concat());
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("under --min-free-gib 100000000"), "{}", text(&out));
    assert!(text(&out).contains("fix: free space there"), "{}", text(&out));

    let out = snarkflow(&[&base[..], &["--nats-url", &url, "--circuit", "dense-chain-c16", "--no-device"]].concat());
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("FAIL  dense-chain-c16: dense-chain-c16.params is missing"), "{}", text(&out));
    assert!(text(&out).contains("fix: snarkflow params generate --circuit dense-chain-c16"), "{}", text(&out));

    let out = snarkflow(
        &[&base[..], &["--nats-url", "nats://127.0.0.1:1", "--nats-timeout-secs", "2", "--no-device"]].concat(),
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("not usable within 2 s"), "{}", text(&out));

    // a gateway whose clock is a day behind this host's
    let behind = httpdate::fmt_http_date(std::time::SystemTime::now() - std::time::Duration::from_secs(86_400));
    let gateway = answer_once(format!("HTTP/1.1 200 OK\r\nDate: {behind}\r\nContent-Length: 2\r\n\r\n{{}}"));
    let out = snarkflow(&["doctor", "--no-nats", "--no-device", "--params-dir", d, "--gateway", &gateway]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("FAIL  clock: 8640"), "{}", text(&out));
    assert!(text(&out).contains(" s ahead of the gateway's (more than --max-clock-skew-secs 2)"), "{}", text(&out));
    assert!(text(&out).contains("fix: synchronise this host's clock"), "{}", text(&out));
}

/// An HTTP server on a free loopback port that answers one request with `response`; its URL.
fn answer_once(response: String) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = [0u8; 4096];
        let _ = conn.read(&mut request);
        conn.write_all(response.as_bytes()).unwrap();
    });
    url
}
