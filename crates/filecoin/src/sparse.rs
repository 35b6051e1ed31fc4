//! Sparse committed-capacity PoRep fixtures: a C1 output for a sector of any published size
//! (32 GiB and 64 GiB included) without sealing it.
//!
//! A C1 output only opens the challenged nodes. For an all-zero (CC) sector whose trees are
//! *sparse* — every leaf no challenge opens is an empty value, so each root is computed from
//! the opened paths and per-level hashes of empty subtrees — only the challenged columns and
//! their parents' columns need values. Challenged nodes get their labels exactly as SDR
//! labeling computes them (the real graph's DRG and expander parents); parents that no
//! challenge forces get random labels (the same wherever a node repeats); the replica node of
//! a CC sector is its last-layer label; comm_r = H(comm_c, comm_r_last). Interactive PoRep's
//! challenges depend on the replica id and the seed only, so they are known before the trees
//! exist: that is what makes this possible. Synthetic and non-interactive PoRep derive their
//! challenges from comm_r and cannot be made this way. `docs/design/sparse-fixture.md` has
//! the derivation.
//!
//! [`SectorData::Random`] makes the sector hold random data instead (tree D over a repeated
//! random pattern, the replica the labels plus the data) and fills the subtrees no challenge
//! opens with random values, so that the witness's values repeat about as a sealed sector's
//! do rather than as an empty tree's.
//!
//! These are test fixtures: a real sector's comm_r is fixed before its seed exists.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{ensure, Context as _};
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::MerkleTreeTrait;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use rand::{Rng, RngCore};
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, Column, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof, StackedDrg, TOTAL_PARENTS,
};

use crate::sparse_tree::{PoseidonNodes as _, SparseTree, TreeD, TreeProof};
use crate::FilecoinError;

type VanillaProof<Tree> = stacked::Proof<Tree, Sha256Hasher>;

/// Largest sector (in 32-byte nodes, 512 MiB) whose CC comm_d is cross-checked against
/// filecoin-proofs' own computation; the ladder is the same computation at every size.
const LIBRARY_COMM_D_MAX_NODES: u64 = 1 << 24;

/// Base (DRG) parents per node; the rest of a node's 14 parents are expander parents.
const BASE_DEGREE: usize = 6;

/// What a fixture's sector holds, and how its trees look where no challenge opens them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SectorData {
    /// All zeros (a CC sector), every subtree no challenge opens empty: the cheapest, but the
    /// challenges' paths share their siblings, so a partition's witness repeats values
    /// thousands of times.
    #[default]
    Zeros,
    /// Random data, as a sector with deals: tree D over a random pattern of
    /// [`DATA_PATTERN_NODES`] nodes repeated (its paths' siblings differ below the pattern's
    /// height and repeat above it), the replica the labels plus that data, and the subtrees
    /// of trees C and R that no challenge opens random: the siblings differ as in a sealed
    /// sector.
    Random,
}

/// Nodes of the pattern a [`SectorData::Random`] sector's data repeats (128 MiB): at 32 GiB
/// the lowest 22 of tree D's 30 levels differ from challenge to challenge.
pub const DATA_PATTERN_NODES: u64 = 1 << 22;

/// Build a checked C1 output for a CC sector of `registered`'s size, sealed (in name) by
/// miner `prover_id` as sector `sector_id`, with ticket, seed and free labels from `rng`.
/// The result passes filecoin-proofs' own vanilla verification (what `seal_commit_phase1`
/// runs on its output) and the checks that verification leaves out (see `check`).
pub fn porep_c1(
    registered: RegisteredSealProof,
    prover_id: [u8; 32],
    sector_id: u64,
    rng: &mut impl RngCore,
) -> Result<SealCommitPhase1Output, FilecoinError> {
    porep_c1_of(registered, prover_id, sector_id, SectorData::Zeros, rng)
}

/// [`porep_c1`] for a sector holding `data`.
pub fn porep_c1_of(
    registered: RegisteredSealProof,
    prover_id: [u8; 32],
    sector_id: u64,
    data: SectorData,
    rng: &mut impl RngCore,
) -> Result<SealCommitPhase1Output, FilecoinError> {
    let name = crate::fields::registered_name(registered);
    if !name.ends_with("V1_1") {
        return Err(FilecoinError::new(format!(
            "{name}: only interactive PoRep (…V1_1) can be made sparse; synthetic and non-interactive PoRep \
             derive their challenges from comm_r"
        )));
    }
    let size = u64::from(registered.sector_size());
    let mut fixture_rng = rand_chacha::ChaCha20Rng::from_seed_rng(rng);
    Ok((|| with_sector_shape!(size, build, registered, prover_id, sector_id, data, &mut fixture_rng))()?)
}

