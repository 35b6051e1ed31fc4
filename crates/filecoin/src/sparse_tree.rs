//! Merkle trees of which only a few leaves are set, for test fixtures: a Poseidon tree in any
//! of the sector shapes (its empty subtrees are one hash per height) and tree D of an all-zero
//! sector (every subtree at a height is the same).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::ensure;
use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonFunction, PoseidonHasher};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Function, Sha256Hasher};
use filecoin_proofs::MerkleTreeTrait;
use merkletree::hash::Algorithm;
use storage_proofs_core::merkle::MerkleProof;
use typenum::{Unsigned, U2};

pub(crate) type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A Poseidon tree of which only some leaves are not the empty value.
pub(crate) struct SparseTree {
    /// Arity of each level, leaf level first (e.g. 8 ×9, 8, 2 at 64 GiB).
    arities: Vec<usize>,
    /// The hash of an empty subtree at each height.
    empty: Vec<PoseidonDomain>,
    levels: Vec<BTreeMap<u64, PoseidonDomain>>,
}

impl SparseTree {
    pub(crate) fn new<Tree: MerkleTreeTrait>(
        nodes: u64,
        leaves: BTreeMap<u64, PoseidonDomain>,
    ) -> anyhow::Result<Self> {
        let (sub, top) = (Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize());
        let base_arity = Tree::Arity::to_usize();
        let base_leaves = nodes / sub.max(1) as u64 / top.max(1) as u64;
        let base_levels = base_leaves.ilog(base_arity as u64) as usize;
        ensure!((base_arity as u64).pow(base_levels as u32) == base_leaves, "{nodes} nodes do not fill the base trees");
        let mut arities = vec![base_arity; base_levels];
        arities.extend([sub, top].into_iter().filter(|a| *a > 0));
        let mut hasher = PoseidonFunction::default();
        let mut empty = vec![PoseidonDomain::from(Fr::ZERO)];
        for (height, arity) in arities.iter().enumerate() {
            hasher.reset();
            let below = empty[height];
            empty.push(hasher.multi_node(&vec![below; *arity], height));
        }
        let mut levels = vec![leaves];
        for (height, arity) in arities.iter().enumerate() {
            let arity = *arity as u64;
            let parents: BTreeSet<u64> = levels[height].keys().map(|i| i / arity).collect();
            let mut above = BTreeMap::new();
            for parent in parents {
                let children: Vec<_> =
                    (0..arity).map(|j| Self::at(&levels[height], &empty, height, parent * arity + j)).collect();
                hasher.reset();
                above.insert(parent, hasher.multi_node(&children, height));
            }
            levels.push(above);
        }
        Ok(SparseTree { arities, empty, levels })
    }

    fn at(
        level: &BTreeMap<u64, PoseidonDomain>,
        empty: &[PoseidonDomain],
        height: usize,
        index: u64,
    ) -> PoseidonDomain {
        level.get(&index).copied().unwrap_or(empty[height])
    }

    pub(crate) fn root(&self) -> PoseidonDomain {
        Self::at(&self.levels[self.arities.len()], &self.empty, self.arities.len(), 0)
    }

    /// The full-length opening of leaf `index`, packaged for `Tree`'s base/sub/top shape.
    pub(crate) fn proof<Tree: MerkleTreeTrait<Hasher = PoseidonHasher>>(&self, index: u64) -> TreeProof<Tree> {
        let mut path = Vec::with_capacity(self.arities.len());
        let mut i = index;
        for (height, arity) in self.arities.iter().enumerate() {
            let arity = *arity as u64;
            let (group, at) = (i / arity, i % arity);
            let siblings = (0..arity)
                .filter(|j| *j != at)
                .map(|j| Self::at(&self.levels[height], &self.empty, height, group * arity + j))
                .collect();
            path.push((siblings, at as usize));
            i = group;
        }
        let leaf = Self::at(&self.levels[0], &self.empty, 0, index);
        MerkleProof::from_parts(leaf, self.root(), path)
    }
}

/// Tree D of an all-zero sector: every subtree at a height is the same, so a path is the
/// ladder of zero-subtree hashes.
pub(crate) fn zero_tree_d_proof(challenge: u64, ladder: &[Sha256Domain]) -> MerkleProof<Sha256Hasher, U2> {
    let height = ladder.len() - 1;
    let path = (0..height).map(|h| (vec![ladder[h]], ((challenge >> h) & 1) as usize)).collect();
    MerkleProof::from_parts(ladder[0], ladder[height], path)
}

pub(crate) fn zero_ladder(nodes: u64) -> Vec<Sha256Domain> {
    let mut hasher = Sha256Function::default();
    let mut ladder = vec![Sha256Domain::default()];
    for height in 0..nodes.ilog2() as usize {
        hasher.reset();
        let below = ladder[height];
        ladder.push(hasher.node(below, below, height));
    }
    ladder
}
