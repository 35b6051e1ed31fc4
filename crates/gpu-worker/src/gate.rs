//! The device gate: one partition on the device at a time, and when several prepared
//! partitions wait for it, the most urgent goes next (the longest-waiting among equals). A
//! WinningPoSt prepared while prefetched 32 GiB PoRep partitions wait therefore waits only for
//! the partition already on the device, not for the prefetched ones too (each ~8 s at 32 GiB).

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex};

use snarkflow_wire::Priority;

#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    turn: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    busy: bool,
    /// Who waits, most urgent first, then by arrival.
    waiting: BTreeSet<(Reverse<Priority>, u64)>,
    next_ticket: u64,
}

/// The device, held; the next waiter's turn comes when this is dropped.
#[derive(Debug)]
pub(crate) struct Turn<'a> {
    gate: &'a Gate,
}

impl Gate {
    /// Wait (blocking the thread) until the device is free and no more urgent or earlier
    /// waiter is ahead.
    pub(crate) fn enter(&self, priority: Priority) -> Turn<'_> {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let me = (Reverse(priority), state.next_ticket);
        state.next_ticket += 1;
        state.waiting.insert(me);
        while state.busy || state.waiting.first() != Some(&me) {
            state = self.turn.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        state.waiting.remove(&me);
        state.busy = true;
        Turn { gate: self }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.busy = false;
        drop(state);
        self.gate.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn the_most_urgent_waiter_goes_next_then_the_earliest() {
        let gate = Arc::new(Gate::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = gate.enter(Priority::Normal);
        // arrive in this order while the device is busy
        let mut threads = Vec::new();
        for (name, priority) in [
            ("normal-1", Priority::Normal),
            ("low", Priority::Low),
            ("normal-2", Priority::Normal),
            ("critical", Priority::Critical),
        ] {
            let (waiter, order) = (gate.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let _turn = waiter.enter(priority);
                order.lock().unwrap().push(name);
            }));
            // each is waiting before the next arrives
            while gate.state.lock().unwrap().waiting.len() < threads.len() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec!["critical", "normal-1", "normal-2", "low"]);
    }

    #[test]
    fn one_holder_at_a_time() {
        let gate = Arc::new(Gate::default());
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (gate, inside) = (gate.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _turn = gate.enter(if i % 2 == 0 { Priority::High } else { Priority::Low });
                        assert_eq!(inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0, "two on the device");
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
