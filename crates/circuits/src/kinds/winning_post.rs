//! `winning-post`: WinningPoSt (a missed one is a block reward lost, so it goes first).

use snarkflow_filecoin::{JobInput, PostInput, PostKind};
use snarkflow_wire::{CircuitSpec, JobKind};

use super::post::{post_kind, Post};

#[derive(Debug)]
pub(crate) struct WinningPost;

const POST: Post =
    Post { kind: JobKind::WinningPost, post: PostKind::Winning, sector_size, input, wrap: JobInput::WinningPost };

fn sector_size(spec: &CircuitSpec) -> Option<u64> {
    match *spec {
        CircuitSpec::WinningPost { sector_size } => Some(sector_size),
        CircuitSpec::Sha256Chain { .. }
        | CircuitSpec::DenseChain { .. }
        | CircuitSpec::PorepC2 { .. }
        | CircuitSpec::SnapUpdate { .. }
        | CircuitSpec::WindowPost { .. } => None,
    }
}

fn input(input: &JobInput) -> Option<&PostInput> {
    match input {
        JobInput::WinningPost(i) => Some(i),
        JobInput::PorepC2(_) | JobInput::SnapUpdate(_) | JobInput::WindowPost(_) => None,
    }
}

// a block must be out within its ~30 s epoch; past a few minutes the proof only takes room
post_kind!(WinningPost, Critical, 5 * 60, POST);
