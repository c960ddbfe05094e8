//! The rank's MPI thread: its loop, and how it waits while transfers are
//! in flight without taking the CPU from the rank's workers.
//!
//! Measured on a 2-CPU machine (`heat`, 2 ranks × 1 worker, each rank's
//! worker on a CPU of its own): a loop that polls and yields the CPU
//! between fruitless rounds (`sched_yield`) stays runnable, took 17–19
//! time slices per step and had its worker preempted 8–12 times per step.
//! Short sleeps instead cost a wake-up each, 17–33 µs of CPU on a virtual
//! machine, taken from the worker. So the thread sleeps long while
//! the rank's tasks have other work, and polls only while a task waits for
//! a transfer with nothing else to do ([`Waker::waiting`], [`Backoff`]):
//! the waiter's CPU is free then. A posted send wakes it (the other rank
//! needs the message) and yields the CPU to it; a posted receive does not
//! (it is matched when the thread next runs, at the latest when a task
//! waits for it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use mpi::ffi;

use crate::comm::{Command, Op};

/// How the MPI thread waits between rounds while transfers are in flight.
/// While no task waits for one, it sleeps long (`idle`): the rank's
/// workers have the CPU. While a task waits with nothing else to do, it
/// polls for a short spell after anything happens (a completion, a new
/// waiter), since the waiter's CPU is free, then sleeps, each sleep twice
/// the last from `first` up to `idle`: the other rank may be late.
#[derive(Clone, Debug)]
pub(crate) struct Backoff {
    hot: Duration,
    first: Duration,
    idle: Duration,
    /// Poll at once until then.
    hot_until: Option<Instant>,
    /// The next sleep while a task waits.
    sleep: Duration,
}

impl Backoff {
    /// Sleeps of 1 ms while no task waits (a wake-up per millisecond,
    /// about 2 % of a CPU); while one waits, 20 µs of polling, then sleeps
    /// of 50 µs, 100 µs, … up to 1 ms.
    pub(crate) const DEFAULT: Backoff = Backoff::new(
        Duration::from_micros(20),
        Duration::from_micros(50),
        Duration::from_millis(1),
    );

    pub(crate) const fn new(hot: Duration, first: Duration, idle: Duration) -> Backoff {
        Backoff {
            hot,
            first,
            idle,
            hot_until: None,
            sleep: first,
        }
    }

    /// Something happened (a completion, a new waiter): if a task waits,
    /// poll for a spell, then sleep from the first sleep on.
    pub(crate) fn reset(&mut self, waiting: bool) {
        self.hot_until = if waiting {
            Instant::now().checked_add(self.hot)
        } else {
            None
        };
        self.sleep = self.first;
    }

    /// The wait after a round that left transfers in flight: `None` to
    /// poll again at once.
    pub(crate) fn next(&mut self, waiting: bool) -> Option<Duration> {
        if !waiting {
            return Some(self.idle);
        }
        if self.hot_until.is_some_and(|t| Instant::now() < t) {
            return None;
        }
        self.hot_until = None;
        let sleep = self.sleep;
        self.sleep = self.sleep.saturating_mul(2).min(self.idle);
        Some(sleep)
    }
}

/// How tasks wake the MPI thread: [`poke`](Self::poke) ends a sleep (a
/// posted send, the end of `run`); a task that waits for a transfer with
/// nothing else to do ([`waiting`](Self::waiting)) ends it too and makes
/// the thread poll sooner ([`Backoff`]).
#[derive(Debug)]
pub(crate) struct Waker {
    thread: Thread,
    /// Tasks blocked on a pending transfer.
    waiting: AtomicUsize,
}

/// A task's wait, counted by [`Waker::waiting`] until dropped.
pub(crate) struct Waiting<'a>(&'a Waker);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Waker {
    /// A waker of the calling thread (the MPI thread).
    pub(crate) fn for_current_thread() -> Arc<Waker> {
        Arc::new(Waker {
            thread: thread::current(),
            waiting: AtomicUsize::new(0),
        })
    }

    /// Ends the MPI thread's sleep.
    pub(crate) fn poke(&self) {
        self.thread.unpark();
    }

    /// A task is about to block on a pending transfer, having nothing else
    /// to do: until the guard is dropped, the MPI thread polls sooner (on
    /// the CPU the task leaves idle).
    pub(crate) fn waiting(&self) -> Waiting<'_> {
        self.waiting.fetch_add(1, Ordering::AcqRel);
        self.thread.unpark();
        Waiting(self)
    }

    /// Whether a task waits.
    fn someone_waits(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }
}

