//! The parameter store: paths, missing files, generation and loading once, the file check.

use super::*;

#[test]
fn missing_parameters_name_the_expected_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = ParamStore::new(dir.path(), snarkflow_circuits::catalog());
    let spec = snarkflow_circuits::circuit("dense-chain-c8");
    let err = store.get(&spec, false).unwrap_err();
    assert!(err.to_string().contains("dense-chain-c8.params"), "{err}");
    // not a published file: made with `params generate`
    let fix = format!("run `snarkflow params generate --circuit dense-chain-c8 --params-dir {}`", dir.path().display());
    assert!(err.to_string().contains(&fix), "{err}");
    assert!(store.loaded_ids().is_empty());
}

#[test]
fn missing_filecoin_parameters_name_filecoin_proofs_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = ParamStore::new(dir.path(), snarkflow_circuits::catalog());
    let spec = snarkflow_circuits::circuit("porep-c2-32GiB");
    let err = store.get(&spec, false).unwrap_err().to_string();
    assert!(err.contains("porep-c2-32GiB"), "{err}");
    assert!(err.contains("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-"), "{err}");
    let fix = format!("(run `snarkflow params fetch --circuit porep-c2-32GiB --params-dir {}`)", dir.path().display());
    assert!(err.ends_with(&format!(".params {fix}")), "{err}");
}

#[test]
fn generated_parameters_are_cached_and_loaded_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = ParamStore::new(dir.path(), snarkflow_circuits::catalog());
    let spec = snarkflow_circuits::circuit("dense-chain-c8");
    let first = store.get(&spec, true).unwrap();
    assert!(store.params_path(&spec).exists() && store.vk_path(&spec).exists());
    let second = store.get(&spec, false).unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(store.loaded_ids(), vec!["dense-chain-c8".to_owned()]);
    // a fresh store reads the same file back
    let again = ParamStore::new(dir.path(), snarkflow_circuits::catalog()).get(&spec, false).unwrap();
    assert_eq!(again.vk, first.vk);
    // the .vk file (written before the sections) is the parameters' key
    let vk_file =
        bellperson::groth16::VerifyingKey::<blstrs::Bls12>::read(&fs::read(store.vk_path(&spec)).unwrap()[..]).unwrap();
    assert!(vk_file == first.vk);
    assert!(again.parameters().is_some());
}

#[derive(Debug)]
struct Refuse;

impl FileCheck for Refuse {
    fn check(&self, _: &Path) -> Result<(), FileRefused> {
        Err(FileRefused { source: "not this one".into(), fix: Some("use another".into()) })
    }
}

#[test]
fn a_file_its_check_refuses_is_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let spec = snarkflow_circuits::circuit("dense-chain-c8");
    ParamStore::new(dir.path(), snarkflow_circuits::catalog()).generate(&spec, false).unwrap();
    let store = ParamStore::new(dir.path(), snarkflow_circuits::catalog()).with_file_check(Arc::new(Refuse));
    let err = store.get(&spec, false).unwrap_err();
    assert!(matches!(&err, ParamsError::Untrusted { path, .. } if path.ends_with("dense-chain-c8.params")), "{err}");
    assert!(err.to_string().ends_with("dense-chain-c8.params: not this one: use another"), "{err}");
    assert!(store.loaded_ids().is_empty());
}

#[test]
fn random_filecoin_parameters_are_never_written_beside_trusted_setup_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = ParamStore::new(dir.path(), snarkflow_circuits::catalog());
    let real = "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-x.params";
    fs::write(dir.path().join(real), b"from paramfetch").unwrap();
    let spec = snarkflow_circuits::circuit("winning-post-2KiB");
    let err = store.generate(&spec, false).unwrap_err().to_string();
    assert!(err.starts_with("refusing to write random parameters for winning-post-2KiB into"), "{err}");
    assert!(err.contains(real), "{err}");
    assert!(!store.params_path(&spec).exists() && !store.vk_path(&spec).exists(), "nothing written");
    // the synthetic test kinds have no filecoin-proofs file names: they may live there
    store.generate(&snarkflow_circuits::circuit("dense-chain-c8"), false).unwrap();
    // a file marked random is not a trusted-setup file
    fs::write(dir.path().join(real).with_extension(RANDOM_MARK), b"").unwrap();
    assert_eq!(store.trusted_setup_file(), None);
}

#[test]
fn generation_without_room_for_the_file_is_refused_with_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let free = fs2::available_space(dir.path()).unwrap();
    room_for(dir.path(), free / 2).expect("half the free space fits");
    let err = room_for(dir.path(), free + (100 << 30)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::StorageFull);
    let said = err.to_string();
    assert!(said.starts_with("the parameters take "), "{said}");
    assert!(said.contains(&format!("{} has ", dir.path().display())), "{said}");
    assert!(said.ends_with("choose another --params-dir"), "{said}");
}
