//! Native witness generation: the auxiliary assignment a circuit's gadgets would allocate,
//! computed directly, without a constraint system.
//!
//! Each type here mirrors one bellperson gadget's *allocation behaviour*: which operations
//! allocate a variable, in which order, holding which value — including the gadgets' constant
//! folding (an operation on constants allocates nothing, an AND with a constant `true` returns
//! its other operand, …). Nothing builds a linear combination or names a namespace. Exactness
//! is what matters: the tests run the gadget and its mirror on the same inputs and compare the
//! two assignments value for value, so a dependency upgrade that changes a gadget is caught.
//!
//! - [`Aux`]: where allocated values go, in allocation order.
//! - [`Bit`]: `bellpepper_core::boolean::Boolean` (constant, a variable, or a variable's negation).
//! - [`U32`]: bellperson's `UInt32` (rotations, shifts, xor, `addmany`, SHA-256's `ch`, `maj`).
//! - [`Num`]: bellpepper's `AllocatedNum` (`alloc`, `mul`, `square`, `to_bits_le`, `to_bits_le_strict`).
//! - [`sha256`]: bellperson's `sha256` and `sha256_compression_function`.
//! - [`poseidon_hash`]: neptune's `circuit::poseidon_hash` (its optimized round schedule).

mod bits;
pub mod buffers;
mod num;
mod poseidon;
mod sha256;
mod uint32;

pub use bits::{Aux, Bit};
pub use num::Num;
pub use poseidon::poseidon_hash;
pub use sha256::{sha256, sha256_compression, sha256_iv};
pub use uint32::U32;
