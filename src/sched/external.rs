//! An event set by a thread outside the pools and waited for by a worker
//! the way it waits for a task group: running other work meanwhile, and
//! parked (woken by the setter) when there is none. terroir-mpi's requests
//! complete through one: its MPI thread sets it, the task waits on it.

use std::sync::{Condvar, Mutex, MutexGuard};

use super::latch::{Latch, WorkerLatch};
use super::worker::WorkerThread;

/// A one-shot event: [`set`](Self::set) by any thread, waited for by any
/// number of threads. **For terroir-mpi: not part of terroir's public API,
/// and not covered by semver.**
#[derive(Default)]
pub struct ExternalEvent {
    state: Mutex<State>,
    /// Waiters outside the pools block here.
    cv: Condvar,
}

#[derive(Default)]
struct State {
    set: bool,
    /// The latches of the workers waiting (each on its waiter's stack).
    latches: Vec<*const WorkerLatch>,
}

// SAFETY: the latch pointers are only dereferenced by `set`, under the
// mutex, while their waiters are blocked on them (a waiter that unwinds
// takes its latch off the list under the same mutex first).
unsafe impl Send for State {}

impl ExternalEvent {
    /// An event not set yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the event is set (what happened before `set` is visible).
    pub fn is_set(&self) -> bool {
        self.lock().set
    }

    /// Sets the event and wakes its waiters; setting it again does nothing.
    pub fn set(&self) {
        let mut state = self.lock();
        if state.set {
            return;
        }
        state.set = true;
        for latch in state.latches.drain(..) {
            // SAFETY: the waiter is blocked in `wait_until` on this latch
            // (it cannot return before the latch is set, and takes it off
            // the list under this mutex if it unwinds), so it is alive; a
            // setter outside its pool is what `cross` latches are for.
            unsafe { WorkerLatch::set(latch) };
        }
        self.cv.notify_all();
    }

    /// Returns once the event is set. On a worker (of any pool) it runs
    /// other work meanwhile, as a task group's wait does; on any other
    /// thread it blocks.
    pub fn wait(&self) {
        let mut state = self.lock();
        if state.set {
            return;
        }
        let Some(wt) = WorkerThread::current() else {
            while !state.set {
                state = self.cv.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            return;
        };
        let latch = WorkerLatch::new(wt, true);
        state.latches.push(&latch);
        drop(state);
        /// Takes the latch off the list if the wait unwinds before the
        /// event was set (the latch is about to be freed).
        struct Unlist<'a>(&'a ExternalEvent, *const WorkerLatch);
        impl Drop for Unlist<'_> {
            fn drop(&mut self) {
                self.0.lock().latches.retain(|&l| !std::ptr::eq(l, self.1));
            }
        }
        let unlist = Unlist(self, &latch);
        wt.wait_until(&latch);
        // Set: `set` took the latch off the list.
        std::mem::forget(unlist);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_worker_runs_other_work_while_it_waits() {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let event = Arc::new(ExternalEvent::new());
        let e = Arc::clone(&event);
        // One worker: the spawned task can only run if the waiting worker
        // runs it while it waits; it sets the event from a thread outside
        // the pool.
        let ran = pool.install(move || {
            let e2 = Arc::clone(&e);
            crate::spawn(move || {
                std::thread::spawn(move || e2.set());
            });
            e.wait();
            e.is_set()
        });
        assert!(ran);
    }

    #[test]
    fn a_thread_outside_the_pools_blocks_until_set() {
        let event = Arc::new(ExternalEvent::new());
        let e = Arc::clone(&event);
        let t = std::thread::spawn(move || e.set());
        event.wait();
        assert!(event.is_set());
        event.set(); // again: nothing
        event.wait();
        t.join().unwrap();
    }
}
