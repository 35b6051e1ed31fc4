//! `window-post`: one WindowPoSt partition of a deadline (a missed WindowPoSt is a fault, so it goes ahead of sealing work).

use snarkflow_filecoin::PostKind;

use super::post::post_kind;

#[derive(Debug)]
pub struct WindowPost;

// a WindowPoSt deadline is a 30-minute window
post_kind!(WindowPost, "window-post", High, 30 * 60, PostKind::Window);
