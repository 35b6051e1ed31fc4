//! `params fetch`: published parameter files into a node's directory from an IPFS gateway (by
//! CID, as Curio and lotus fetch them), a directory or an HTTP(S) mirror; resumable, one
//! fetcher per directory, every file checked against its published digest before it is
//! installed.

use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context as _};
use snarkflow_filecoin::manifest::{digest_cached, digest_file, Manifest, Published};

/// filecoin-proofs' (and Curio's) IPFS gateway when `IPFS_GATEWAY` is unset.
pub(crate) const DEFAULT_IPFS_GATEWAY: &str = "https://proofs.filecoin.io/ipfs/";

/// Where `params fetch` takes files from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Files `<dir>/<name>`.
    Dir(PathBuf),
    /// Files `<base>/<name>`.
    Mirror(String),
    /// Files `<gateway>/<cid>`.
    Ipfs(String),
}

impl Source {
    /// `--from`, else IPFS through `IPFS_GATEWAY` (or the default gateway).
    pub(crate) fn new(from: Option<String>) -> Source {
        match from {
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => Source::Mirror(url),
            Some(dir) => Source::Dir(PathBuf::from(dir)),
            None => Source::Ipfs(
                std::env::var("IPFS_GATEWAY")
                    .ok()
                    .filter(|g| !g.trim().is_empty())
                    .unwrap_or_else(|| DEFAULT_IPFS_GATEWAY.into()),
            ),
        }
    }

    /// Where `name` is: a URL, or a path for a directory.
    fn location(&self, name: &str, published: &Published) -> String {
        match self {
            Source::Dir(dir) => dir.join(name).display().to_string(),
            Source::Mirror(base) => format!("{}/{name}", base.trim_end_matches('/')),
            Source::Ipfs(gateway) => format!("{}/{}", gateway.trim_end_matches('/'), published.cid),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Dir(dir) => write!(f, "{}", dir.display()),
            Source::Mirror(base) => write!(f, "{base}"),
            Source::Ipfs(gateway) => write!(f, "IPFS gateway {gateway}"),
        }
    }
}

/// The published files of sector size `size` (`32GiB`, or bytes).
pub(crate) fn of_sector_size(manifest: &Manifest, size: &str) -> anyhow::Result<Vec<String>> {
    let bytes = snarkflow_wire::parse_sector_size(size)
        .or_else(|| size.parse().ok())
        .with_context(|| format!("{size:?} is not a sector size (2KiB … 64GiB)"))?;
    let names: Vec<String> = manifest
        .names()
        .filter(|name| manifest.get(name).is_some_and(|p| p.sector_size == bytes))
        .map(str::to_owned)
        .collect();
    if names.is_empty() {
        bail!("no published parameter file has sector size {size}");
    }
    Ok(names)
}

/// Whether files already in place are taken without hashing them (`TRUST_PARAMS=1`, as Curio's
/// and lotus' fetchers read it).
fn trust_params() -> bool {
    std::env::var("TRUST_PARAMS").is_ok_and(|v| v == "1")
}

