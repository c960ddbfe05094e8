//! Each worker's thread CPU time over a recording: the worker notes its
//! CPU clock and the time on it at its first frame or wait of the
//! recording; the stopper reads the clock again (a thread's CPU clock can
//! be read from any thread of the process).

use super::*;

/// `Slot::cpu_clock` when the worker has not noted its clock.
const NO_CLOCK: i64 = i64::MIN;

/// The CPU-time clock of the calling thread.
fn own_clock() -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `pthread_self()` is the calling thread, alive for the call;
    // `clock` is a valid place for the result.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    (rc == 0).then_some(clock)
}

/// `clock`'s time, ns.
fn read(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; an invalid clock is an
    // error return, not undefined behaviour.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// A worker's CPU clock and its time at the start of its recording.
pub(crate) struct CpuStart {
    clock: AtomicI64,
    start: AtomicU64,
    /// The recording `start` belongs to (0: none).
    epoch: AtomicU64,
}

use std::sync::atomic::AtomicI64;

impl CpuStart {
    pub(super) fn new() -> CpuStart {
        CpuStart {
            clock: AtomicI64::new(NO_CLOCK),
            start: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
        }
    }

    /// On the worker's thread: notes its clock and CPU time now, for the
    /// recording `epoch`.
    pub(super) fn note(&self, epoch: u64) {
        let mut clock = self.clock.load(Ordering::Relaxed);
        if clock == NO_CLOCK {
            match own_clock() {
                Some(c) => {
                    clock = i64::from(c);
                    self.clock.store(clock, Ordering::Relaxed);
                }
                None => return,
            }
        }
        if let Some(now) = read(clock as libc::clockid_t) {
            self.start.store(now, Ordering::Relaxed);
            // Release: a stopper that sees the epoch sees the start.
            self.epoch.store(epoch, Ordering::Release);
        }
    }

    /// On the stopper's thread, while the worker lives: the CPU time the
    /// worker used since it noted its clock in recording `epoch`.
    pub(super) fn since_start(&self, epoch: u64) -> Option<u64> {
        if self.epoch.load(Ordering::Acquire) != epoch {
            return None;
        }
        let clock = self.clock.load(Ordering::Relaxed);
        let now = read(clock as libc::clockid_t)?;
        Some(now.saturating_sub(self.start.load(Ordering::Relaxed)))
    }
}
