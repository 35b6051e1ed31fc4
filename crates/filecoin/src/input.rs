//! A checked Filecoin job input, as stored with the job, whatever its kind.
//!
//! Stored form: `SFJI`, a version byte, the kind's tag byte, then the kind's input in bincode.
//! A 32 GiB C1 output is 51–70 MB of JSON, parsed once at submit; the synth-workers and the
//! gateway's final check read the binary form instead of parsing that JSON again. Inputs stored
//! as JSON (by gateways before this form) are still read.

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

const MAGIC: &[u8; 4] = b"SFJI";
const VERSION: u8 = 1;

impl JobInput {
    /// The stored form (module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(VERSION);
        let tag: u8 = match self {
            JobInput::PorepC2(_) => 0,
            JobInput::SnapUpdate(_) => 1,
            JobInput::WindowPost(_) => 2,
            JobInput::WinningPost(_) => 3,
        };
        out.push(tag);
        let written = match self {
            JobInput::PorepC2(i) => bincode::serialize_into(&mut out, i),
            JobInput::SnapUpdate(i) => bincode::serialize_into(&mut out, i),
            JobInput::WindowPost(i) | JobInput::WinningPost(i) => bincode::serialize_into(&mut out, i),
        };
        written.expect("job inputs serialize");
        out
    }

    /// Read the stored form, or the JSON that gateways stored before it.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, FilecoinError> {
        let Some(rest) = bytes.strip_prefix(MAGIC) else {
            return Self::from_json(bytes);
        };
        let unreadable = |e: &dyn std::fmt::Display| FilecoinError::new(format!("stored job input is unreadable: {e}"));
        let (version, tag, body) = match rest {
            [version, tag, body @ ..] => (*version, *tag, body),
            _ => return Err(unreadable(&"it ends after its header")),
        };
        if version != VERSION {
            return Err(unreadable(&format!("stored form version {version}, this build reads {VERSION}")));
        }
        let input = match tag {
            0 => bincode::deserialize(body).map(JobInput::PorepC2),
            1 => bincode::deserialize(body).map(JobInput::SnapUpdate),
            2 => bincode::deserialize(body).map(JobInput::WindowPost),
            3 => bincode::deserialize(body).map(JobInput::WinningPost),
            other => return Err(unreadable(&format!("unknown kind tag {other}"))),
        };
        input.map_err(|e| unreadable(&e))
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("job inputs serialize")
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, FilecoinError> {
        serde_json::from_slice(bytes).map_err(|e| FilecoinError::new(format!("stored job input is unreadable: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn porep() -> JobInput {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let registered = crate::porep::registered_proof(2 << 10, false).unwrap();
        let prover_id = crate::prover_id(1000);
        let c1 = crate::sparse::porep_c1(registered, prover_id, 7, &mut rng).unwrap();
        JobInput::PorepC2(PorepInput { miner_id: 1000, sector_id: 7, prover_id, c1 })
    }

    fn post(kind: crate::PostKind) -> JobInput {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let sectors: &[u64] = if kind == crate::PostKind::Window { &[1, 2] } else { &[1] };
        let request = crate::sparse_post::post_request(kind, 2 << 10, 1000, sectors, &mut rng).unwrap();
        let parsed = kind.parse(request.as_object().unwrap()).unwrap();
        match kind {
            crate::PostKind::Window => JobInput::WindowPost(parsed.input),
            crate::PostKind::Winning => JobInput::WinningPost(parsed.input),
        }
    }

    fn snap() -> JobInput {
        JobInput::SnapUpdate(SnapInput {
            registered_proof: filecoin_proofs_api::RegisteredUpdateProof::StackedDrg2KiBV1,
            comm_r_old: [1; 32],
            comm_r_new: [2; 32],
            comm_d_new: [3; 32],
            vanilla_proofs: vec![vec![4, 5, 6], vec![]],
        })
    }

    #[test]
    fn every_kind_reads_back_what_it_stored_in_both_forms() {
        for input in [porep(), snap(), post(crate::PostKind::Window), post(crate::PostKind::Winning)] {
            let stored = input.to_bytes();
            assert!(stored.starts_with(MAGIC));
            let back = JobInput::from_bytes(&stored).unwrap();
            // same kind, same content (compared through the JSON both forms describe)
            assert_eq!(back.to_json(), input.to_json());
            // what older gateways stored: JSON
            assert_eq!(JobInput::from_bytes(&input.to_json()).unwrap().to_json(), input.to_json());
            assert!(stored.len() < input.to_json().len(), "the binary form is the smaller one");
        }
    }

    #[test]
    fn a_damaged_stored_input_is_refused_with_a_reason() {
        let stored = porep().to_bytes();
        let cut = JobInput::from_bytes(&stored[..stored.len() / 2]).unwrap_err();
        assert!(cut.0.contains("unreadable"), "{cut}");
        let mut tagged = stored.clone();
        tagged[5] = 9;
        assert!(JobInput::from_bytes(&tagged).unwrap_err().0.contains("unknown kind tag 9"));
        let mut versioned = stored;
        versioned[4] = 2;
        assert!(JobInput::from_bytes(&versioned).unwrap_err().0.contains("version 2"));
    }
}