/// `params fetch`: every wanted file that is not already in `dir` with its published digest is
/// copied from `source` into `<name>.part` (continuing a part left by an earlier fetch),
/// checked, and only then renamed into place; one fetcher at a time per directory.
pub(crate) async fn fetch(
    dir: &Path,
    manifest: &Manifest,
    mut names: Vec<String>,
    source: &Source,
) -> anyhow::Result<ExitCode> {
    if names.is_empty() {
        bail!("name what to fetch: --sector-size (e.g. 32GiB), --circuit (e.g. porep-c2-32GiB,winning-post-32GiB) or --file");
    }
    names.sort();
    names.dedup();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let _lock = lock(dir).await?;
    let http = reqwest::Client::new();
    let trust = trust_params();
    for name in &names {
        let published = manifest.get(name).expect("wanted names are published");
        let path = dir.join(name);
        if path.exists() {
            if trust {
                println!("ok      {name} (already here; not checked: TRUST_PARAMS=1)");
                continue;
            }
            // the digest a gpu-worker (or an earlier fetch) kept beside the file, if it is current
            if digest_cached(&path)? == published.digest {
                println!("ok      {name} (already here)");
                continue;
            }
            bail!(
                "{} is there but not the published file: move it away first (fetch never overwrites a file it did not write)",
                path.display()
            );
        }
        let part = dir.join(format!("{name}.part"));
        let started = Instant::now();
        let (resumed, copied) = match source {
            Source::Dir(from) => copy(from, name, &part)?,
            Source::Mirror(_) | Source::Ipfs(_) => {
                download(&http, &source.location(name, published), name, &part).await?
            }
        };
        install(&part, &path, name, published)?;
        println!(
            "fetched {name} from {source}: {copied} bytes{} in {:.1} s, digest ok",
            if resumed > 0 { format!(" (continued after {resumed})") } else { String::new() },
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `dir/fetch.lock`, held (an exclusive lock on the file) until dropped: a second fetcher into
/// the same directory (another `params fetch`, a worker starting beside it) waits, saying so.
async fn lock(dir: &Path) -> anyhow::Result<std::fs::File> {
    let path = dir.join("fetch.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            eprintln!("waiting for another fetcher into {} ({} is locked)", dir.display(), path.display());
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(e).with_context(|| format!("locking {}", path.display())),
    }
    tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .context("waiting for the fetch lock")?
        .with_context(|| format!("locking {}", path.display()))
}

/// Check a finished part and rename it into place; a part with the wrong digest is removed.
fn install(part: &Path, path: &Path, name: &str, published: &Published) -> anyhow::Result<()> {
    let found = digest_file(part)?;
    if found != published.digest {
        std::fs::remove_file(part).ok();
        bail!("{name} from the source has digest {found}, not the published {}: not installed", published.digest);
    }
    std::fs::rename(part, path).with_context(|| format!("installing {}", path.display()))
}

/// Continue `part` from the file `name` in directory `from`; (bytes it already had, bytes copied).
fn copy(from: &Path, name: &str, part: &Path) -> anyhow::Result<(u64, u64)> {
    let source_path = from.join(name);
    let mut source = std::fs::File::open(&source_path).with_context(|| format!("opening {}", source_path.display()))?;
    let mut out = std::fs::OpenOptions::new().create(true).append(true).open(part)?;
    let have = out.metadata()?.len();
    let total = source.metadata()?.len();
    let have = if have > total { 0 } else { have };
    if have == 0 {
        out.set_len(0)?;
    }
    source.seek(SeekFrom::Start(have))?;
    let copied = std::io::copy(&mut source, &mut out).with_context(|| format!("copying {}", source_path.display()))?;
    out.sync_all()?;
    Ok((have, copied))
}

/// Continue `part` from `url` over HTTP(S), asking for the bytes it lacks; progress on stderr
/// every 10% of a file of known size.
async fn download(http: &reqwest::Client, url: &str, name: &str, part: &Path) -> anyhow::Result<(u64, u64)> {
    let mut out = std::fs::OpenOptions::new().create(true).append(true).open(part)?;
    let have = out.metadata()?.len();
    let mut request = http.get(url);
    if have > 0 {
        request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let mut response = request.send().await.with_context(|| format!("GET {url}"))?;
    let total = response
        .content_length()
        .map(|left| left + if response.status() == reqwest::StatusCode::PARTIAL_CONTENT { have } else { 0 });
    let status = response.status();
    let resumed = match status {
        reqwest::StatusCode::PARTIAL_CONTENT => have,
        reqwest::StatusCode::OK => {
            // the server sent the whole file (it does not do ranges): start over
            out.set_len(0)?;
            0
        }
        reqwest::StatusCode::RANGE_NOT_SATISFIABLE if have > 0 => return Ok((have, 0)),
        other => bail!("GET {url}: {other}"),
    };
    let mut copied = 0u64;
    let mut shown = 0;
    while let Some(chunk) = response.chunk().await.with_context(|| format!("reading {url}"))? {
        out.write_all(&chunk)?;
        copied += chunk.len() as u64;
        if let Some(total) = total.filter(|t| *t > 0) {
            let tenths = (resumed + copied) * 10 / total;
            if tenths > shown {
                shown = tenths;
                eprintln!("{name}: {}% of {total} bytes", tenths * 10);
            }
        }
    }
    out.sync_all()?;
    Ok((resumed, copied))
}
