//! Prove lanes: with `SNARKFLOW_PROVE_LANES=2` (opt-in, being measured), a key whose plan leaves
//! room for a second set of prove buffers proves two partitions at once on one GPU, each on a
//! handle of its own ([`Device::open_lane`]: its own a, b, c, MSM workspace and streams), with
//! the same resident points and shape. One partition's NTTs and SpMV then run beside the
//! other's H MSM instead of after it. Each lane computes exactly what one prove computes alone,
//! so the proofs are the same bytes (the bench's `LANES` line checks it on the device). Whether
//! a plan has room for a second lane: `memory_plan::second_lane_bytes`.

use std::sync::{Arc, Condvar, Mutex};

use snarkflow_cuda_resident::Device;

/// The second lane on `device`'s GPU, opened once per process and shared by every key that
/// proves in two lanes.
pub(super) fn second_lane(device: &Arc<Device>) -> Result<Arc<Device>, String> {
    static LANE: Mutex<Vec<(u32, Arc<Device>)>> = Mutex::new(Vec::new());
    let mut lanes = LANE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, lane)) = lanes.iter().find(|(ordinal, _)| *ordinal == device.ordinal()) {
        return Ok(lane.clone());
    }
    let lane = device.open_lane().map_err(|e| e.to_string())?;
    lanes.push((device.ordinal(), lane.clone()));
    Ok(lane)
}

/// The handles a key proves on, and which of them a prove holds now.
pub(super) struct Lanes {
    devices: Vec<Arc<Device>>,
    busy: Mutex<Vec<bool>>,
    freed: Condvar,
}

/// A lane held for one prove; free again when dropped.
pub(super) struct Lane<'a> {
    lanes: &'a Lanes,
    index: usize,
}

impl Lane<'_> {
    pub(super) fn device(&self) -> &Device {
        &self.lanes.devices[self.index]
    }
}

impl Drop for Lane<'_> {
    fn drop(&mut self) {
        self.lanes.busy.lock().unwrap_or_else(|e| e.into_inner())[self.index] = false;
        self.lanes.freed.notify_one();
    }
}

impl Lanes {
    pub(super) fn new(devices: Vec<Arc<Device>>) -> Lanes {
        let busy = Mutex::new(vec![false; devices.len()]);
        Lanes { devices, busy, freed: Condvar::new() }
    }

    pub(super) fn count(&self) -> usize {
        self.devices.len()
    }

    /// A free lane, waiting while every one proves.
    pub(super) fn take(&self) -> Lane<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(index) = busy.iter().position(|b| !b) {
                busy[index] = true;
                return Lane { lanes: self, index };
            }
            busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
    }
}
