//! Recording: what each worker ran, for how long, and where its time went.
//!
//! While a pool records ([`ThreadPool::record`](crate::ThreadPool::record),
//! or between [`ThreadPool::start_recording`](crate::ThreadPool::start_recording)
//! and [`ThreadPool::stop_recording`](crate::ThreadPool::stop_recording)),
//! every job a worker runs and every labelled region ([`label`]) inside one
//! is a *frame*: a start and end time, the counters read at both ends, and
//! the time spent in its children (nested labelled regions, and waits for
//! stolen work, during which the worker runs other jobs). A frame's *own*
//! time is its duration minus its children's: the work that frame did
//! itself, so that no nanosecond is counted twice. Outside jobs, a worker's
//! time is split into *overhead* (looking for work: its own queues, steal
//! attempts) and *idle* (spinning, yielding, parked).
//!
//! ## Buffers
//! Each worker appends to its own buffer (in the registry's per-worker
//! slot) without a lock. The protocol with the thread that stops the
//! recording: the worker sets `writing` (SeqCst), checks `recording`
//! (SeqCst), appends only if it is set, and clears `writing` (Release). The
//! stopper clears `recording` (SeqCst) and then waits until it sees
//! `writing` clear (Acquire). Either the worker sees the recording stopped,
//! or the stopper sees the worker writing and waits: they never touch the
//! buffer at the same time.
//!
//! ## Starting and stopping
//! A pool has at most one recording at a time: its *session* (a mutex in
//! [`PoolRecorder`]) is empty or names the recording's owner, either the
//! closure form (`record`, which stops when its closure returns) or an
//! explicit `start_recording` (stopped by `stop_recording`). [`start`] and
//! [`stop`] are the one protocol both forms use; each runs entirely under
//! the session's lock. So a start that follows a stop (on any thread)
//! happens after that stop's wait for the writers: the start may reset the
//! buffers, because no worker writes them until it sees `recording` set
//! again, which the start does last (SeqCst, after the reset). A start
//! finding the session taken fails with [`RecordError::AlreadyRecording`]
//! (the closure form turns that into its documented panic); a stop finding
//! it empty fails with [`RecordError::NotRecording`], and an explicit stop
//! of a closure's recording with [`RecordError::RecordInProgress`].
//!
//! When no pool records, the cost on the hot path is one relaxed load of a
//! global counter and a predictable branch per job.

use std::cell::{RefCell, UnsafeCell};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

mod counters;
mod frames;
mod session;
#[cfg(test)]
mod tests;

pub use self::counters::{Counter, Unavailable};
use self::counters::{CounterGroup, MAX_COUNTERS};
pub use self::frames::label;
pub(crate) use self::frames::WorkerRec;
use self::session::SlotData;
pub(crate) use self::session::{record, start, stop, Owner, PoolRecorder, Slot};
use crate::numa::NodeId;
use crate::sched::policy::Policy;
use crate::sched::worker::WorkerThread;

/// `Slot::wait_since` of a worker that is not waiting for work.
const NOT_WAITING: u64 = u64::MAX;

/// The epoch of the recording `wt`'s pool is on now.
fn rec_epoch(wt: &WorkerThread) -> u64 {
    wt.registry().recorder().epoch.load(Ordering::Acquire)
}

/// Number of pools recording now, process-wide: the hot path's only check.
pub(crate) static ACTIVE: AtomicUsize = AtomicUsize::new(0);

#[inline(always)]
pub(crate) fn any_active() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// Nanoseconds since a process-wide origin.
pub(crate) fn now_ns() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// What a task is called in a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Label {
    /// Given with [`label`] or [`Scope::spawn_labeled`](crate::Scope::spawn_labeled).
    Named(&'static str),
    /// A job with no label: a spawned task, a stolen `join` half, or the
    /// root of an `install`.
    Unlabelled,
}

impl Label {
    /// The label's text (`"unlabelled"` for [`Label::Unlabelled`]).
    pub fn as_str(&self) -> &'static str {
        match self {
            Label::Named(s) => s,
            Label::Unlabelled => "unlabelled",
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task (a job, or a labelled region inside one) as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    /// Its label.
    pub label: Label,
    /// The worker that ran it (index in the pool).
    pub worker: usize,
    /// The node index (in the pool's topology) of that worker.
    pub node: usize,
    /// The node of the task's declared data, for placed tasks that declared
    /// some (the first region's node).
    pub data_node: Option<NodeId>,
    /// Start, in nanoseconds from the start of the recording.
    pub start_ns: u64,
    /// End, in nanoseconds from the start of the recording.
    pub end_ns: u64,
    /// Its own time: duration minus the time of its children (nested
    /// labelled regions, waits for stolen work).
    pub own_ns: u64,
    /// Counter deltas of its own time, in the order of
    /// [`Recording::counters`]; empty for unlabelled jobs, whose counters
    /// are not read (each read is a system call).
    pub counters: Vec<u64>,
}

/// Where one worker's time went during a recording, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerTimes {
    /// In tasks (the sum of their own times).
    pub work_ns: u64,
    /// Looking for work: its own queues and steal attempts.
    pub overhead_ns: u64,
    /// With nothing to do: spinning, yielding, parked.
    pub idle_ns: u64,
}

/// What [`ThreadPool::record`](crate::ThreadPool::record) and
/// [`ThreadPool::stop_recording`](crate::ThreadPool::stop_recording) return.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Workers of the pool.
    pub threads: usize,
    /// The pool's policy.
    pub policy: Policy,
    /// The pool's nodes, by node index.
    pub nodes: Vec<NodeId>,
    /// Wall-clock length of the recording.
    pub wall_ns: u64,
    /// Every task recorded, worker by worker.
    pub tasks: Vec<TaskRecord>,
    /// Each worker's split of the recording's time.
    pub workers: Vec<WorkerTimes>,
    /// The counters that counted, in the order of [`TaskRecord::counters`].
    pub counters: Vec<Counter>,
    /// The counters asked for that could not be opened, and why.
    pub unavailable: Vec<Unavailable>,
}

/// Which counters a recording reads at task boundaries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordOptions {
    /// The counters to open on each worker (default: [`Counter::ALL`];
    /// empty for timestamps only, the cheapest recording).
    pub counters: Vec<Counter>,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            counters: Counter::ALL.to_vec(),
        }
    }
}

impl RecordOptions {
    /// Timestamps only: no counter is opened or read.
    pub fn timestamps_only() -> Self {
        RecordOptions {
            counters: Vec::new(),
        }
    }
}

/// Why a recording could not start or stop (see
/// [`ThreadPool::start_recording`](crate::ThreadPool::start_recording)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordError {
    /// A start while the pool records already: a `start_recording` not
    /// stopped yet, or a `record` call in progress (the caller's own, when
    /// nested, or another thread's). A pool has one recording at a time.
    AlreadyRecording,
    /// A stop while the pool does not record: `start_recording` was not
    /// called, or its recording was stopped already.
    NotRecording,
    /// `stop_recording` while the pool's recording belongs to a `record`
    /// call in progress, which stops it itself when its closure returns.
    RecordInProgress,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordError::AlreadyRecording => {
                "the pool is recording already (a recording started and not stopped yet, or a \
                 record call in progress, on this thread or another): a pool has one recording \
                 at a time"
            }
            RecordError::NotRecording => {
                "the pool is not recording (no recording was started, or it was stopped already)"
            }
            RecordError::RecordInProgress => {
                "the pool's recording belongs to a record call in progress, which stops it when \
                 its closure returns"
            }
        })
    }
}

impl std::error::Error for RecordError {}