/// The MPI thread's loop: starts what tasks post and tests what is in
/// flight, until `Stop` and nothing is in flight. Between rounds it waits
/// as `backoff` says (woken early by [`Waker::poke`] or a new waiter).
pub(crate) fn progress_loop(
    comm: ffi::MPI_Comm,
    rx: &Receiver<Command>,
    waker: &Waker,
    mut backoff: Backoff,
) {
    let mut active: Vec<Box<dyn Op>> = Vec::new();
    let mut stopping = false;
    let mut waiting = false;
    loop {
        loop {
            match rx.try_recv() {
                Ok(Command::Post(op)) if stopping => {
                    // Posted after the closure of `run` returned: refused.
                    active.extend(op.shutdown());
                }
                Ok(Command::Post(op)) => active.push(op),
                Ok(Command::Stop) | Err(TryRecvError::Disconnected) => {
                    if !stopping {
                        stopping = true;
                        // Unmatched receives fail; transfers in flight finish.
                        active = active.into_iter().filter_map(Op::shutdown).collect();
                    }
                    break;
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        let before = active.len();
        active.retain_mut(|op| !op.progress(comm));
        if stopping && active.is_empty() {
            // Posts that raced with Stop.
            while let Ok(Command::Post(op)) = rx.try_recv() {
                drop(op.shutdown());
            }
            return;
        }
        let was_waiting = std::mem::replace(&mut waiting, waker.someone_waits());
        if active.len() < before || (waiting && !was_waiting) {
            backoff.reset(waiting);
        }
        match backoff.next(waiting) {
            None => thread::yield_now(),
            Some(sleep) => {
                thread::park_timeout(sleep);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;
    use std::time::Instant;

    const US: Duration = Duration::from_micros(1);

    const LONG: Duration = Duration::from_secs(3600);

    #[test]
    fn the_backoff_sleeps_long_unless_a_task_waits() {
        let mut b = Backoff::new(Duration::ZERO, 2 * US, 16 * US);
        assert_eq!(b.next(false), Some(16 * US));
        b.reset(false);
        assert_eq!(b.next(false), Some(16 * US));
        // A waiter: sleeps from the first on, doubling up to the idle one.
        b.reset(true);
        let sleeps: Vec<_> = (0..5).map(|_| b.next(true)).collect();
        assert_eq!(sleeps, [2, 4, 8, 16, 16].map(|us| Some(us * US)));
        // A completion starts again from the first.
        b.reset(true);
        assert_eq!(b.next(true), Some(2 * US));
        // Never overflows, however long nothing happens.
        let mut b = Backoff {
            hot: Duration::ZERO,
            ..Backoff::DEFAULT
        };
        b.reset(true);
        for _ in 0..100 {
            b.next(true);
        }
        assert_eq!(b.next(true), Some(Duration::from_millis(1)));
    }

    #[test]
    fn the_backoff_polls_for_a_spell_when_a_task_waits() {
        let mut b = Backoff::new(LONG, 2 * US, 16 * US);
        b.reset(true);
        assert!((0..1000).all(|_| b.next(true).is_none()));
        // The waiter is gone: sleep, spell or not.
        assert_eq!(b.next(false), Some(16 * US));
        // No spell unless a task waited at the reset.
        b.reset(false);
        assert_eq!(b.next(true), Some(2 * US));
    }

    #[test]
    fn waits_are_counted_until_their_guards_drop() {
        let w = Waker::for_current_thread();
        assert!(!w.someone_waits());
        w.poke();
        assert!(!w.someone_waits(), "a post is not a wait");
        let a = w.waiting();
        let b = w.waiting();
        assert!(w.someone_waits());
        drop(a);
        assert!(w.someone_waits(), "one task still waits");
        drop(b);
        assert!(!w.someone_waits());
        // A wait that unwinds is uncounted too.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = w.waiting();
            panic!("unwinds");
        }));
        assert!(caught.is_err());
        assert!(!w.someone_waits());
    }

    /// A transfer that completes once its flag is set.
    struct Until(Arc<AtomicBool>);
    impl Op for Until {
        fn progress(&mut self, _: ffi::MPI_Comm) -> bool {
            self.0.load(Ordering::Acquire)
        }
        fn shutdown(self: Box<Self>) -> Option<Box<dyn Op>> {
            Some(self)
        }
    }

    /// The loop with sleeps of 10 s, and 10 s of polling when a task
    /// starts waiting: a test ends in well under 10 s only if the loop was
    /// woken, and polled.
    fn serve_sleepy() -> (mpsc::Sender<Command>, Arc<Waker>, thread::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel();
        let (wtx, wrx) = mpsc::channel();
        let h = thread::spawn(move || {
            let waker = Waker::for_current_thread();
            wtx.send(Arc::clone(&waker)).unwrap();
            // SAFETY: an MPI_Comm is a handle (a pointer in Open MPI, an
            // integer in MPICH), all zeroes a valid value of either; the
            // test's transfers never use it.
            let comm: ffi::MPI_Comm = unsafe { std::mem::zeroed() };
            let ten = Duration::from_secs(10);
            progress_loop(comm, &rx, &waker, Backoff::new(ten, ten, ten));
        });
        (tx, wrx.recv().unwrap(), h)
    }

    fn post(tx: &mpsc::Sender<Command>, flag: &Arc<AtomicBool>) {
        tx.send(Command::Post(Box::new(Until(Arc::clone(flag)))))
            .unwrap();
    }

    #[test]
    fn the_loop_polls_while_a_task_waits() {
        let (tx, waker, h) = serve_sleepy();
        let done = Arc::new(AtomicBool::new(false));
        post(&tx, &done);
        tx.send(Command::Stop).unwrap();
        // The loop sleeps (10 s). A task starts waiting: the loop must wake
        // and poll until the transfer completes, with no further wake-up.
        thread::sleep(Duration::from_millis(50));
        let wait = waker.waiting();
        thread::sleep(Duration::from_millis(50));
        let start = Instant::now();
        done.store(true, Ordering::Release);
        h.join().unwrap();
        drop(wait);
        assert!(start.elapsed() < Duration::from_secs(5), "slept through");
    }

    #[test]
    fn a_poke_ends_the_sleep() {
        let (tx, waker, h) = serve_sleepy();
        thread::sleep(Duration::from_millis(50));
        // The loop sleeps (10 s): `run` ends.
        let start = Instant::now();
        tx.send(Command::Stop).unwrap();
        waker.poke();
        h.join().unwrap();
        assert!(start.elapsed() < Duration::from_secs(5), "slept through");
    }
}
