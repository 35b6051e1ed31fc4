//! Merkle trees of which only a few leaves are set, for test fixtures: a Poseidon tree in any
//! of the sector shapes (its empty subtrees are one hash per height, or random values as if
//! they held data), a Poseidon tree whose leaves are constant over aligned regions (a SnapDeals
//! replica: data times ρ of each node's high bits), and tree D of a sector whose data repeats a
//! pattern (all zeros: a CC sector; every subtree above the pattern's is the same).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::ensure;
use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonFunction, PoseidonHasher};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Function, Sha256Hasher};
use filecoin_hashers::Domain as _;
use filecoin_proofs::MerkleTreeTrait;
use merkletree::hash::Algorithm;
use sha2::Digest as _;
use storage_proofs_core::merkle::MerkleProof;
use typenum::{Unsigned, U2};

pub(crate) type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A Poseidon tree of which only some leaves are set: the other subtrees are empty, or (`fill`)
/// random values keyed by their place, as the subtrees of a sector with data would look.
pub(crate) struct SparseTree {
    /// Arity of each level, leaf level first (e.g. 8 ×9, 8, 2 at 64 GiB).
    arities: Vec<usize>,
    /// The hash of an empty subtree at each height.
    empty: Vec<PoseidonDomain>,
    /// Keys the values of subtrees no set leaf is in, when they are not empty.
    fill: Option<[u8; 32]>,
    levels: Vec<BTreeMap<u64, PoseidonDomain>>,
}

impl SparseTree {
    /// The tree over `leaves` of a sector of `nodes` nodes in `Tree`'s shape, the subtrees no
    /// leaf is in empty, or random (keyed by `fill`) if given.
    pub(crate) fn filled<Tree: MerkleTreeTrait>(
        nodes: u64,
        leaves: BTreeMap<u64, PoseidonDomain>,
        fill: Option<[u8; 32]>,
    ) -> anyhow::Result<Self> {
        let arities = arities_of::<Tree>(nodes)?;
        let mut hasher = PoseidonFunction::default();
        let mut empty = vec![PoseidonDomain::from(Fr::ZERO)];
        for (height, arity) in arities.iter().enumerate() {
            hasher.reset();
            let below = empty[height];
            empty.push(hasher.multi_node(&vec![below; *arity], height));
        }
        let mut tree = SparseTree { arities, empty, fill, levels: vec![leaves] };
        for height in 0..tree.arities.len() {
            let arity = tree.arities[height] as u64;
            let parents: BTreeSet<u64> = tree.levels[height].keys().map(|i| i / arity).collect();
            let mut above = BTreeMap::new();
            for parent in parents {
                let children: Vec<_> = (0..arity).map(|j| tree.at(height, parent * arity + j)).collect();
                hasher.reset();
                above.insert(parent, hasher.multi_node(&children, height));
            }
            tree.levels.push(above);
        }
        Ok(tree)
    }
}

impl PoseidonNodes for SparseTree {
    fn arities(&self) -> &[usize] {
        &self.arities
    }

    fn at(&self, height: usize, index: u64) -> PoseidonDomain {
        if let Some(value) = self.levels[height].get(&index) {
            return *value;
        }
        match &self.fill {
            None => self.empty[height],
            Some(key) => {
                let digest = sha2::Sha256::new()
                    .chain_update(b"snarkflow sparse fixture subtree")
                    .chain_update(key)
                    .chain_update((height as u32).to_be_bytes())
                    .chain_update(index.to_be_bytes())
                    .finalize();
                let mut bytes: [u8; 32] = digest.into();
                bytes[31] &= 0x3f;
                PoseidonDomain::try_from_bytes(&bytes).expect("a canonical field element")
            }
        }
    }
}

/// The levels' arities of a tree R of `nodes` leaves in `Tree`'s shape, leaf level first (e.g.
/// 8 ×9, 8, 2 at 64 GiB).
fn arities_of<Tree: MerkleTreeTrait>(nodes: u64) -> anyhow::Result<Vec<usize>> {
    let (sub, top) = (Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize());
    let base_arity = Tree::Arity::to_usize();
    let base_leaves = nodes / sub.max(1) as u64 / top.max(1) as u64;
    let base_levels = base_leaves.ilog(base_arity as u64) as usize;
    ensure!((base_arity as u64).pow(base_levels as u32) == base_leaves, "{nodes} nodes do not fill the base trees");
    let mut arities = vec![base_arity; base_levels];
    arities.extend([sub, top].into_iter().filter(|a| *a > 0));
    Ok(arities)
}

