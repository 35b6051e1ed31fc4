//! A task's watchdog clock: it counts the time a task works, not the time it waits for room
//! (the memory budget, a full object store) or for the broker to come back. A task that waits
//! an hour for room is healthy; one that computes for an hour past its limit is hung.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The watchdog of one task. Clones share the clock.
#[derive(Clone)]
pub struct Watchdog {
    inner: Arc<Inner>,
}

struct Inner {
    limit: Option<Duration>,
    clock: Mutex<Clock>,
    resumed: Notify,
}

struct Clock {
    /// Work counted up to `since`.
    worked: Duration,
    /// When the clock last started running (None while paused).
    since: Option<Instant>,
    /// Waits in progress: the clock runs only when there are none.
    waits: usize,
}

impl Clock {
    fn worked(&self) -> Duration {
        self.worked + self.since.map_or(Duration::ZERO, |s| s.elapsed())
    }
}

/// While held, the task's clock is paused (see [`Watchdog::waiting`]).
#[must_use = "the clock runs again when this drops"]
pub struct Waiting {
    inner: Arc<Inner>,
}

impl Watchdog {
    /// A clock that starts running now; `None`: it never fires.
    pub fn start(limit: Option<Duration>) -> Watchdog {
        let clock = Clock { worked: Duration::ZERO, since: Some(Instant::now()), waits: 0 };
        Watchdog { inner: Arc::new(Inner { limit, clock: Mutex::new(clock), resumed: Notify::new() }) }
    }

    /// The limit it fires at.
    pub fn limit(&self) -> Option<Duration> {
        self.inner.limit
    }

    /// Work counted so far.
    pub fn worked(&self) -> Duration {
        self.inner.clock.lock().expect("watchdog lock").worked()
    }

    /// Pause the clock until the returned guard drops: the task waits for something outside
    /// it (room, the broker). Nested waits keep it paused until the last ends.
    pub fn waiting(&self) -> Waiting {
        let mut clock = self.inner.clock.lock().expect("watchdog lock");
        if clock.waits == 0 {
            clock.worked = clock.worked();
            clock.since = None;
        }
        clock.waits += 1;
        Waiting { inner: self.inner.clone() }
    }

    /// Resolves once the task has worked for longer than the limit; never without one.
    pub async fn expired(&self) {
        let Some(limit) = self.inner.limit else {
            return std::future::pending().await;
        };
        loop {
            let resumed = self.inner.resumed.notified();
            let left = {
                let clock = self.inner.clock.lock().expect("watchdog lock");
                if clock.since.is_none() {
                    None
                } else {
                    Some(limit.saturating_sub(clock.worked()))
                }
            };
            match left {
                Some(left) if left.is_zero() => return,
                Some(left) => tokio::time::sleep(left).await,
                // paused: nothing to count until it runs again
                None => resumed.await,
            }
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut clock = self.inner.clock.lock().expect("watchdog lock");
        clock.waits -= 1;
        if clock.waits == 0 {
            clock.since = Some(Instant::now());
            drop(clock);
            self.inner.resumed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn time_spent_waiting_is_not_counted() {
        let dog = Watchdog::start(Some(Duration::from_secs(10)));
        let fired = tokio::spawn({
            let dog = dog.clone();
            async move {
                dog.expired().await;
                Instant::now()
            }
        });
        let began = Instant::now();
        tokio::time::sleep(Duration::from_secs(4)).await;
        {
            let _outer = dog.waiting();
            let inner = dog.waiting();
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(inner);
            // still paused: the outer wait goes on
            tokio::time::sleep(Duration::from_secs(30)).await;
            assert_eq!(dog.worked(), Duration::from_secs(4));
        }
        let fired_at = fired.await.unwrap();
        // 4 s of work, 60 s of waiting, then 6 s more of work
        assert_eq!(fired_at - began, Duration::from_secs(70));
    }

    #[tokio::test(start_paused = true)]
    async fn without_waits_it_fires_at_the_limit_and_without_a_limit_never() {
        let dog = Watchdog::start(Some(Duration::from_secs(3)));
        let began = Instant::now();
        dog.expired().await;
        assert_eq!(began.elapsed(), Duration::from_secs(3));
        let never = Watchdog::start(None);
        assert!(tokio::time::timeout(Duration::from_secs(3600), never.expired()).await.is_err());
    }
}
