//! Poseidon as neptune's `circuit::poseidon_hash` allocates it (what filecoin-hashers' Poseidon
//! gadget calls, for every arity).
//!
//! The circuit is neptune's optimized one: compressed round constants, a pre-sparse matrix and
//! sparse matrices in the partial rounds, the domain tag's first S-box computed as a constant.
//! Its witness values are the S-boxes' inputs and powers under *that* schedule, not the
//! textbook permutation's states, so this follows the schedule step by step with neptune's
//! own constants. Linear layers allocate nothing (the gadget keeps them as linear
//! combinations); an S-box allocates its input when the input is such a combination.

use blstrs::Scalar as Fr;
use ff::Field;
use neptune::poseidon::{Arity, PoseidonConstants};

use super::{Aux, Num};

/// A state element: allocated, or a linear combination known by its value.
#[derive(Debug, Clone, Copy)]
enum Elt {
    Allocated(Fr),
    Combination(Fr),
}

impl Elt {
    fn value(self) -> Fr {
        match self {
            Elt::Allocated(v) | Elt::Combination(v) => v,
        }
    }

    /// `Elt::ensure_allocated`: a combination is allocated; an allocated element is reused.
    fn ensure_allocated(self, aux: &mut Aux) -> Fr {
        if let Elt::Combination(v) = self {
            aux.field(v);
        }
        self.value()
    }
}

/// `poseidon_hash(preimage)` with `constants`: the hash, allocated (as the gadget's result is).
pub fn poseidon_hash<A: Arity<Fr>>(aux: &mut Aux, preimage: &[Num], constants: &PoseidonConstants<Fr, A>) -> Num {
    assert_eq!(preimage.len(), A::to_usize(), "neptune's circuit takes exactly `arity` elements");
    let width = constants.width();
    let mut state: Vec<Elt> = Vec::with_capacity(width);
    state.push(Elt::Combination(constants.domain_tag));
    state.extend(preimage.iter().map(|n| Elt::Allocated(n.value)));
    let mut offset = 0;
    let mut round = 0;
    let half = constants.full_rounds / 2;
    // first full round: pre- and post-round keys
    let keys = &constants.compressed_round_constants;
    let (pre, post) = (&keys[offset..offset + width], &keys[offset + width..offset + 2 * width]);
    offset += 2 * width;
    for (i, e) in state.iter_mut().enumerate() {
        *e = if i == 0 {
            // the tag's S-box is a constant: no allocation
            let mut t = e.value() + pre[0];
            t = t.square().square() * t + post[0];
            Elt::Combination(t)
        } else {
            let l = e.ensure_allocated(aux);
            let l2 = (l + pre[i]).square();
            aux.field(l2);
            let l4 = l2.square();
            aux.field(l4);
            let l5 = l4 * (l + pre[i]) + post[i];
            aux.field(l5);
            Elt::Allocated(l5)
        };
    }
    linear_layer(&mut state, constants, &mut round);
    let full = |state: &mut Vec<Elt>, aux: &mut Aux, post: Option<&[Fr]>| {
        for (i, e) in state.iter_mut().enumerate() {
            *e = Elt::Allocated(s_box(aux, *e, post.map(|p| p[i])));
        }
    };
    for _ in 1..half {
        full(&mut state, aux, Some(&keys[offset..offset + width]));
        offset += width;
        linear_layer(&mut state, constants, &mut round);
    }
    for _ in 0..constants.partial_rounds {
        state[0] = Elt::Allocated(s_box(aux, state[0], Some(keys[offset])));
        offset += 1;
        linear_layer(&mut state, constants, &mut round);
    }
    for _ in 0..half - 1 {
        full(&mut state, aux, Some(&keys[offset..offset + width]));
        offset += width;
        linear_layer(&mut state, constants, &mut round);
    }
    // the terminal full round has no round keys
    full(&mut state, aux, None);
    linear_layer(&mut state, constants, &mut round);
    Num { value: state[1].ensure_allocated(aux) }
}

/// `quintic_s_box`: the input (allocated if a combination), its square, fourth power, and
/// fifth power plus the round key.
fn s_box(aux: &mut Aux, e: Elt, post: Option<Fr>) -> Fr {
    let l = e.ensure_allocated(aux);
    let l2 = l.square();
    aux.field(l2);
    let l4 = l2.square();
    aux.field(l4);
    let l5 = l4 * l + post.unwrap_or(Fr::ZERO);
    aux.field(l5);
    l5
}

/// `product_mds`: the round's matrix (M, the pre-sparse one, or a sparse one), as values.
fn linear_layer<A: Arity<Fr>>(state: &mut Vec<Elt>, constants: &PoseidonConstants<Fr, A>, round: &mut usize) {
    let width = state.len();
    let sparse_offset = constants.half_full_rounds - 1;
    let dense = |matrix: &Vec<Vec<Fr>>| -> Vec<Elt> {
        (0..width).map(|j| Elt::Combination((0..width).map(|i| state[i].value() * matrix[i][j]).sum())).collect()
    };
    let next = if *round == sparse_offset {
        dense(&constants.pre_sparse_matrix)
    } else if *round > sparse_offset && *round < constants.half_full_rounds + constants.partial_rounds {
        let sparse = &constants.sparse_matrixes[*round - sparse_offset - 1];
        let first: Fr = (0..width).map(|i| state[i].value() * sparse.w_hat[i]).sum();
        std::iter::once(Elt::Combination(first))
            .chain((1..width).map(|j| Elt::Combination(state[j].value() + state[0].value() * sparse.v_rest[j - 1])))
            .collect()
    } else {
        dense(&constants.mds_matrices.m)
    };
    *state = next;
    *round += 1;
}

#[cfg(test)]
mod tests {
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::ConstraintSystem;
    use generic_array::typenum::{U11, U2, U4, U8};
    use rand::SeedableRng;

    use super::*;
    use crate::witness::WitnessRecorder;

    fn check<A: Arity<Fr>>(rounds: usize) {
        let constants = PoseidonConstants::<Fr, A>::new();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(A::to_u64());
        for _ in 0..rounds {
            let values: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut rng)).collect();
            let mut cs = WitnessRecorder::default();
            let preimage: Vec<AllocatedNum<Fr>> = values
                .iter()
                .enumerate()
                .map(|(i, v)| AllocatedNum::alloc(cs.namespace(|| format!("in {i}")), || Ok(*v)).unwrap())
                .collect();
            let hash = neptune::circuit::poseidon_hash(&mut cs, preimage, &constants).unwrap();
            let mut aux = Aux::default();
            let preimage: Vec<Num> = values.iter().map(|v| Num::alloc(&mut aux, *v)).collect();
            let native = poseidon_hash(&mut aux, &preimage, &constants);
            assert_eq!(Some(native.value), hash.get_value(), "arity {}: the hash", A::to_usize());
            assert_eq!(aux.values().len(), cs.aux.len(), "arity {}: as many allocations", A::to_usize());
            assert!(aux.values() == cs.aux, "arity {}: the same values in the same order", A::to_usize());
            // and it is Poseidon: neptune's native hash agrees
            let mut native_hasher = neptune::Poseidon::new_with_preimage(&values, &constants);
            assert_eq!(native.value, native_hasher.hash());
        }
    }

    #[test]
    fn poseidon_witness_equals_neptunes_circuit_for_filecoins_arities() {
        check::<U2>(20);
        check::<U4>(10);
        check::<U8>(10);
        check::<U11>(10);
    }
}
