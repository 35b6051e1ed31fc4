//! Synthesis: run a circuit through our own [`bellperson::ConstraintSystem`] and keep exactly
//! what a Groth16 prover needs, as a [`SynthesizedPartition`].
//!
//! This is the synth → prove boundary. bellperson keeps its `ProvingAssignment` private; we
//! own the equivalent type so it can be serialized, shipped over the bus and proved elsewhere.
//! The compact path splits the same work in two: [`record_shape`] once per circuit shape
//! (sparse A, B, C and densities), [`synthesize_witness`] per partition (values only), and
//! [`ConstraintShape::rebuild`] next to the prover (a = A·w, b = B·w, c = C·w); the witness
//! travels in the [`encode_compact`] form.
//!
//! No NATS, HTTP or tokio here.
//!
//! Module map:
//! - `lib.rs`: [`SynthesizedPartition`] (the synth → prove boundary), [`CircuitCatalog`] (what
//!   a parameter store needs to know about circuits: file names, sector size, shapes; here
//!   because this is the lowest crate both the prover and the proof kinds link), and
//!   [`CircuitVisitor`] with the visitors that record, synthesize or witness a circuit.
//! - `recorder.rs`: [`PartitionRecorder`], our `ConstraintSystem`, and [`synthesize`].
//! - `encoding.rs`: the raw wire form of a `SynthesizedPartition`, checked on decode.
//! - `density.rs`: [`Density`] bitmaps.
//! - `witness.rs`: witness-only synthesis ([`synthesize_witness`]).
//! - `shape.rs`: [`ConstraintShape`] (sparse A, B, C, densities, hash) and its `rebuild`.
//!   `shape/repeat.rs`: [`record_repeated`], a head-plus-equal-blocks circuit recorded from two
//!   blocks and copied, checked against the two-block recording. `shape/columns.rs`: Aᵀ·v, Bᵀ·v,
//!   Cᵀ·v in parallel by stretches of columns, the QAP at τ of parameter generation.
//!   `shape/file.rs`: the shape's file form (`SFCS`), its hash re-checked on read.
//!   `shape/fold.rs`: [`Fold`], a recorded-as-copies shape's blocks (kept, stored in the file,
//!   checked on read), and the matrices with one block stored ([`FoldedMatrix`]) for a prover.
//! - `compact.rs`: the compact witness encoding (`SFCW`: a 2-bit tag per value, small values as
//!   varints, a SHA-256 over all of it), naming the shape it is for.
//! - [`native`]: witness generation without a constraint system, mirroring the gadgets'
//!   allocations value for value (`Bit`, `U32`, `Num`, SHA-256, neptune's Poseidon), and the
//!   witness buffers a process keeps between partitions (`native::buffers`). The
//!   circuit-level mirrors built on them live with their circuits (`crates/filecoin/src/native/`).

mod compact;
mod density;
mod encoding;
pub mod native;
mod recorder;
mod shape;
mod witness;

pub use compact::{
    compact_shape_hash, decode_compact, decode_compact_for, encode_compact, CompactError, CompactParts, WitnessShape,
    COMPACT_MAGIC, COMPACT_VERSION,
};
pub use density::Density;
pub use encoding::{DecodeError, ENCODING_MAGIC, ENCODING_VERSION};
pub use recorder::{synthesize, PartitionRecorder};
pub use shape::{
    record_repeated, record_shape, ConstraintShape, Fold, FoldedMatrix, ShapeError, ShapeFileError, SparseMatrix,
};
pub use witness::{synthesize_witness, PartitionWitness};

use bellperson::Circuit;
use blstrs::Scalar as Fr;

/// What a parameter store needs to know about circuits it does not build itself: where a
/// circuit's parameter files are named, and its constraint shape (from which random test
/// parameters are generated). The proof kinds implement it (`snarkflow_circuits::Catalog`);
/// a prover takes it as a value, so it links no circuit it only names files for.
pub trait CircuitCatalog: Send + Sync + std::fmt::Debug {
    /// File name (without extension) of the circuit's parameters and verifying key.
    fn param_file_stem(&self, spec: &snarkflow_wire::CircuitSpec) -> Result<String, CatalogError>;
    /// For one of filecoin-proofs' circuits, its sector size (its files get filecoin-proofs'
    /// `.meta`, random ones are marked, none is generated beside trusted-setup files); `None`
    /// for snarkflow's own test circuits.
    fn filecoin_sector_size(&self, spec: &snarkflow_wire::CircuitSpec) -> Option<u64>;
    /// The circuit's constraint shape, recorded from its blank circuit.
    fn record_shape(&self, spec: &snarkflow_wire::CircuitSpec) -> Result<ConstraintShape, CatalogError>;
    /// Whether most of the circuit's witness values are neither 0 nor 1 (a GPU prover's memory
    /// plan counts full MSMs of its queries then).
    fn dense_witness(&self, _spec: &snarkflow_wire::CircuitSpec) -> bool {
        false
    }
}

