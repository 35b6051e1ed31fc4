//! What parameter files a gpu-worker proves with: a file whose name filecoin-proofs publishes
//! must have the published digest, unless the operator says the directory is a test cache
//! (`--test-params`, or `--generate-missing-params`, which makes random files itself). A proof
//! from other parameters would not verify on chain; a file cut short or corrupted on its way
//! to the host is found before the first job instead of after it.
//!
//! Hashing a 32 GiB PoRep's 47 GB takes most of a minute, so the digest is kept beside the file
//! (`manifest::digest_cached`) and reused while the file does not change.

use std::path::Path;

use snarkflow_filecoin::manifest::Manifest;
use snarkflow_prover::FileRefused;

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
    fn check(&self, path: &Path) -> Result<(), FileRefused> {
        let ParamTrust::Published(manifest) = self else { return Ok(()) };
        manifest.check_published(path).map_err(|e| FileRefused {
            source: e.into(),
            fix: Some(
                "a proof made with it would not verify on chain. Replace it with `snarkflow params fetch`, \
                 or start the gpu-worker with --test-params if this directory holds test parameters"
                    .into(),
            ),
        })
    }
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
        let e = bad.check(&path).unwrap_err().to_string();
        assert!(e.contains("not the file filecoin-proofs publishes") && e.contains("--test-params"), "{e}");
        ParamTrust::TestCache.check(&path).unwrap();
        // a file no manifest names (a test circuit's) is not checked
        ParamTrust::Published(Manifest::builtin()).check(&dir.path().join("sha256-chain-b1.params")).unwrap();
    }
}
