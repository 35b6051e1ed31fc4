//! What parameter files a gpu-worker proves with: a file whose name filecoin-proofs publishes
//! must have the published digest, unless the operator says the directory is a test cache
//! (`--test-params`, or `--generate-missing-params`, which makes random files itself). A proof
//! from other parameters would not verify on chain; a file cut short or corrupted on its way
//! to the host is found before the first job instead of after it.
//!
//! Hashing a 32 GiB PoRep's 47 GB takes most of a minute, so a verdict is kept beside the file
//! (`<file>.checked`: its size, modification time and digest) and reused while those match.

use std::path::Path;
use std::time::UNIX_EPOCH;

use snarkflow_filecoin::manifest::{digest_file, Manifest};
use tracing::info;

/// The gpu-worker's [`snarkflow_prover::FileCheck`].
#[derive(Debug)]
pub(crate) enum ParamTrust {
    /// Published file names must carry their published digest; other files (test circuits)
    /// are not checked.
    Published(Manifest),
    /// A test cache: random parameters under production names are expected.
    TestCache,
}

impl snarkflow_prover::FileCheck for ParamTrust {
    fn check(&self, path: &Path) -> Result<(), String> {
        let ParamTrust::Published(manifest) = self else { return Ok(()) };
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return Ok(()) };
        let Some(published) = manifest.get(name) else { return Ok(()) };
        let found = digest_cached(path).map_err(|e| format!("checking {}: {e}", path.display()))?;
        if found == published.digest {
            return Ok(());
        }
        Err(format!(
            "{} is not the file filecoin-proofs publishes under that name (digest {found}, published {}): \
             a proof made with it would not verify on chain. Replace it with `snarkflow params fetch`, \
             or start the gpu-worker with --test-params if this directory holds test parameters",
            path.display(),
            published.digest
        ))
    }
}

/// The file's digest, from `<file>.checked` when its size and modification time still match.
fn digest_cached(path: &Path) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    let mtime = meta.modified()?.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let stamp = format!("{} {mtime}", meta.len());
    let mut sidecar = path.as_os_str().to_owned();
    sidecar.push(".checked");
    if let Ok(text) = std::fs::read_to_string(&sidecar) {
        if let Some((kept, digest)) = text.trim().rsplit_once(' ') {
            if kept == stamp {
                return Ok(digest.to_owned());
            }
        }
    }
    let started = std::time::Instant::now();
    let digest = digest_file(path)?;
    info!(path = %path.display(), seconds = started.elapsed().as_secs_f64(), "parameter file digest computed");
    // a read-only parameter directory only costs the next start another hash
    let _ = std::fs::write(&sidecar, format!("{stamp} {digest}\n"));
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use snarkflow_prover::FileCheck as _;

    fn manifest_for(name: &str, digest: &str) -> Manifest {
        Manifest::parse(&format!(r#"{{"{name}": {{"cid": "Qm", "digest": "{digest}", "sector_size": 2048}}}}"#))
            .unwrap()
    }

    #[test]
    fn a_published_name_needs_the_published_digest_unless_the_cache_is_a_test_cache() {
        let dir = tempfile::tempdir().unwrap();
        let name = "v28-stacked-proof-of-replication-test.params";
        let path = dir.path().join(name);
        std::fs::write(&path, b"abc").unwrap();
        let good = ParamTrust::Published(manifest_for(name, "ba80a53f981c4d0d6a2797b69f12f6e9"));
        good.check(&path).unwrap();
        let bad = ParamTrust::Published(manifest_for(name, "00000000000000000000000000000000"));
        let e = bad.check(&path).unwrap_err();
        assert!(e.contains("not the file filecoin-proofs publishes") && e.contains("--test-params"), "{e}");
        ParamTrust::TestCache.check(&path).unwrap();
        // a file no manifest names (a test circuit's) is not checked
        ParamTrust::Published(Manifest::builtin()).check(&dir.path().join("sha256-chain-b1.params")).unwrap();
    }

    #[test]
    fn the_verdict_beside_the_file_is_used_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.params");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(digest_cached(&path).unwrap(), "ba80a53f981c4d0d6a2797b69f12f6e9");
        let sidecar = dir.path().join("f.params.checked");
        let kept = std::fs::read_to_string(&sidecar).unwrap();
        // a sidecar with the same stamp is believed (here: a made-up digest)
        let stamp = kept.trim().rsplit_once(' ').unwrap().0.to_owned();
        std::fs::write(&sidecar, format!("{stamp} feed\n")).unwrap();
        assert_eq!(digest_cached(&path).unwrap(), "feed");
        // another size: hashed again
        std::fs::write(&path, b"abcd").unwrap();
        assert_ne!(digest_cached(&path).unwrap(), "feed");
    }
}
