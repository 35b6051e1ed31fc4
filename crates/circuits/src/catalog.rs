//! The proof kinds as a parameter store sees them.

use std::sync::Arc;

use snarkflow_synthesis::{CatalogError, CircuitCatalog, ConstraintShape};
use snarkflow_wire::CircuitSpec;

/// Every kind's parameter file names and blank circuits, for `snarkflow_prover::ParamStore`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Catalog;

impl CircuitCatalog for Catalog {
    fn param_file_stem(&self, spec: &CircuitSpec) -> Result<String, CatalogError> {
        Ok(crate::param_file_stem(spec)?)
    }

    fn filecoin_sector_size(&self, spec: &CircuitSpec) -> Option<u64> {
        crate::filecoin_sector_size(spec)
    }

    fn record_shape(&self, spec: &CircuitSpec) -> Result<ConstraintShape, CatalogError> {
        Ok(crate::record_shape(spec)?)
    }

    fn dense_witness(&self, spec: &CircuitSpec) -> bool {
        crate::dense_witness(spec)
    }
}

/// The catalog as a parameter store takes it.
pub fn catalog() -> Arc<dyn CircuitCatalog> {
    Arc::new(Catalog)
}
