//! Constraint shapes kept loaded, for rebuilding partitions that arrive as compact witnesses.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use snarkflow_circuits::KindError;
use snarkflow_synthesis::ConstraintShape;
use snarkflow_wire::CircuitSpec;
use tracing::{info, warn};

/// Shapes by circuit id: read from `<dir>/<circuit-id>.shape` when present (the hash is
/// re-checked), else recorded from the circuit's public structure and written there.
#[derive(Debug, Default)]
pub(crate) struct ShapeStore {
    dir: Option<PathBuf>,
    loaded: Mutex<BTreeMap<String, Arc<ConstraintShape>>>,
    recording: Mutex<()>,
}

impl ShapeStore {
    /// A store that persists shapes in `dir` (next to the parameters).
    pub(crate) fn new(dir: PathBuf) -> Self {
        ShapeStore { dir: Some(dir), ..Default::default() }
    }

    fn path(&self, id: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{id}.shape")))
    }

    fn read(&self, id: &str) -> Option<ConstraintShape> {
        let path = self.path(id)?;
        let file = std::fs::File::open(&path).ok()?;
        match ConstraintShape::read_from(std::io::BufReader::with_capacity(1 << 20, file)) {
            Ok(shape) if shape.circuit_id == id => Some(shape),
            Ok(_) => {
                warn!(path = %path.display(), "shape file is for another circuit; recording afresh");
                None
            }
            Err(e) => {
                warn!(path = %path.display(), error = %e, "unusable shape file; recording afresh");
                None
            }
        }
    }

    fn write(&self, shape: &ConstraintShape) {
        let Some(path) = self.path(&shape.circuit_id) else { return };
        if let Err(e) = shape.write_file(&path) {
            warn!(path = %path.display(), error = %e, "could not persist the constraint shape");
        }
    }

    pub(crate) fn get(&self, spec: &CircuitSpec) -> Result<Arc<ConstraintShape>, KindError> {
        let id = spec.circuit_id();
        if let Some(s) = self.loaded.lock().expect("shapes lock").get(&id) {
            return Ok(s.clone());
        }
        let _one_recorder = self.recording.lock().expect("shape recording lock");
        if let Some(s) = self.loaded.lock().expect("shapes lock").get(&id) {
            return Ok(s.clone());
        }
        let started = Instant::now();
        let (shape, source) = match self.read(&id) {
            Some(shape) => (shape, "file"),
            None => {
                let shape = snarkflow_circuits::record_shape(spec)?;
                self.write(&shape);
                (shape, "recorded")
            }
        };
        let shape = Arc::new(shape);
        info!(
            circuit_id = %id, source, seconds = started.elapsed().as_secs_f64(), constraints = shape.num_constraints(),
            nnz = shape.a.nnz() + shape.b.nnz() + shape.c.nnz(), hash = %shape.hash_hex(), "constraint shape loaded"
        );
        self.loaded.lock().expect("shapes lock").insert(id, shape.clone());
        Ok(shape)
    }

    /// Constraint and variable (input + aux) counts of a loaded shape.
    pub(crate) fn sizes(&self, spec: &CircuitSpec) -> Option<(u64, u64)> {
        let loaded = self.loaded.lock().expect("shapes lock");
        loaded.get(&spec.circuit_id()).map(|s| (s.num_constraints() as u64, (s.num_inputs + s.num_aux) as u64))
    }

    /// `circuit-id:hash-prefix` of every loaded shape, for readiness.
    pub(crate) fn loaded(&self) -> Vec<String> {
        self.loaded.lock().expect("shapes lock").iter().map(|(id, s)| format!("{id}:{}", &s.hash_hex()[..16])).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_persisted_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let spec = snarkflow_circuits::circuit("dense-chain-c64");
        let first = ShapeStore::new(dir.path().to_owned()).get(&spec).unwrap();
        let file = dir.path().join("dense-chain-c64.shape");
        assert!(file.exists(), "the shape is written next to the parameters");
        let again = ShapeStore::new(dir.path().to_owned()).get(&spec).unwrap();
        assert_eq!(*again, *first);
        // a corrupt file is not trusted: the shape is recorded afresh (and equal)
        let mut bytes = std::fs::read(&file).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&file, bytes).unwrap();
        let third = ShapeStore::new(dir.path().to_owned()).get(&spec).unwrap();
        assert_eq!(*third, *first);
        assert_eq!(ShapeStore::new(dir.path().to_owned()).loaded(), Vec::<String>::new());
    }
}
