//! Control requests the gateway sends to every gpu-worker over core NATS (request, then every
//! worker's reply to the requester's inbox): what a worker is doing and which parameters it
//! holds (cuzk's `GetStatus`), and loading or dropping a circuit's parameters (`PreloadSRS`,
//! `EvictSRS`). JSON, like the other messages.

use serde::{Deserialize, Serialize};

/// Every gpu-worker answers with its [`GpuWorkerStatus`].
pub const GPU_STATUS_SUBJECT: &str = "snarkflow.control.gpu.status";
/// Every gpu-worker acts on a [`ParamsCommand`] and answers with a [`ParamsReply`].
pub const GPU_PARAMS_SUBJECT: &str = "snarkflow.control.gpu.params";

/// One gpu-worker as it reports itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GpuWorkerStatus {
    pub worker: String,
    pub host: String,
    /// `cpu`, `cuda` or `cuda-supraseal`.
    pub backend: String,
    /// Whether it takes work (its device passed its probe, NATS is connected).
    pub ready: bool,
    /// Its state in words (`ready`, `device unusable`, ...).
    pub state: String,
    /// The devices it proves on; one entry named `cpu` for the CPU backend.
    pub devices: Vec<GpuDevice>,
    /// Parameters resident in its memory.
    pub loaded: Vec<LoadedCircuit>,
    /// The partition on its device now.
    pub current: Option<CurrentProof>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GpuDevice {
    /// The GPU's index on its host (as `nvidia-smi` numbers them), else its ordinal.
    pub index: u32,
    pub name: String,
    pub memory_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LoadedCircuit {
    pub circuit_id: String,
    /// Size of its parameter file (what loading it reads).
    pub bytes: u64,
    /// The prover of this circuit on this worker: its backend, or `cuda-supraseal` where the
    /// resident prover has no memory plan for the device.
    #[serde(default)]
    pub prover: String,
    /// The resident prover's memory plan (`resident`, `partly-resident`, `streamed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_plan: Option<String>,
    /// Page-locked host bytes the plan keeps the key in (0 when all of it is on the device).
    #[serde(default)]
    pub host_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CurrentProof {
    /// Empty when the caller may not see that job (another tenant's).
    pub job_id: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub kind: crate::JobKind,
    pub partition: u32,
}

/// Load or drop the parameters of one circuit (one of our circuit ids).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum ParamsCommand {
    Preload { circuit_id: String },
    Evict { circuit_id: String },
}

/// A worker's answer to a [`ParamsCommand`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "lowercase")]
pub enum ParamsReply {
    Preloaded { worker: String, already_loaded: bool, load_ms: u64 },
    Evicted { worker: String, was_loaded: bool, freed_bytes: u64 },
    Error { worker: String, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_replies_are_tagged_json() {
        let cmd = ParamsCommand::Preload { circuit_id: "porep-c2-32GiB".into() };
        let json = serde_json::to_string(&cmd).unwrap();
        assert_eq!(json, r#"{"op":"preload","circuit_id":"porep-c2-32GiB"}"#);
        assert_eq!(serde_json::from_str::<ParamsCommand>(&json).unwrap(), cmd);
        let reply = ParamsReply::Evicted { worker: "gpu-1".into(), was_loaded: true, freed_bytes: 7 };
        let back: ParamsReply = serde_json::from_str(&serde_json::to_string(&reply).unwrap()).unwrap();
        assert_eq!(back, reply);
    }
}