/// A ChaCha20 keyed from the caller's rng (one type for the generic code below).
trait FromSeedRng {
    fn from_seed_rng(rng: &mut impl RngCore) -> Self;
}

impl FromSeedRng for rand_chacha::ChaCha20Rng {
    fn from_seed_rng(rng: &mut impl RngCore) -> Self {
        use rand::SeedableRng;
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        rand_chacha::ChaCha20Rng::from_seed(seed)
    }
}

/// 32 random bytes that are a canonical field element (the top two bits cleared).
pub(crate) fn fr_safe_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    bytes[31] &= 0x3f;
    bytes
}

fn fr_safe_digest(digest: &[u8]) -> [u8; 32] {
    let mut bytes: [u8; 32] = digest.try_into().expect("a SHA-256 digest is 32 bytes");
    bytes[31] &= 0x3f;
    bytes
}

/// Labels of the nodes a fixture opens: computed for challenged nodes, free for the rest.
struct Labels<'a> {
    graph: &'a stacked::StackedBucketGraph<PoseidonHasher>,
    replica_id: [u8; 32],
    layers: usize,
    challenged: &'a BTreeSet<u32>,
    /// Keys the free labels, so a node's free column is the same wherever it appears.
    free_key: [u8; 32],
    memo: HashMap<(u32, usize), [u8; 32]>,
}

impl Labels<'_> {
    fn parents(&self, node: u32) -> anyhow::Result<[u32; BASE_DEGREE + 8]> {
        let mut parents = [0u32; BASE_DEGREE + 8];
        self.graph.parents(node as usize, &mut parents)?;
        Ok(parents)
    }

    /// The label of `node` at `layer` (1-based).
    fn label(&mut self, node: u32, layer: usize) -> anyhow::Result<[u8; 32]> {
        if let Some(label) = self.memo.get(&(node, layer)) {
            return Ok(*label);
        }
        let label = if self.challenged.contains(&node) {
            let parents = self.parents(node)?;
            let mut hasher = Sha256::new();
            let mut prefix = [0u8; 64];
            prefix[..32].copy_from_slice(&self.replica_id);
            prefix[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
            prefix[36..44].copy_from_slice(&u64::from(node).to_be_bytes());
            hasher.update(prefix);
            for parent in self.labeling_parents(&parents, layer)? {
                hasher.update(parent);
            }
            fr_safe_digest(&hasher.finalize())
        } else {
            let digest = Sha256::new()
                .chain_update(b"snarkflow sparse fixture label")
                .chain_update(self.free_key)
                .chain_update(node.to_be_bytes())
                .chain_update((layer as u32).to_be_bytes())
                .finalize();
            fr_safe_digest(&digest)
        };
        self.memo.insert((node, layer), label);
        Ok(label)
    }

    /// The 37 parent labels hashed into a label at `layer`: the base parents' labels at this
    /// layer (layer 1: only those), then the expander parents' at the layer below, cycled.
    fn labeling_parents(&mut self, parents: &[u32], layer: usize) -> anyhow::Result<Vec<[u8; 32]>> {
        let count = if layer == 1 { BASE_DEGREE } else { parents.len() };
        let mut distinct = Vec::with_capacity(count);
        for (i, parent) in parents.iter().take(count).enumerate() {
            let parent_layer = if i < BASE_DEGREE { layer } else { layer - 1 };
            distinct.push(self.label(*parent, parent_layer)?);
        }
        Ok(distinct.iter().cycle().take(TOTAL_PARENTS).copied().collect())
    }

    fn column(&mut self, node: u32) -> anyhow::Result<Vec<PoseidonDomain>> {
        (1..=self.layers).map(|layer| Ok(PoseidonDomain::from(self.label(node, layer)?))).collect()
    }
}

