//! HTTP handlers, one group per file.

pub mod health;
pub mod jobs;
