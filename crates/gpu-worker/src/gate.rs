//! The device gate: as many partitions on the device at a time as it has prove lanes (one,
//! or two with `SNARKFLOW_PROVE_LANES=2`), and when several prepared partitions wait for it,
//! the most urgent goes next (the longest-waiting among equals). A WinningPoSt prepared while
//! prefetched 32 GiB PoRep partitions wait therefore waits only for the partitions already on
//! the device, not for the prefetched ones too (each ~8 s at 32 GiB). The device probe takes
//! the whole device.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex};

use snarkflow_wire::Priority;

#[derive(Debug)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    turn: Condvar,
    /// Holders at once.
    lanes: usize,
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new(1)
    }
}

#[derive(Debug, Default)]
struct GateState {
    /// Lanes held.
    held: usize,
    /// Who waits, most urgent first, then by arrival.
    waiting: BTreeSet<(Reverse<Priority>, u64)>,
    next_ticket: u64,
}

/// Lanes of the device, held; the next waiter's turn comes when this is dropped.
#[derive(Debug)]
pub(crate) struct Turn<'a> {
    gate: &'a Gate,
    lanes: usize,
}

impl Gate {
    /// A gate letting `lanes` holders (at least one) in at once.
    pub(crate) fn new(lanes: usize) -> Gate {
        Gate { state: Mutex::default(), turn: Condvar::new(), lanes: lanes.max(1) }
    }

    /// Wait (blocking the thread) until a lane is free and no more urgent or earlier waiter is
    /// ahead.
    pub(crate) fn enter(&self, priority: Priority) -> Turn<'_> {
        self.enter_for(priority, 1)
    }

    /// Wait as [`Gate::enter`] does until the whole device is free, and hold all of it.
    pub(crate) fn enter_alone(&self, priority: Priority) -> Turn<'_> {
        self.enter_for(priority, self.lanes)
    }

    fn enter_for(&self, priority: Priority, lanes: usize) -> Turn<'_> {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let me = (Reverse(priority), state.next_ticket);
        state.next_ticket += 1;
        state.waiting.insert(me);
        while state.held + lanes > self.lanes || state.waiting.first() != Some(&me) {
            state = self.turn.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        state.waiting.remove(&me);
        state.held += lanes;
        drop(state);
        // the next waiter may fit in a lane still free
        self.turn.notify_all();
        Turn { gate: self, lanes }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.held -= self.lanes;
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
        holders_at_most(Gate::default(), 1);
    }

    #[test]
    fn two_lanes_take_two_holders_at_once_and_a_probe_takes_both() {
        let gate = Arc::new(Gate::new(2));
        let (first, second) = (gate.enter(Priority::Normal), gate.enter(Priority::Normal));
        // a third waits for either
        let (g, entered) = (gate.clone(), Arc::new(std::sync::atomic::AtomicBool::new(false)));
        let e = entered.clone();
        let third = std::thread::spawn(move || {
            let _turn = g.enter(Priority::Low);
            e.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!entered.load(std::sync::atomic::Ordering::SeqCst), "a third holder on two lanes");
        drop(first);
        third.join().unwrap();
        // the whole device waits for the second holder
        let (g, alone) = (gate.clone(), Arc::new(std::sync::atomic::AtomicBool::new(false)));
        let a = alone.clone();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let probe = std::thread::spawn(move || {
            let _all = g.enter_alone(Priority::Critical);
            a.store(true, std::sync::atomic::Ordering::SeqCst);
            released.recv().unwrap();
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!alone.load(std::sync::atomic::Ordering::SeqCst), "the probe beside a partition");
        drop(second);
        while !alone.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // both lanes are the probe's until it lets go
        assert_eq!(gate.state.lock().unwrap().held, 2);
        release.send(()).unwrap();
        probe.join().unwrap();
        holders_at_most(Arc::try_unwrap(gate).unwrap(), 2);
    }

    /// Eight threads entering 50 times each never find more than `lanes` inside.
    fn holders_at_most(gate: Gate, lanes: usize) {
        let gate = Arc::new(gate);
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (gate, inside) = (gate.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _turn = gate.enter(if i % 2 == 0 { Priority::High } else { Priority::Low });
                        let before = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert!(before < lanes, "{} on {lanes} lanes", before + 1);
                        std::thread::yield_now();
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
