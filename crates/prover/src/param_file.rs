//! The layout of a bellperson (filecoin-proofs) parameter file: the verifying key, then five
//! point sections (H, L, A, B-G1, B-G2), each a big-endian u32 count and uncompressed points.
//! Read without the points: what a prover needs to check a partition against the parameters
//! before handing both to code that would abort on a mismatch.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use bellperson::groth16::VerifyingKey;
use blstrs::Bls12;
use snarkflow_synthesis::SynthesizedPartition;

use crate::ProveError;

/// Bytes of one uncompressed point of each section (H, L, A, B-G1 in G1; B-G2 in G2).
const POINT_BYTES: [usize; 5] = [96, 96, 96, 96, 192];

/// Where each point section of a parameter file starts and how many points it has, in the
/// order H, L, A, B-G1, B-G2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSections {
    pub offsets: [u64; 5],
    pub counts: [usize; 5],
}

/// Read the verifying key and the section table of the parameter file at `path`.
pub fn read_sections(path: &Path) -> std::io::Result<(VerifyingKey<Bls12>, FileSections)> {
    let mut file = BufReader::new(File::open(path)?);
    let vk = VerifyingKey::<Bls12>::read(&mut file)?;
    // α, β (G1), β, γ (G2), δ (G1, G2), the IC count and points
    let mut at = (96 * 3 + 192 * 3 + 4 + 96 * vk.ic.len()) as u64;
    let mut sections = FileSections { offsets: [0; 5], counts: [0; 5] };
    let len = file.get_ref().metadata()?.len();
    for (i, point_bytes) in POINT_BYTES.into_iter().enumerate() {
        file.seek(SeekFrom::Start(at))?;
        let mut count = [0u8; 4];
        file.read_exact(&mut count)?;
        let count = u32::from_be_bytes(count) as usize;
        sections.offsets[i] = at + 4;
        sections.counts[i] = count;
        at += 4 + (count * point_bytes) as u64;
        if at > len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("section {i} (of H, L, A, B-G1, B-G2) runs past the end"),
            ));
        }
    }
    Ok((vk, sections))
}

impl FileSections {
    /// Whether `p` is a partition of the circuit these sections were made for: every vector
    /// and density the right length, the A and B queries as long as the densities say. A
    /// backend that indexes the points by these (supraseal-c2's C++ asserts and aborts the
    /// process; our kernels read past buffers) is only called after this passes.
    pub fn check_partition(&self, p: &SynthesizedPartition, vk: &VerifyingKey<Bls12>) -> Result<(), ProveError> {
        let [h, l, a, b_g1, b_g2] = self.counts;
        let (inputs, aux, n) = (p.input_assignment.len(), p.aux_assignment.len(), p.a.len());
        let mismatch = |what: String| Err(ProveError::Mismatch(what));
        if inputs != vk.ic.len() {
            return Err(ProveError::InputCount { got: inputs, expected: vk.ic.len() });
        }
        if p.b.len() != n || p.c.len() != n {
            return mismatch(format!("a, b, c have {n}, {}, {} entries", p.b.len(), p.c.len()));
        }
        if n == 0 || n.next_power_of_two() - 1 != h {
            return mismatch(format!("{n} constraints (with inputs) need a domain whose H query is not {h} points"));
        }
        if aux != l {
            return mismatch(format!("{aux} aux values, {l} L points"));
        }
        let densities = (p.a_aux_density.len(), p.b_input_density.len(), p.b_aux_density.len());
        if densities != (aux, inputs, aux) {
            return mismatch(format!("density lengths {densities:?} for {inputs} inputs and {aux} aux values"));
        }
        let a_used = inputs + p.a_aux_density.popcount();
        let b_used = p.b_input_density.popcount() + p.b_aux_density.popcount();
        if a_used != a || b_used != b_g1 || b_used != b_g2 {
            return mismatch(format!(
                "densities select {a_used} A and {b_used} B points; the file has {a}, {b_g1}, {b_g2}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use snarkflow_circuits::DenseChain;
    use snarkflow_synthesis::synthesize;

    fn written(constraints: u32) -> (tempfile::TempDir, std::path::PathBuf) {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let params =
            bellperson::groth16::generate_random_parameters::<Bls12, _, _>(DenseChain::blank(constraints), &mut rng)
                .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.params");
        let mut f = std::fs::File::create(&path).unwrap();
        params.write(&mut f).unwrap();
        (dir, path)
    }

    #[test]
    fn a_partition_of_the_circuit_fits_and_a_changed_one_does_not() {
        let spec = snarkflow_circuits::circuit("dense-chain-c40");
        let (_dir, path) = written(40);
        let (vk, sections) = read_sections(&path).unwrap();
        let id = spec.circuit_id();
        let good = synthesize(DenseChain::with_witness(40, 1, 0), &id, 0).unwrap();
        sections.check_partition(&good, &vk).unwrap();

        let other = snarkflow_circuits::circuit("dense-chain-c300");
        let bigger = synthesize(DenseChain::with_witness(300, 1, 0), &other.circuit_id(), 0).unwrap();
        assert!(matches!(sections.check_partition(&bigger, &vk), Err(ProveError::Mismatch(_))));

        let mut short_c = good.clone();
        short_c.c.pop();
        assert!(matches!(sections.check_partition(&short_c, &vk), Err(ProveError::Mismatch(_))));
        let mut extra_aux = good.clone();
        extra_aux.aux_assignment.push(blstrs::Scalar::from(1u64));
        assert!(matches!(sections.check_partition(&extra_aux, &vk), Err(ProveError::Mismatch(_))));
        let mut no_inputs = good;
        no_inputs.input_assignment.clear();
        assert!(matches!(sections.check_partition(&no_inputs, &vk), Err(ProveError::InputCount { .. })));
    }
}
