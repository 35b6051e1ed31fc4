//! The native witnesses of the Filecoin circuits against the gadgets', one test binary: each
//! module one circuit.

mod porep;
mod post;
mod snap;
