//! The verifying keys a gateway checks proofs with: present, and the published ones.
use super::*;
use snarkflow_filecoin::manifest::{digest_file, Manifest};

/// A 2 KiB PoRep verifying key (any bytes) in a fresh directory, and a policy that checks
/// keys against a manifest publishing `digest` under its name (`None`: a test cache).
fn policy(dir: &std::path::Path, digest: Option<&str>) -> (Policy, CircuitSpec) {
    let spec = snarkflow_circuits::circuit("porep-c2-2KiB");
    let name = format!("{}.vk", snarkflow_circuits::param_file_stem(&spec).unwrap());
    std::fs::write(dir.join(&name), b"a verifying key").unwrap();
    let published = digest.map(|d| {
        Manifest::parse(&format!(r#"{{"{name}": {{"cid": "Qm", "digest": "{d}", "sector_size": 2048}}}}"#)).unwrap()
    });
    let policy = Policy {
        enable_test_kinds: false,
        max_test_job_constraints: 0,
        params_dir: dir.to_owned(),
        published,
        default_deadlines: Vec::new(),
        max_deadline_secs: super::MAX_DEADLINE_SECS,
    };
    (policy, spec)
}

#[test]
fn a_verifying_key_that_is_not_the_published_one_is_refused_unless_the_cache_is_a_test_cache() {
    let dir = tempfile::tempdir().unwrap();
    let (wrong, spec) = policy(dir.path(), Some("00000000000000000000000000000000"));
    match wrong.check_circuit(&spec, 1) {
        Err(ApiError::NotServed(m)) => {
            assert!(m.contains("not the file filecoin-proofs publishes") && m.contains("--test-params"), "{m}");
            assert!(!m.contains(&*dir.path().to_string_lossy()), "the answer names no host path: {m}");
        }
        other => panic!("a key with another digest was accepted: {other:?}"),
    }
    let vk = dir.path().join(format!("{}.vk", snarkflow_circuits::param_file_stem(&spec).unwrap()));
    let (right, _) = policy(dir.path(), Some(&digest_file(&vk).unwrap()));
    right.check_circuit(&spec, 1).unwrap();
    let (test_cache, _) = policy(dir.path(), None);
    test_cache.check_circuit(&spec, 1).unwrap();
}

#[test]
fn a_forged_key_of_the_same_length_with_a_forged_check_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, spec) = policy(dir.path(), None);
    let vk = dir.path().join(format!("{}.vk", snarkflow_circuits::param_file_stem(&spec).unwrap()));
    let published = digest_file(&vk).unwrap();
    let (right, _) = policy(dir.path(), Some(&published));
    right.check_circuit(&spec, 1).unwrap();
    // whoever can write the directory swaps the key for another of the same length and
    // writes the record a cached check would believe: this size, this time, the published digest
    let mut forged = std::fs::read(&vk).unwrap();
    let last = forged.len() - 1;
    forged[last] ^= 0x5a;
    std::fs::write(&vk, &forged).unwrap();
    let meta = std::fs::metadata(&vk).unwrap();
    let mtime = meta.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    std::fs::write(vk.with_extension("vk.checked"), format!("{} {mtime} {published}\n", meta.len())).unwrap();
    match right.check_circuit(&spec, 1) {
        Err(ApiError::NotServed(m)) => assert!(m.contains("not the file filecoin-proofs publishes"), "{m}"),
        other => panic!("a forged key was accepted: {other:?}"),
    }
}
