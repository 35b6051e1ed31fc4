//! HTTP handlers, one group per file.

pub(crate) mod health;
pub(crate) mod jobs;