/// A Poseidon tree R that can name any of its nodes: its root and openings.
pub(crate) trait PoseidonNodes {
    /// Arity of each level, leaf level first.
    fn arities(&self) -> &[usize];

    /// The node at `index` of level `height` (0: the leaves).
    fn at(&self, height: usize, index: u64) -> PoseidonDomain;

    fn root(&self) -> PoseidonDomain {
        self.at(self.arities().len(), 0)
    }

    /// The full-length opening of leaf `index`, packaged for `Tree`'s base/sub/top shape.
    fn proof<Tree: MerkleTreeTrait<Hasher = PoseidonHasher>>(&self, index: u64) -> TreeProof<Tree> {
        let mut path = Vec::with_capacity(self.arities().len());
        let mut i = index;
        for (height, arity) in self.arities().iter().enumerate() {
            let arity = *arity as u64;
            let (group, at) = (i / arity, i % arity);
            let siblings = (0..arity).filter(|j| *j != at).map(|j| self.at(height, group * arity + j)).collect();
            path.push((siblings, at as usize));
            i = group;
        }
        let leaf = self.at(0, index);
        MerkleProof::from_parts(leaf, self.root(), path)
    }
}

/// A Poseidon tree R whose leaf `i` is `regions[i >> region_bits]`: constant over aligned regions
/// of 2^region_bits leaves. A subtree inside one region has the same value wherever it is in
/// it, so a level whose nodes span at most a region keeps one value per region; above, one per
/// node (fewer than there are regions).
pub(crate) struct RegionTree {
    arities: Vec<usize>,
    region_bits: u32,
    /// Leaves under one node of each level.
    spans: Vec<u64>,
    /// Per level: a value per region (span ≤ region), else per node.
    levels: Vec<Vec<PoseidonDomain>>,
}

impl RegionTree {
    pub(crate) fn new<Tree: MerkleTreeTrait>(
        nodes: u64,
        region_bits: u32,
        regions: Vec<PoseidonDomain>,
    ) -> anyhow::Result<Self> {
        ensure!(
            nodes.is_power_of_two() && (regions.len() as u64) << region_bits == nodes,
            "{} regions of 2^{region_bits} leaves do not make {nodes}",
            regions.len()
        );
        let arities = arities_of::<Tree>(nodes)?;
        let mut tree = RegionTree { arities, region_bits, spans: vec![1], levels: vec![regions] };
        let mut hasher = PoseidonFunction::default();
        for height in 0..tree.arities.len() {
            let arity = tree.arities[height] as u64;
            let span = tree.spans[height] * arity;
            let count = if span <= 1 << region_bits { tree.levels[0].len() as u64 } else { nodes / span };
            let level = (0..count)
                .map(|j| {
                    // a node of this level in region j (span ≤ region), or node j
                    let first = if span <= 1 << region_bits { (j << region_bits) / span } else { j };
                    let children: Vec<_> = (0..arity).map(|m| tree.at(height, first * arity + m)).collect();
                    hasher.reset();
                    hasher.multi_node(&children, height)
                })
                .collect();
            tree.spans.push(span);
            tree.levels.push(level);
        }
        Ok(tree)
    }
}

impl PoseidonNodes for RegionTree {
    fn arities(&self) -> &[usize] {
        &self.arities
    }

    fn at(&self, height: usize, index: u64) -> PoseidonDomain {
        let span = self.spans[height];
        if span <= 1 << self.region_bits {
            self.levels[height][((index * span) >> self.region_bits) as usize]
        } else {
            self.levels[height][index as usize]
        }
    }
}

/// Tree D of a sector whose data is `pattern` (a power of two of nodes) over and over: the
/// pattern's own tree, then one hash per height above it (every subtree there is the same).
/// A pattern of one zero node is a CC sector's tree D.
pub(crate) struct TreeD {
    /// The pattern's tree, leaves first.
    levels: Vec<Vec<Sha256Domain>>,
    /// The value of every subtree of each height from the pattern's up to the root's.
    above: Vec<Sha256Domain>,
}

