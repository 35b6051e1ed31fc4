//! A Filecoin job's input with its fields already binary, as the cuzk gRPC interface carries
//! them: checked by the same functions as the JSON `input` of `POST /v1/jobs` once that has
//! been read (`porep::parse_envelope`, `snap::checked`, `PostKind::checked`), without encoding
//! its bytes as hex or base64 and parsing them back first.

use serde::Serialize;
use snarkflow_wire::JobKind;

use crate::fields::by_name;
use crate::{porep, post, prover_id, snap, FilecoinError, JobInput, Parsed, PostInput, SnapInput};

/// One Filecoin job's input; registered proofs by their filecoin-proofs-api names.
#[derive(Debug, Clone, Serialize)]
pub enum FilecoinRequest {
    /// The C1 envelope's JSON bytes (`{SectorNum, Phase1Out, SectorSize}`).
    PorepC2 {
        miner_id: u64,
        envelope: Vec<u8>,
    },
    SnapUpdate {
        registered_proof: String,
        comm_r_old: [u8; 32],
        comm_r_new: [u8; 32],
        comm_d_new: [u8; 32],
        vanilla_proofs: Vec<Vec<u8>>,
    },
    WindowPost {
        registered_proof: String,
        miner_id: u64,
        randomness: [u8; 32],
        partition_index: u32,
        vanilla_proofs: Vec<Vec<u8>>,
    },
    WinningPost {
        registered_proof: String,
        miner_id: u64,
        randomness: [u8; 32],
        vanilla_proofs: Vec<Vec<u8>>,
    },
}

impl FilecoinRequest {
    pub fn kind(&self) -> JobKind {
        match self {
            FilecoinRequest::PorepC2 { .. } => JobKind::PorepC2,
            FilecoinRequest::SnapUpdate { .. } => JobKind::SnapUpdate,
            FilecoinRequest::WindowPost { .. } => JobKind::WindowPost,
            FilecoinRequest::WinningPost { .. } => JobKind::WinningPost,
        }
    }

    /// Check it completely, as the JSON form is, and turn it into a job.
    pub fn check(self) -> Result<Parsed<JobInput>, FilecoinError> {
        fn wrap<I>(p: Parsed<I>, f: impl FnOnce(I) -> JobInput) -> Parsed<JobInput> {
            Parsed { spec: p.spec, partitions: p.partitions, input: f(p.input) }
        }
        fn named<T: serde::de::DeserializeOwned>(name: String, what: &str) -> Result<T, FilecoinError> {
            by_name(name.clone()).map_err(|_| FilecoinError::new(format!("{name} is not a {what} registered proof")))
        }
        Ok(match self {
            FilecoinRequest::PorepC2 { miner_id, envelope } => {
                wrap(porep::parse_envelope(miner_id, &envelope)?, JobInput::PorepC2)
            }
            FilecoinRequest::SnapUpdate { registered_proof, comm_r_old, comm_r_new, comm_d_new, vanilla_proofs } => {
                let registered_proof = named(registered_proof, "SnapDeals update")?;
                let input = SnapInput { registered_proof, comm_r_old, comm_r_new, comm_d_new, vanilla_proofs };
                wrap(snap::checked(input)?, JobInput::SnapUpdate)
            }
            FilecoinRequest::WindowPost { registered_proof, miner_id, randomness, partition_index, vanilla_proofs } => {
                let registered_proof = named(registered_proof, "PoSt")?;
                let prover_id = prover_id(miner_id);
                let input =
                    PostInput { miner_id, prover_id, registered_proof, randomness, partition_index, vanilla_proofs };
                wrap(post::PostKind::Window.checked(input)?, JobInput::WindowPost)
            }
            FilecoinRequest::WinningPost { registered_proof, miner_id, randomness, vanilla_proofs } => {
                let registered_proof = named(registered_proof, "PoSt")?;
                let prover_id = prover_id(miner_id);
                let input =
                    PostInput { miner_id, prover_id, registered_proof, randomness, partition_index: 0, vanilla_proofs };
                wrap(post::PostKind::Winning.checked(input)?, JobInput::WinningPost)
            }
        })
    }

