//! `winning-post`: WinningPoSt (a missed one is a block reward lost, so it goes first).

use snarkflow_filecoin::PostKind;

use super::post::post_kind;

#[derive(Debug)]
pub struct WinningPost;

// a block must be out within its ~30 s epoch; past a few minutes the proof only takes room
post_kind!(WinningPost, "winning-post", Critical, 5 * 60, PostKind::Winning);