impl TreeD {
    pub(crate) fn repeating(pattern: Vec<Sha256Domain>, nodes: u64) -> anyhow::Result<TreeD> {
        let len = pattern.len() as u64;
        ensure!(len.is_power_of_two() && nodes.is_power_of_two() && len <= nodes, "{len} nodes do not tile {nodes}");
        let mut hasher = Sha256Function::default();
        let mut node = |l: Sha256Domain, r: Sha256Domain, height: usize| {
            hasher.reset();
            hasher.node(l, r, height)
        };
        let mut levels = vec![pattern];
        while levels.last().expect("the leaves").len() > 1 {
            let height = levels.len() - 1;
            let below = &levels[height];
            let level = below.chunks(2).map(|pair| node(pair[0], pair[1], height)).collect();
            levels.push(level);
        }
        let mut above = vec![levels.last().expect("the pattern's root")[0]];
        for height in levels.len() - 1..nodes.ilog2() as usize {
            let below = above[above.len() - 1];
            above.push(node(below, below, height));
        }
        Ok(TreeD { levels, above })
    }

    /// Tree D of an all-zero sector of `nodes` nodes.
    pub(crate) fn zeros(nodes: u64) -> TreeD {
        TreeD::repeating(vec![Sha256Domain::default()], nodes).expect("one node tiles any sector")
    }

    pub(crate) fn root(&self) -> Sha256Domain {
        self.above[self.above.len() - 1]
    }

    /// The value of the subtree of `height` whose index at that height is `index`.
    fn at(&self, height: usize, index: u64) -> Sha256Domain {
        let pattern_height = self.levels.len() - 1;
        if height < pattern_height {
            let level = &self.levels[height];
            level[(index % level.len() as u64) as usize]
        } else {
            self.above[height - pattern_height]
        }
    }

    /// The opening of node `challenge`.
    pub(crate) fn proof(&self, challenge: u64) -> MerkleProof<Sha256Hasher, U2> {
        let height = self.levels.len() - 1 + self.above.len() - 1;
        let path =
            (0..height).map(|h| (vec![self.at(h, (challenge >> h) ^ 1)], ((challenge >> h) & 1) as usize)).collect();
        MerkleProof::from_parts(self.at(0, challenge), self.root(), path)
    }

    /// The data of node `challenge`.
    pub(crate) fn leaf(&self, challenge: u64) -> Sha256Domain {
        self.at(0, challenge)
    }

    /// The node at `index` of level `height` (0: the data).
    pub(crate) fn node(&self, height: usize, index: u64) -> Sha256Domain {
        self.at(height, index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_proofs::{SectorShape2KiB, SectorShape8MiB};

    /// A region tree is the tree of its leaves written out one by one: same root, same openings
    /// (regions smaller than a base-tree node, and larger).
    fn equals_the_tree_of_its_leaves<Tree: MerkleTreeTrait<Hasher = PoseidonHasher>>(nodes: u64, region_bits: u32) {
        let regions: Vec<PoseidonDomain> =
            (0..nodes >> region_bits).map(|r| PoseidonDomain::from(Fr::from(r * 7 + 3))).collect();
        let leaves = (0..nodes).map(|i| (i, regions[(i >> region_bits) as usize])).collect();
        let full = SparseTree::filled::<Tree>(nodes, leaves, None).unwrap();
        let tree = RegionTree::new::<Tree>(nodes, region_bits, regions).unwrap();
        assert_eq!(tree.root(), full.root(), "{nodes} nodes, regions of 2^{region_bits}");
        for leaf in [0, 1, nodes / 3, nodes - 1] {
            use storage_proofs_core::merkle::MerkleProofTrait as _;
            let (a, b) = (tree.proof::<Tree>(leaf), full.proof::<Tree>(leaf));
            assert!(a.verify(), "leaf {leaf}");
            assert_eq!(a.path(), b.path(), "leaf {leaf}");
        }
    }

    #[test]
    fn a_region_tree_is_the_tree_of_its_leaves() {
        equals_the_tree_of_its_leaves::<SectorShape2KiB>(64, 5);
        equals_the_tree_of_its_leaves::<SectorShape2KiB>(64, 1);
        equals_the_tree_of_its_leaves::<SectorShape8MiB>(1 << 18, 8);
        equals_the_tree_of_its_leaves::<SectorShape8MiB>(1 << 18, 13);
    }
}
