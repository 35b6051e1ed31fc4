//! Prove lanes: with `SNARKFLOW_PROVE_LANES=2` (opt-in, being measured), a key whose plan leaves
//! room for a second set of prove buffers proves two partitions at once on one GPU, each on a
//! handle of its own ([`Device::open_lane`]: its own a, b, c, MSM workspace and streams), with
//! the same resident points and shape. One partition's NTTs and SpMV then run beside the
//! other's H MSM instead of after it. Each lane computes exactly what one prove computes alone,
//! so the proofs are the same bytes (the bench's `LANES` line checks it on the device). Whether
//! a plan has room for a second lane: `memory_plan::second_lane_bytes`.
//!
//! The handles are the process's, not a key's: which are proving is kept per handle, so a key
//! with one lane and a key with two never wait for the device's first handle while the second
//! is idle. So are the prove buffers the loaded keys promised on each lane (`PROVE_RESERVED`),
//! which the next key's plan counts.

use std::sync::{Arc, Condvar, Mutex};

use snarkflow_cuda_resident::Device;

use crate::memory_plan::{self, MemoryPlan};

/// The second lanes opened, by device ordinal: one per GPU, shared by every key proving in two.
static SECOND: Mutex<Vec<(u32, Arc<Device>)>> = Mutex::new(Vec::new());

/// The handles proving now (by address), and the signal that one has finished.
static BUSY: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static FREED: Condvar = Condvar::new();

/// The second lane on `device`'s GPU, opened on first use. Opening it also moves the first
/// handle's tail MSMs to a stream of their own, so that neither lane's waits on the other's.
pub(super) fn second_lane(device: &Arc<Device>) -> Result<Arc<Device>, String> {
    let mut lanes = SECOND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, lane)) = lanes.iter().find(|(ordinal, _)| *ordinal == device.ordinal()) {
        return Ok(lane.clone());
    }
    let lane = device.open_lane().map_err(|e| e.to_string())?;
    device.own_tail_stream().map_err(|e| e.to_string())?;
    lanes.push((device.ordinal(), lane.clone()));
    Ok(lane)
}

/// Free the prove buffers of `device` and of its second lane, if one is open (each waits for a
/// prove on it to end; the next prove makes them again).
pub fn release_workspace(device: &Device) {
    device.release_workspace();
    release_second(device.ordinal());
}

/// Free the second lane's prove buffers on `ordinal`'s GPU (when no loaded key proves on it).
pub(super) fn release_second(ordinal: u32) {
    // the lane out of the lock first: freeing waits for a prove on it to end
    if let Some(lane) = opened(ordinal) {
        lane.release_workspace();
    }
}

/// The second lane opened on `ordinal`'s GPU, if any.
fn opened(ordinal: u32) -> Option<Arc<Device>> {
    SECOND.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(o, _)| *o == ordinal).map(|(_, lane)| lane.clone())
}

/// The handles a key proves on: its device, and the second lane where it has one.
pub(super) struct Lanes {
    devices: Vec<Arc<Device>>,
}

/// A handle held for one prove; free again when dropped.
pub(super) struct Lane<'a> {
    device: &'a Device,
}

impl Lane<'_> {
    pub(super) fn device(&self) -> &Device {
        self.device
    }
}

impl Drop for Lane<'_> {
    fn drop(&mut self) {
        let me = self.device as *const Device as usize;
        BUSY.lock().unwrap_or_else(|e| e.into_inner()).retain(|&d| d != me);
        FREED.notify_all();
    }
}

impl Lanes {
    pub(super) fn new(devices: Vec<Arc<Device>>) -> Lanes {
        Lanes { devices }
    }

    pub(super) fn count(&self) -> usize {
        self.devices.len()
    }

    /// One of the key's handles that no prove holds, waiting while every one proves.
    pub(super) fn take(&self) -> Lane<'_> {
        let mut busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let free = self.devices.iter().find(|d| !busy.contains(&(Arc::as_ptr(d) as usize)));
            if let Some(device) = free {
                busy.push(Arc::as_ptr(device) as usize);
                return Lane { device };
            }
            busy = FREED.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The prove buffers each loaded key's plan needs (they share one set on the device, sized by
/// the largest), by key, and whether it proves on a second lane as well (the lane's set is
/// sized by the largest such key); a later key's plan counts both. A key takes its entry out
/// when it drops.
pub(super) static PROVE_RESERVED: Mutex<Vec<Reservation>> = Mutex::new(Vec::new());

#[derive(Debug, Clone, Copy)]
pub(super) struct Reservation {
    pub(super) key_id: u64,
    pub(super) bytes: u64,
    pub(super) two_lanes: bool,
}

/// The largest prove buffers a loaded key needs on the first lane, and on the second.
pub(super) fn prove_reserved(reserved: &[Reservation]) -> (u64, u64) {
    let largest =
        |two_only: bool| reserved.iter().filter(|r| r.two_lanes || !two_only).map(|r| r.bytes).max().unwrap_or(0);
    (largest(false), largest(true))
}

/// The handles a key in `plan` proves on: `device`, and its second lane where
/// `SNARKFLOW_PROVE_LANES=2` asks for one and the plan leaves room (the log says which).
pub(super) fn lane_devices(
    device: &Arc<Device>,
    plan: &MemoryPlan,
    witness_len: u64,
    reserved: (u64, u64),
) -> Vec<Arc<Device>> {
    let mut devices = vec![device.clone()];
    if !crate::second_lane_asked() {
        return devices;
    }
    let lane = memory_plan::second_lane_bytes(plan, witness_len, reserved.0, reserved.1).and_then(|bytes| {
        let lane = second_lane(device)?;
        Ok((lane, bytes))
    });
    match lane {
        Ok((lane, bytes)) => {
            tracing::info!(lane_gib = bytes as f64 / (1u64 << 30) as f64, "two prove lanes");
            devices.push(lane);
        }
        Err(why) => tracing::warn!(%why, "one prove lane (SNARKFLOW_PROVE_LANES=2 asked for two)"),
    }
    devices
}
