//! `winning-post`: WinningPoSt (a missed one is a block reward lost, so it goes first).

use snarkflow_filecoin::PostKind;

use super::post::post_kind;

#[derive(Debug)]
pub struct WinningPost;

// a block must be out within its 30 s epoch: a later proof is worth nothing, so the job fails
// then (a gateway's --default-deadline gives slow test machines longer)
post_kind!(WinningPost, "winning-post", Critical, 30, PostKind::Winning);
