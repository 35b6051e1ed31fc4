//! Constraint shapes kept loaded, for rebuilding partitions that arrive as compact witnesses.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use snarkflow_circuits::PartitionCircuit;
use snarkflow_synthesis::{record_shape, ConstraintShape};
use snarkflow_wire::CircuitSpec;
use tracing::info;

/// Shapes by circuit id, recorded from the circuit's public structure on first use.
#[derive(Debug, Default)]
pub struct ShapeStore {
    loaded: Mutex<BTreeMap<String, Arc<ConstraintShape>>>,
    recording: Mutex<()>,
}

impl ShapeStore {
    pub fn get(&self, spec: &CircuitSpec) -> Result<Arc<ConstraintShape>, String> {
        let id = spec.circuit_id();
        if let Some(s) = self.loaded.lock().expect("shapes lock").get(&id) {
            return Ok(s.clone());
        }
        let _one_recorder = self.recording.lock().expect("shape recording lock");
        if let Some(s) = self.loaded.lock().expect("shapes lock").get(&id) {
            return Ok(s.clone());
        }
        let started = Instant::now();
        let shape = Arc::new(
            record_shape(PartitionCircuit::blank(*spec), &id).map_err(|e| format!("recording the shape of {id}: {e}"))?,
        );
        info!(
            circuit_id = %id, seconds = started.elapsed().as_secs_f64(), constraints = shape.num_constraints(),
            nnz = shape.a.nnz() + shape.b.nnz() + shape.c.nnz(), hash = %shape.hash_hex(), "constraint shape loaded"
        );
        self.loaded.lock().expect("shapes lock").insert(id, shape.clone());
        Ok(shape)
    }

    /// `circuit-id:hash-prefix` of every loaded shape, for readiness.
    pub fn loaded(&self) -> Vec<String> {
        self.loaded.lock().expect("shapes lock").iter().map(|(id, s)| format!("{id}:{}", &s.hash_hex()[..16])).collect()
    }
}
