//! The parameter files filecoin-proofs publishes, and their digests: the `parameters.json` that
//! storage-proofs-core 19.1 carries (by default), or one an operator names (a newer release's,
//! Curio's). A digest is the first 128 bits of the file's BLAKE2b-512, in hex, as
//! filecoin-proofs checks them (`verify_production_entry`).

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Deserialize;

/// One published file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Published {
    /// IPFS CID of the file (filecoin-proofs' own fetcher reads it from IPFS gateways).
    pub cid: String,
    /// First 128 bits of its BLAKE2b-512, hex.
    pub digest: String,
    pub sector_size: u64,
}

/// Why a manifest could not be read, or a file is not the published one.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A file (the manifest, or a parameter file being checked) could not be read.
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{} is not a parameters.json: {source}", path.display())]
    NotManifest { path: PathBuf, source: serde_json::Error },
    /// The file is there and readable, but its digest is not the published one.
    #[error("{} is not the file filecoin-proofs publishes under that name (digest {found}, published {published})", path.display())]
    NotPublished { path: PathBuf, found: String, published: String },
}

/// File name (`v28-….params`, `v28-….vk`) → what is published for it.
#[derive(Debug, Clone)]
pub struct Manifest(BTreeMap<String, Published>);

impl Manifest {
    /// The manifest storage-proofs-core 19.1 carries.
    pub fn builtin() -> Manifest {
        Manifest::parse(storage_proofs_core::parameter_cache::PARAMETERS_DATA)
            .expect("storage-proofs-core's parameters.json")
    }

    /// Whether the file at `path` is the one published under its name: `Ok` for a name this
    /// manifest does not list (a test circuit's) or a matching digest; otherwise why not.
    pub fn check_published(&self, path: &Path) -> Result<(), ManifestError> {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return Ok(()) };
        let Some(published) = self.get(name) else { return Ok(()) };
        // A verifying key (a few KiB) is hashed every time: the `.checked` record beside a file
        // is believed on size and time alone, which whoever can write the directory can forge
        // together with the file. Only the 47 GB `.params` files, which a worker must not hash
        // at every start, trust it (keep their directory read-only to the workers).
        let found = if name.ends_with(".vk") { digest_file(path) } else { digest_cached(path) }
            .map_err(|source| ManifestError::Read { path: path.to_owned(), source })?;
        if found == published.digest {
            return Ok(());
        }
        Err(ManifestError::NotPublished { path: path.to_owned(), found, published: published.digest.clone() })
    }

    /// The manifest an operator named (`--params-manifest`), else [`Manifest::builtin`].
    pub fn named_or_builtin(path: Option<&Path>) -> Result<Manifest, ManifestError> {
        path.map_or_else(|| Ok(Manifest::builtin()), Manifest::read)
    }

    /// A `parameters.json` of filecoin-proofs' format.
    pub fn parse(json: &str) -> Result<Manifest, serde_json::Error> {
        serde_json::from_str(json).map(Manifest)
    }

    /// [`Manifest::parse`] of a file.
    pub fn read(path: &Path) -> Result<Manifest, ManifestError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ManifestError::Read { path: path.to_owned(), source })?;
        Manifest::parse(&text).map_err(|source| ManifestError::NotManifest { path: path.to_owned(), source })
    }

    /// What is published for `file_name` (`None`: not a published file, e.g. a test circuit's).
    pub fn get(&self, file_name: &str) -> Option<&Published> {
        self.0.get(file_name)
    }

    /// Every published file name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// The digest filecoin-proofs compares with [`Published::digest`]: the first 128 bits of the
/// file's BLAKE2b-512, hex (about 1 GB/s: a 32 GiB PoRep's 47 GB file takes most of a minute).
pub fn digest_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut state = blake2b_simd::State::new();
    let mut buf = vec![0u8; 4 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        state.update(&buf[..n]);
    }
    Ok(state.finalize().to_hex()[..32].to_string())
}

/// [`digest_file`], kept in `<file>.checked` (the file's size, modification time and digest)
/// and read from there while the size and time still match: a 47 GB file is hashed once, not
/// at every start of every worker.
pub fn digest_cached(path: &Path) -> std::io::Result<String> {
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
    let digest = digest_file(path)?;
    // a read-only parameter directory only costs the next start another hash
    let _ = std::fs::write(&sidecar, format!("{stamp} {digest}\n"));
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_manifest_names_the_production_files() {
        let m = Manifest::builtin();
        let porep_32 = m
            .names()
            .filter(|n| {
                n.starts_with("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-")
            })
            .count();
        assert_eq!(porep_32, 2, "the 32 GiB PoRep .params and .vk");
        let vk = m.names().find(|n| n.ends_with(".vk")).unwrap();
        assert_eq!(m.get(vk).unwrap().digest.len(), 32);
        assert!(m.get("sha256-chain-b1.params").is_none());
    }

    /// What went wrong is a variant a caller can branch on, and its message names the file.
    #[test]
    fn a_check_says_which_file_is_wrong_missing_or_not_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = Manifest::parse(r#"{"v28-x.vk": {"cid": "Qm", "digest": "00", "sector_size": 2048}}"#).unwrap();
        let path = dir.path().join("v28-x.vk");
        std::fs::write(&path, b"abc").unwrap();
        let e = manifest.check_published(&path).unwrap_err();
        assert!(
            matches!(&e, ManifestError::NotPublished { found, .. } if found == "ba80a53f981c4d0d6a2797b69f12f6e9"),
            "{e}"
        );
        assert!(e.to_string().contains("v28-x.vk is not the file filecoin-proofs publishes"), "{e}");
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(manifest.check_published(&path), Err(ManifestError::Read { .. })));
        // a name the manifest does not list (a test circuit's) passes
        assert!(manifest.check_published(&dir.path().join("dense-chain-c8.vk")).is_ok());
        let not_json = dir.path().join("parameters.json");
        std::fs::write(&not_json, b"{").unwrap();
        assert!(matches!(Manifest::read(&not_json), Err(ManifestError::NotManifest { .. })));
    }

    #[test]
    fn the_digest_is_blake2b_512_truncated_to_128_bits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        // BLAKE2b-512("abc") begins ba80a53f981c4d0d6a2797b69f12f6e9 (RFC 7693, appendix A)
        assert_eq!(digest_file(&path).unwrap(), "ba80a53f981c4d0d6a2797b69f12f6e9");
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
