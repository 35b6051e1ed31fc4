//! A key's buffers that witnesses pass through: its device witness buffers and its pinned host
//! buffers, each taken from its pool and waited for while all are in use.

use snarkflow_cuda_resident::{DeviceWitness, PinnedBuffer};

use super::{device_failure, ResidentKey, PINNED_WITNESS_BUFFERS};
use crate::ProveError;

impl ResidentKey {
    /// A device witness buffer, waiting while every one the plan made is staged.
    pub(super) fn take_device_witness(&self) -> DeviceWitness {
        let pool = &self.device_witnesses;
        let mut free = pool.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(w) = free.pop() {
                return w;
            }
            free = pool.returned.wait(free).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A pinned buffer of at least `bytes`, waiting while [`PINNED_WITNESS_BUFFERS`] are in use.
    pub(super) fn take_pinned(&self, bytes: usize) -> Result<PinnedBuffer, ProveError> {
        let mut pool = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(buf) = pool.free.pop() {
                if buf.len() >= bytes {
                    return Ok(buf);
                }
                pool.made -= 1;
                drop(buf);
            }
            if pool.made < PINNED_WITNESS_BUFFERS {
                pool.made += 1;
                drop(pool);
                return PinnedBuffer::new(bytes).map_err(|e| {
                    self.pinned.lock().unwrap_or_else(|e| e.into_inner()).made -= 1;
                    self.pinned_returned.notify_one();
                    device_failure(e)
                });
            }
            pool = self.pinned_returned.wait(pool).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(super) fn give_back_pinned(&self, buf: PinnedBuffer) {
        self.pinned.lock().unwrap_or_else(|e| e.into_inner()).free.push(buf);
        self.pinned_returned.notify_one();
    }
}