    /// SHA-256 (hex) of the kind and this input: what an idempotency key's retry must repeat.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest as _;
        let mut hash = sha2::Sha256::new();
        hash.update(self.kind().as_str().as_bytes());
        bincode::serialize_into(&mut hash, self).expect("requests serialize");
        hex::encode(hash.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use filecoin_proofs_api::RegisteredSealProof;

    fn same_job(typed: Parsed<JobInput>, json: Parsed<JobInput>) {
        assert_eq!((typed.spec, typed.partitions), (json.spec, json.partitions));
        assert_eq!(typed.input.to_bytes(), json.input.to_bytes(), "the stored inputs differ");
    }

    #[test]
    fn a_porep_envelope_in_bytes_is_the_same_job_as_its_json() {
        let c1 = crate::sparse::porep_c1(
            RegisteredSealProof::StackedDrg2KiBV1_1,
            prover_id(1000),
            7,
            &mut rand::thread_rng(),
        )
        .unwrap();
        let envelope = porep::c1_envelope(&c1, 7);
        let json = serde_json::json!({ "miner_id": 1000, "c1": envelope.clone() });
        let from_json = porep::parse(json.as_object().unwrap()).unwrap();
        let request = FilecoinRequest::PorepC2 { miner_id: 1000, envelope: serde_json::to_vec(&envelope).unwrap() };
        assert_eq!(request.kind(), JobKind::PorepC2);
        let fingerprint = request.fingerprint();
        same_job(
            request.check().unwrap(),
            Parsed {
                spec: from_json.spec,
                partitions: from_json.partitions,
                input: JobInput::PorepC2(from_json.input),
            },
        );
        let other = FilecoinRequest::PorepC2 { miner_id: 1001, envelope: serde_json::to_vec(&envelope).unwrap() };
        assert_ne!(other.fingerprint(), fingerprint);
        // the same C1 from another miner is refused, as in the JSON form
        assert!(other.check().unwrap_err().to_string().contains("not made by miner 1001"));
    }

    #[test]
    fn a_bad_envelope_says_what_is_wrong() {
        let check = |envelope: serde_json::Value| {
            FilecoinRequest::PorepC2 { miner_id: 1000, envelope: serde_json::to_vec(&envelope).unwrap() }
                .check()
                .unwrap_err()
                .to_string()
        };
        let e = check(serde_json::json!({"SectorNum": 1, "Phase1Out": "AAAA", "SectorSize": 2048, "Extra": 1}));
        assert!(e.contains("unknown field `Extra`"), "{e}");
        let e = check(serde_json::json!({"SectorNum": 1, "Phase1Out": "not base64!", "SectorSize": 2048}));
        assert!(e.contains("Phase1Out is not base64"), "{e}");
        let e = FilecoinRequest::PorepC2 { miner_id: 1, envelope: b"{".to_vec() }.check().unwrap_err().to_string();
        assert!(e.contains("not the JSON {SectorNum, Phase1Out, SectorSize}"), "{e}");
    }

    /// The JSON `input` of `sparse_post::post_request` with its fields decoded.
    fn typed_post(kind: post::PostKind, json: &serde_json::Value) -> FilecoinRequest {
        let b64 = base64::engine::general_purpose::STANDARD;
        let registered_proof = json["registered_proof"].as_str().unwrap().to_owned();
        let miner_id = json["miner_id"].as_u64().unwrap();
        let randomness: [u8; 32] = hex::decode(json["randomness"].as_str().unwrap()).unwrap().try_into().unwrap();
        let vanilla_proofs = json["vanilla_proofs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| b64.decode(p.as_str().unwrap()).unwrap())
            .collect();
        match kind {
            post::PostKind::Window => {
                let partition_index = json["partition_index"].as_u64().unwrap_or(0) as u32;
                FilecoinRequest::WindowPost { registered_proof, miner_id, randomness, partition_index, vanilla_proofs }
            }
            post::PostKind::Winning => {
                FilecoinRequest::WinningPost { registered_proof, miner_id, randomness, vanilla_proofs }
            }
        }
    }

    #[test]
    fn post_requests_in_bytes_are_the_same_jobs_as_their_json() {
        let mut rng = rand::thread_rng();
        for (kind, wrap) in [
            (post::PostKind::Window, JobInput::WindowPost as fn(PostInput) -> JobInput),
            (post::PostKind::Winning, JobInput::WinningPost),
        ] {
            let sectors: &[u64] = if kind == post::PostKind::Window { &[1, 2] } else { &[1] };
            let json = crate::sparse_post::post_request(kind, 2048, 1000, sectors, &mut rng).unwrap();
            let from_json = kind.parse(json.as_object().unwrap()).unwrap();
            let typed = typed_post(kind, &json).check().unwrap();
            same_job(
                typed,
                Parsed { spec: from_json.spec, partitions: from_json.partitions, input: wrap(from_json.input) },
            );
        }
        let json = crate::sparse_post::post_request(post::PostKind::Window, 2048, 1000, &[1], &mut rng).unwrap();
        let FilecoinRequest::WindowPost { registered_proof, miner_id, randomness, vanilla_proofs, .. } =
            typed_post(post::PostKind::Window, &json)
        else {
            unreachable!()
        };
        let far = FilecoinRequest::WindowPost {
            registered_proof,
            miner_id,
            randomness,
            partition_index: 1 << 20,
            vanilla_proofs,
        };
        assert!(far.check().unwrap_err().to_string().contains("partition_index must be a small"));
        let wrong = FilecoinRequest::SnapUpdate {
            registered_proof: "StackedDrgWindow2KiBV1_2".into(),
            comm_r_old: [1; 32],
            comm_r_new: [1; 32],
            comm_d_new: [1; 32],
            vanilla_proofs: vec![vec![0]],
        };
        assert!(wrong.check().unwrap_err().to_string().contains("is not a SnapDeals update registered proof"));
    }
}
