//! The proof kinds as a parameter store sees them.

use std::sync::Arc;

use snarkflow_synthesis::{CircuitCatalog, ConstraintShape};
use snarkflow_wire::CircuitSpec;

/// Every kind's parameter file names and blank circuits, for `snarkflow_prover::ParamStore`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Catalog;

impl CircuitCatalog for Catalog {
    fn param_file_stem(&self, spec: &CircuitSpec) -> Result<String, String> {
        crate::param_file_stem(spec).map_err(|e| e.to_string())
    }

    fn filecoin_sector_size(&self, spec: &CircuitSpec) -> Option<u64> {
        crate::filecoin_sector_size(spec)
    }

    fn record_shape(&self, spec: &CircuitSpec) -> Result<ConstraintShape, String> {
        crate::record_shape(spec).map_err(|e| e.to_string())
    }
}

/// The catalog as a parameter store takes it.
pub fn catalog() -> Arc<dyn CircuitCatalog> {
    Arc::new(Catalog)
}