fn build<Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    registered: RegisteredSealProof,
    prover_id: [u8; 32],
    sector_id: u64,
    data: SectorData,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> anyhow::Result<SealCommitPhase1Output> {
    let config = registered.as_v1_config();
    let nodes = u64::from(registered.sector_size()) / 32;
    let pp = filecoin_proofs::parameters::public_params::<Tree>(&config)?;
    let ticket = fr_safe_bytes(rng);
    let seed = loop {
        let seed = fr_safe_bytes(rng);
        if seed != [0; 32] {
            break seed;
        }
    };
    let (tree_d, fill) = match data {
        SectorData::Zeros => (TreeD::zeros(nodes), None),
        SectorData::Random => {
            let pattern = (0..DATA_PATTERN_NODES.min(nodes)).map(|_| Sha256Domain::from(fr_safe_bytes(rng))).collect();
            (TreeD::repeating(pattern, nodes)?, Some(rng.gen()))
        }
    };
    let comm_d: [u8; 32] = tree_d.root().into();
    // filecoin-proofs computes the CC comm_d by streaming a whole zero sector through its
    // commitment reader (tens of GB of memory at 32 GiB): cross-check where that is cheap
    if data == SectorData::Zeros && nodes <= LIBRARY_COMM_D_MAX_NODES {
        ensure!(
            comm_d == filecoin_proofs_api::seal::compute_comm_d(registered, &[])?,
            "the zero tree D root differs from filecoin-proofs' CC comm_d"
        );
    }
    let replica_id =
        stacked::generate_replica_id::<PoseidonHasher, _>(&prover_id, sector_id, &ticket, comm_d, &config.porep_id);
    let mut pub_in =
        stacked::PublicInputs::<PoseidonDomain, Sha256Domain> { replica_id, tau: None, k: None, seed: Some(seed) };
    let partitions = usize::from(config.partitions);
    let challenges: Vec<Vec<u32>> = (0..partitions)
        .map(|k| pub_in.challenges(&pp.challenges, nodes as usize, Some(k)).into_iter().map(|c| c as u32).collect())
        .collect();
    let challenged: BTreeSet<u32> = challenges.iter().flatten().copied().collect();
    let mut labels = Labels {
        graph: &pp.graph,
        replica_id: replica_id.into(),
        layers: pp.num_layers,
        challenged: &challenged,
        free_key: rng.gen(),
        memo: HashMap::new(),
    };
    let (columns, parents_of) = opened_columns(&mut labels, &challenged)?;
    let tree_c_leaves = columns
        .iter()
        .map(|(n, rows)| {
            Ok((u64::from(*n), PoseidonDomain::from(Column::<PoseidonHasher>::new(*n, rows.clone())?.hash())))
        })
        .collect::<anyhow::Result<_>>()?;
    let tree_c = SparseTree::filled::<Tree>(nodes, tree_c_leaves, fill)?;
    // the replica: the last layer's label (the key) plus the data
    let last = pp.num_layers - 1;
    let replica = |c: u32| -> PoseidonDomain {
        let key: blstrs::Scalar = columns[&c][last].into();
        let data: blstrs::Scalar = tree_d.leaf(u64::from(c)).into();
        (key + data).into()
    };
    let tree_r =
        SparseTree::filled::<Tree>(nodes, challenged.iter().map(|c| (u64::from(*c), replica(*c))).collect(), fill)?;
    let (comm_c, comm_r_last) = (tree_c.root(), tree_r.root());
    let comm_r_domain = <PoseidonHasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let comm_r: [u8; 32] = comm_r_domain.into();

    let opened = Opened::<Tree> {
        columns: &columns,
        parents_of: &parents_of,
        tree_c: &tree_c,
        tree_r: &tree_r,
        tree_d: &tree_d,
        _tree: std::marker::PhantomData,
    };
    let proofs: Vec<Vec<VanillaProof<Tree>>> = challenges
        .iter()
        .map(|partition| partition.iter().map(|&c| opened.challenge_proof(c, pp.num_layers)).collect())
        .collect();
    pub_in.tau = Some(stacked::Tau { comm_d: Sha256Domain::from(comm_d), comm_r: comm_r_domain });
    ensure!(
        StackedDrg::<Tree, Sha256Hasher>::verify_all_partitions(&pp, &pub_in, &proofs)?,
        "filecoin-proofs' vanilla verification rejected the fixture"
    );
    let vanilla_proofs = api_vanilla_proofs(registered, &proofs)?;
    Ok(SealCommitPhase1Output {
        registered_proof: registered,
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ticket,
    })
}

