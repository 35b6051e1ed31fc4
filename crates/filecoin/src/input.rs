//! A checked Filecoin job input, as stored with the job (JSON), whatever its kind.

use crate::{FilecoinError, PorepInput, PostInput, SnapInput};
use serde::{Deserialize, Serialize};

/// The input of a Filecoin job: one variant per kind that has one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum JobInput {
    PorepC2(PorepInput),
    SnapUpdate(SnapInput),
    WindowPost(PostInput),
    WinningPost(PostInput),
}

impl JobInput {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("job inputs serialize")
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, FilecoinError> {
        serde_json::from_slice(bytes).map_err(|e| FilecoinError::new(format!("stored job input is unreadable: {e}")))
    }
}
