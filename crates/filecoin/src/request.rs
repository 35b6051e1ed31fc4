//! A Filecoin job's input with its fields already binary, as the cuzk gRPC interface carries
//! them: checked by the same functions as the JSON `input` of `POST /v1/jobs` once that has
//! been read (`porep::parse_envelope`, `snap::checked`, `PostKind::checked`), without encoding
//! its bytes as hex or base64 and parsing them back first.

use serde::Serialize;

use crate::fields::by_name;
use crate::{porep, post, prover_id, snap, FilecoinError, Parsed, PorepInput, PorepSpec, PostInput, SnapInput};

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

/// A [`FilecoinRequest`] that passed every check, as the kind's own parse of its JSON gives it.
#[derive(Debug, Clone)]
pub enum CheckedRequest {
    PorepC2(Parsed<PorepSpec, PorepInput>),
    SnapUpdate(Parsed<u64, SnapInput>),
    WindowPost(Parsed<u64, PostInput>),
    WinningPost(Parsed<u64, PostInput>),
}

impl FilecoinRequest {
    /// Check it completely, as the JSON form is, and turn it into a job.
    pub fn into_checked(self) -> Result<CheckedRequest, FilecoinError> {
        fn named<T: serde::de::DeserializeOwned>(name: String, what: &str) -> Result<T, FilecoinError> {
            by_name(name.clone()).map_err(|_| FilecoinError::new(format!("{name} is not a {what} registered proof")))
        }
        Ok(match self {
            FilecoinRequest::PorepC2 { miner_id, envelope } => {
                CheckedRequest::PorepC2(porep::parse_envelope(miner_id, &envelope)?)
            }
            FilecoinRequest::SnapUpdate { registered_proof, comm_r_old, comm_r_new, comm_d_new, vanilla_proofs } => {
                let registered_proof = named(registered_proof, "SnapDeals update")?;
                let input = SnapInput { registered_proof, comm_r_old, comm_r_new, comm_d_new, vanilla_proofs };
                CheckedRequest::SnapUpdate(snap::checked(input)?)
            }
            FilecoinRequest::WindowPost { registered_proof, miner_id, randomness, partition_index, vanilla_proofs } => {
                let registered_proof = named(registered_proof, "PoSt")?;
                let prover_id = prover_id(miner_id);
                let input =
                    PostInput { miner_id, prover_id, registered_proof, randomness, partition_index, vanilla_proofs };
                CheckedRequest::WindowPost(post::PostKind::Window.checked(input)?)
            }
            FilecoinRequest::WinningPost { registered_proof, miner_id, randomness, vanilla_proofs } => {
                let registered_proof = named(registered_proof, "PoSt")?;
                let prover_id = prover_id(miner_id);
                let input =
                    PostInput { miner_id, prover_id, registered_proof, randomness, partition_index: 0, vanilla_proofs };
                CheckedRequest::WinningPost(post::PostKind::Winning.checked(input)?)
            }
        })
    }

    /// SHA-256 (hex) of the name of the kind it makes (the circuits registry names it) and this
    /// input: what an idempotency key's retry must repeat.
    pub fn fingerprint(&self, kind: &str) -> String {
        use sha2::Digest as _;
        let mut hash = sha2::Sha256::new();
        hash.update(kind.as_bytes());
        bincode::serialize_into(&mut hash, self).expect("requests serialize");
        hex::encode(hash.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use filecoin_proofs_api::RegisteredSealProof;

    fn same_job<S: PartialEq + std::fmt::Debug, I: Serialize>(typed: Parsed<S, I>, json: Parsed<S, I>) {
        assert_eq!((typed.spec, typed.partitions), (json.spec, json.partitions));
        let stored = |i: &I| bincode::serialize(i).unwrap();
        assert_eq!(stored(&typed.input), stored(&json.input), "the stored inputs differ");
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
        let fingerprint = request.fingerprint("porep-c2");
        let CheckedRequest::PorepC2(typed) = request.into_checked().unwrap() else { panic!("not a PoRep job") };
        same_job(typed, from_json);
        let other = FilecoinRequest::PorepC2 { miner_id: 1001, envelope: serde_json::to_vec(&envelope).unwrap() };
        assert_ne!(other.fingerprint("porep-c2"), fingerprint);
        // the same C1 from another miner is refused, as in the JSON form
        assert!(other.into_checked().unwrap_err().to_string().contains("not made by miner 1001"));
    }

    #[test]
    fn a_bad_envelope_says_what_is_wrong() {
        let check = |envelope: serde_json::Value| {
            FilecoinRequest::PorepC2 { miner_id: 1000, envelope: serde_json::to_vec(&envelope).unwrap() }
                .into_checked()
                .unwrap_err()
                .to_string()
        };
        let e = check(serde_json::json!({"SectorNum": 1, "Phase1Out": "AAAA", "SectorSize": 2048, "Extra": 1}));
        assert!(e.contains("unknown field `Extra`"), "{e}");
        let e = check(serde_json::json!({"SectorNum": 1, "Phase1Out": "not base64!", "SectorSize": 2048}));
        assert!(e.contains("Phase1Out is not base64"), "{e}");
        let e =
            FilecoinRequest::PorepC2 { miner_id: 1, envelope: b"{".to_vec() }.into_checked().unwrap_err().to_string();
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
        for kind in [post::PostKind::Window, post::PostKind::Winning] {
            let sectors: &[u64] = if kind == post::PostKind::Window { &[1, 2] } else { &[1] };
            let json = crate::sparse_post::post_request(kind, 2048, 1000, sectors, &mut rng).unwrap();
            let from_json = kind.parse(json.as_object().unwrap()).unwrap();
            let typed = match (kind, typed_post(kind, &json).into_checked().unwrap()) {
                (post::PostKind::Window, CheckedRequest::WindowPost(typed))
                | (post::PostKind::Winning, CheckedRequest::WinningPost(typed)) => typed,
                (kind, other) => panic!("a {kind:?} request checked as {other:?}"),
            };
            same_job(typed, from_json);
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
        assert!(far.into_checked().unwrap_err().to_string().contains("partition_index must be a small"));
        let wrong = FilecoinRequest::SnapUpdate {
            registered_proof: "StackedDrgWindow2KiBV1_2".into(),
            comm_r_old: [1; 32],
            comm_r_new: [1; 32],
            comm_d_new: [1; 32],
            vanilla_proofs: vec![vec![0]],
        };
        assert!(wrong.into_checked().unwrap_err().to_string().contains("is not a SnapDeals update registered proof"));
    }
}