/// Why a [`CircuitCatalog`] could not name or shape a circuit: the kinds' own error (a spec no
/// kind knows, a synthesis error), boxed so this crate need not know the kinds' types.
pub type CatalogError = Box<dyn std::error::Error + Send + Sync>;

/// Something that consumes a circuit of any concrete type. `Circuit::synthesize` is generic, so
/// circuits cannot be boxed; code that builds circuits of many types (the synthetic kinds, the
/// Filecoin kinds for every sector shape) hands each one to a visitor instead.
pub trait CircuitVisitor {
    type Output;
    fn visit<C: Circuit<Fr> + Send>(self, circuit: C) -> Self::Output;
}

/// Visitor: [`record_shape`] of the circuit under the given circuit id.
#[derive(Debug, Clone, Copy)]
pub struct RecordShape<'a>(pub &'a str);

impl CircuitVisitor for RecordShape<'_> {
    type Output = Result<ConstraintShape, bellperson::SynthesisError>;
    fn visit<C: Circuit<Fr> + Send>(self, circuit: C) -> Self::Output {
        record_shape(circuit, self.0)
    }
}

/// Visitor: full [`synthesize`] of partition `.1` under circuit id `.0`.
#[derive(Debug, Clone, Copy)]
pub struct Synthesize<'a>(pub &'a str, pub u32);

impl CircuitVisitor for Synthesize<'_> {
    type Output = Result<SynthesizedPartition, bellperson::SynthesisError>;
    fn visit<C: Circuit<Fr> + Send>(self, circuit: C) -> Self::Output {
        synthesize(circuit, self.0, self.1)
    }
}

/// Visitor: witness-only [`synthesize_witness`] of partition `.1` under circuit id `.0`.
#[derive(Debug, Clone, Copy)]
pub struct SynthesizeWitness<'a>(pub &'a str, pub u32);

impl CircuitVisitor for SynthesizeWitness<'_> {
    type Output = Result<PartitionWitness, bellperson::SynthesisError>;
    fn visit<C: Circuit<Fr> + Send>(self, circuit: C) -> Self::Output {
        synthesize_witness(circuit, self.0, self.1)
    }
}

/// Everything a Groth16 prover needs of one synthesized partition circuit.
///
/// `a`, `b`, `c` are the evaluations of the three linear combinations of every constraint
/// (including the trailing `input_i * 0 = 0` constraints the prover adds per public input);
/// the densities say which variables appear in the A (aux) and B (input, aux) queries, so the
/// prover can skip unused bases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthesizedPartition {
    /// Identity of the circuit shape (and so of its Groth16 parameters).
    pub circuit_id: String,
    pub partition: u32,
    pub a: Vec<Fr>,
    pub b: Vec<Fr>,
    pub c: Vec<Fr>,
    /// Public inputs; element 0 is the constant ONE.
    pub input_assignment: Vec<Fr>,
    pub aux_assignment: Vec<Fr>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

impl SynthesizedPartition {
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// Public inputs as a verifier takes them (without the leading ONE).
    pub fn public_inputs(&self) -> &[Fr] {
        &self.input_assignment[1..]
    }

    /// The constraints `a·b = c` does not hold for (a, b, c being A·w, B·w, C·w), in order;
    /// empty when the witness satisfies the circuit. Checked in parallel.
    pub fn unsatisfied(&self) -> Vec<usize> {
        use rayon::prelude::*;
        (0..self.a.len()).into_par_iter().filter(|&i| self.a[i] * self.b[i] != self.c[i]).collect()
    }

    /// Checks the structural invariants a prover relies on; decoding calls it so that a
    /// malformed payload is rejected before proving.
    pub fn check_shape(&self) -> Result<(), DecodeError> {
        let n = self.a.len();
        let bad = |what: &str| Err(DecodeError::Shape(what.to_owned()));
        if self.b.len() != n || self.c.len() != n {
            return bad("a, b and c differ in length");
        }
        if self.input_assignment.is_empty() {
            return bad("no input assignment (the ONE input is missing)");
        }
        if self.a_aux_density.len() != self.aux_assignment.len()
            || self.b_aux_density.len() != self.aux_assignment.len()
        {
            return bad("aux density length differs from the aux assignment");
        }
        if self.b_input_density.len() != self.input_assignment.len() {
            return bad("input density length differs from the input assignment");
        }
        Ok(())
    }
}
