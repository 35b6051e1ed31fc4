//! One module per proof kind.

/// `impl ProofKind` for a synthetic kind: a circuit type `$Circuit` with `blank(size)` and
/// `with_witness(size, seed, partition)`, one size field (its spec, rendered after `$prefix`:
/// `b64`, `c1024`), the job's seed for its input, verified by the provers.
macro_rules! synthetic_kind {
    (
        $(#[$doc:meta])* $Kind:ident, $Circuit:ident, $name:literal, $field:literal, $prefix:literal, $max:expr,
        constraints per unit: $per_unit:expr
    ) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub(crate) struct $Kind;

        impl crate::ProofKind for $Kind {
            const KIND: snarkflow_wire::JobKind = snarkflow_wire::JobKind::new($name);
            type Spec = u32;
            type Input = crate::Seed;
            const DEFAULT_PRIORITY: snarkflow_wire::Priority = snarkflow_wire::Priority::Normal;
            const DEFAULT_DEADLINE_SECS: u64 = 3600;
            const TAKES_INPUT: bool = false;
            const FILECOIN: bool = false;
            const VERIFIED_WHOLE: bool = false;

            fn render_spec(size: &u32) -> String {
                format!(concat!($prefix, "{}"), size)
            }

            fn parse_spec(params: &str) -> Option<u32> {
                params.strip_prefix($prefix)?.parse().ok().filter(|size| (1..=$max).contains(size))
            }

            fn from_seed(seed: u64) -> Option<crate::Seed> {
                Some(crate::Seed(seed))
            }

            fn seed(seed: &crate::Seed) -> u64 {
                seed.0
            }

            fn parse(
                input: &serde_json::Map<String, serde_json::Value>,
            ) -> Result<snarkflow_filecoin::Parsed<u32, crate::Seed>, crate::KindError> {
                let r = super::synthetic_request($name, $field, $max, input)?;
                Ok(snarkflow_filecoin::Parsed { spec: r.size, partitions: r.partitions, input: crate::Seed(r.seed) })
            }

            fn visit_blank<V: snarkflow_synthesis::CircuitVisitor>(
                size: &u32,
                visitor: V,
            ) -> Result<V::Output, crate::KindError> {
                Ok(visitor.visit($Circuit::blank(*size)))
            }

            fn visit_partition<V: snarkflow_synthesis::CircuitVisitor>(
                size: &u32,
                partition: u32,
                seed: &crate::Seed,
                visitor: V,
            ) -> Result<V::Output, crate::KindError> {
                Ok(visitor.visit($Circuit::with_witness(*size, seed.0, partition)))
            }

            fn param_file_stem(size: &u32) -> Result<String, crate::KindError> {
                Ok(crate::circuit_id::<Self>(size))
            }

            fn test_constraints(size: &u32) -> Option<u64> {
                Some(u64::from(*size) * $per_unit)
            }

            fn verify(
                _: &u32,
                _: &crate::Seed,
                _: &std::path::Path,
                _: &[Vec<u8>],
            ) -> Option<Result<(), snarkflow_filecoin::VerifyFailure>> {
                None
            }

            fn public_inputs(
                size: &u32,
                partitions: u32,
                seed: &crate::Seed,
            ) -> Result<Vec<Vec<blstrs::Scalar>>, crate::KindError> {
                Ok((0..partitions)
                    .map(|p| $Circuit::with_witness(*size, seed.0, p).public_inputs().expect("a witness has inputs"))
                    .collect())
            }
        }
    };
}
pub(crate) use synthetic_kind;

#[cfg(feature = "example-kind")]
pub(crate) mod cube;
pub(crate) mod dense_chain;
pub(crate) mod porep;
pub(crate) mod post;
pub(crate) mod sha256_chain;
pub(crate) mod snap;
pub(crate) mod window_post;
pub(crate) mod winning_post;

use serde_json::{Map, Value};
use snarkflow_wire::MAX_PARTITIONS;

use crate::kind::KindError;

/// What a synthetic kind's request says: its one size field, partitions and seed.
pub(crate) struct SyntheticRequest {
    pub size: u32,
    pub partitions: u32,
    pub seed: u64,
}

fn uint(input: &Map<String, Value>, field: &str, min: u64, max: u64, default: Option<u64>) -> Result<u64, KindError> {
    match input.get(field) {
        None | Some(Value::Null) => default.ok_or_else(|| KindError(format!("input.{field} is required"))),
        Some(v) => {
            let n = v.as_u64().ok_or_else(|| KindError(format!("input.{field} must be a non-negative integer")))?;
            if n < min || n > max {
                return Err(KindError(format!("input.{field} must be between {min} and {max}, got {n}")));
            }
            Ok(n)
        }
    }
}

/// Parse `{<size_field>, partitions?, seed?}` for a synthetic kind; a missing seed is random.
pub(crate) fn synthetic_request(
    kind: &str,
    size_field: &str,
    max_size: u32,
    input: &Map<String, Value>,
) -> Result<SyntheticRequest, KindError> {
    for key in input.keys() {
        if ![size_field, "partitions", "seed"].contains(&key.as_str()) {
            return Err(KindError(format!(
                "input.{key} is not a field of {kind} (fields: {size_field}, partitions, seed)"
            )));
        }
    }
    let size = uint(input, size_field, 1, max_size.into(), None)? as u32;
    let partitions = uint(input, "partitions", 1, MAX_PARTITIONS.into(), Some(1))? as u32;
    let seed = match input.get("seed") {
        None | Some(Value::Null) => rand::random(),
        Some(v) => {
            v.as_u64().ok_or_else(|| KindError("input.seed must be a non-negative integer below 2^64".into()))?
        }
    };
    Ok(SyntheticRequest { size, partitions, seed })
}

/// The `ProofKind` items of a Filecoin kind whose spec is its sector size alone.
macro_rules! sector_size_spec {
    () => {
        /// The sector size.
        type Spec = u64;

        fn render_spec(sector_size: &u64) -> String {
            snarkflow_wire::sector_size_label(*sector_size)
        }

        fn parse_spec(params: &str) -> Option<u64> {
            snarkflow_wire::parse_sector_size(params)
        }

        fn sector_size(sector_size: &u64) -> Option<u64> {
            Some(*sector_size)
        }
    };
}
pub(crate) use sector_size_spec;