/// Every column a proof opens (the challenged nodes' and their parents'), and each challenged
/// node's parents.
#[allow(clippy::type_complexity)]
fn opened_columns(
    labels: &mut Labels<'_>,
    challenged: &BTreeSet<u32>,
) -> anyhow::Result<(BTreeMap<u32, Vec<PoseidonDomain>>, BTreeMap<u32, [u32; BASE_DEGREE + 8]>)> {
    let mut columns: BTreeMap<u32, Vec<PoseidonDomain>> = BTreeMap::new();
    let mut parents_of = BTreeMap::new();
    for &c in challenged {
        let parents = labels.parents(c)?;
        for node in std::iter::once(c).chain(parents) {
            if let std::collections::btree_map::Entry::Vacant(slot) = columns.entry(node) {
                slot.insert(labels.column(node)?);
            }
        }
        parents_of.insert(c, parents);
    }
    Ok((columns, parents_of))
}

/// What the vanilla proofs of a sparse sector are cut from: the opened columns, the challenged
/// nodes' parents, the sparse trees C and R, and tree D.
struct Opened<'a, Tree: MerkleTreeTrait<Hasher = PoseidonHasher>> {
    columns: &'a BTreeMap<u32, Vec<PoseidonDomain>>,
    parents_of: &'a BTreeMap<u32, [u32; BASE_DEGREE + 8]>,
    tree_c: &'a SparseTree,
    tree_r: &'a SparseTree,
    tree_d: &'a TreeD,
    _tree: std::marker::PhantomData<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>> Opened<'_, Tree> {
    fn column_proof(&self, node: u32) -> ColumnProof<TreeProof<Tree>> {
        ColumnProof::new(node, self.columns[&node].clone(), self.tree_c.proof::<Tree>(u64::from(node)))
    }

    /// The vanilla proof of challenge `c` over `layers` layers.
    fn challenge_proof(&self, c: u32, layers: usize) -> VanillaProof<Tree> {
        let parents = self.parents_of[&c];
        let c_x = self.column_proof(c);
        let drg_parents: Vec<_> = parents[..BASE_DEGREE].iter().map(|p| self.column_proof(*p)).collect();
        let exp_parents: Vec<_> = parents[BASE_DEGREE..].iter().map(|p| self.column_proof(*p)).collect();
        let labeling_proofs: Vec<_> = (1..=layers)
            .map(|layer| {
                let count = if layer == 1 { BASE_DEGREE } else { parents.len() };
                let distinct: Vec<PoseidonDomain> = parents
                    .iter()
                    .take(count)
                    .enumerate()
                    .map(|(i, p)| self.columns[p][if i < BASE_DEGREE { layer - 1 } else { layer - 2 }])
                    .collect();
                let repeated = distinct.iter().cycle().take(TOTAL_PARENTS).copied().collect();
                LabelingProof::new(layer as u32, u64::from(c), repeated)
            })
            .collect();
        let last_parents = labeling_parents_of(&labeling_proofs[layers - 1]);
        VanillaProof::<Tree> {
            comm_d_proofs: self.tree_d.proof(u64::from(c)),
            comm_r_last_proof: self.tree_r.proof::<Tree>(u64::from(c)),
            replica_column_proofs: ReplicaColumnProof { c_x, drg_parents, exp_parents },
            encoding_proof: EncodingProof::new(layers as u32, u64::from(c), last_parents),
            labeling_proofs,
        }
    }
}

/// The 37 parents a labeling proof hashes (its field is crate-private; its serialized form
/// is not).
fn labeling_parents_of(proof: &LabelingProof<PoseidonHasher>) -> Vec<PoseidonDomain> {
    let value = serde_json::to_value(proof).expect("a labeling proof serializes");
    serde_json::from_value(value["parents"].clone()).expect("parents are domains")
}

/// The filecoin-proofs-api form of the partition proofs (its constructor is private; its
/// serialized form — `{"StackedDrg<size>V1": [[proof, ...], ...]}` — is not).
fn api_vanilla_proofs<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredSealProof,
    proofs: &[Vec<VanillaProof<Tree>>],
) -> anyhow::Result<filecoin_proofs_api::seal::VanillaSealProof> {
    let size = crate::fields::size_name(u64::from(registered.sector_size()))?;
    // through bytes, not a JSON value: a 32 GiB C1 is ~50 MB of small numbers
    let wrapped = serde_json::to_vec(&BTreeMap::from([(format!("StackedDrg{size}V1"), proofs)]))?;
    serde_json::from_slice(&wrapped).context("wrapping the partition proofs for filecoin-proofs-api")
}

#[cfg(test)]
mod tests;
