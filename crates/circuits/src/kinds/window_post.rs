//! `window-post`: one WindowPoSt partition of a deadline (a missed WindowPoSt is a fault, so it goes ahead of sealing work).

use snarkflow_filecoin::{JobInput, PostInput, PostKind};
use snarkflow_wire::{CircuitSpec, JobKind};

use super::post::{post_kind, Post};

#[derive(Debug)]
pub(crate) struct WindowPost;

const POST: Post =
    Post { kind: JobKind::WindowPost, post: PostKind::Window, sector_size, input, wrap: JobInput::WindowPost };

fn sector_size(spec: &CircuitSpec) -> Option<u64> {
    match *spec {
        CircuitSpec::WindowPost { sector_size } => Some(sector_size),
        CircuitSpec::Sha256Chain { .. }
        | CircuitSpec::DenseChain { .. }
        | CircuitSpec::PorepC2 { .. }
        | CircuitSpec::SnapUpdate { .. }
        | CircuitSpec::WinningPost { .. } => None,
    }
}

fn input(input: &JobInput) -> Option<&PostInput> {
    match input {
        JobInput::WindowPost(i) => Some(i),
        JobInput::PorepC2(_) | JobInput::SnapUpdate(_) | JobInput::WinningPost(_) => None,
    }
}

// a WindowPoSt deadline is a 30-minute window
post_kind!(WindowPost, High, 30 * 60, POST);
