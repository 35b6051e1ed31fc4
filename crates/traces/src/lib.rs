//! snarkflow's trace tooling.
//!
//! - [`Span`]: a neutral span record, read from OTLP protobuf ([`otlp::decode_protobuf`]),
//!   OTLP JSON files ([`otlp::parse_json`]) or Jaeger's query API ([`jaeger::parse`]).
//! - [`receiver`]: a minimal OTLP/HTTP trace receiver (tests, benchmarks, `snarkflow traces
//!   collect`), so the waterfall works without Jaeger.
//! - [`waterfall`]: the per-partition waterfall (S synthesis, `.` queue wait, G proving) and the
//!   summary that found cuzk's GPU idle gap: GPU busy fraction per device, idle gaps, stage
//!   medians, and the stage that bounds throughput; as text or SVG.

pub mod jaeger;
pub mod otlp;
pub mod receiver;
mod span;
pub mod waterfall;

pub use span::{AttrValue, Span};
