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
//!
//! ## What else is recorded
//! Besides tasks, each worker notes its waits for work (start, end, and
//! how much of the wait it spent looking: [`WaitRecord`]), the jobs it
//! stole ([`StealRecord`], with the level [`PoolStats`](crate::PoolStats)
//! counts them under), the placed tasks it sent ([`PushRecord`]) and, when
//! a placed task starts, how many placed tasks its node's queues hold
//! ([`QueueSample`]). Steals and pushes carry an id that the task they
//! brought repeats ([`TaskRecord::stolen`], [`TaskRecord::pushed`]), so a
//! trace can draw an arrow from one to the other. Pushes from threads
//! outside the pool go to a shared, locked buffer (see [`PoolRecorder`]).
//!
//! ## Counters, sampled
//! A counter read is a system call (one `read(2)` per perf group, ~1 µs in
//! a VM). A labelled task's counters are read at both its ends only when it
//! is *counted*: per [`CounterSampling`], every task, every k-th task of
//! each worker, or (the default) as many as a budget allows: reading
//! costs at most [`CounterSampling::Auto`]'s share of the tasks' own time.
//! The sample takes whole tasks: a labelled region inside a labelled task
//! is counted exactly when that task is, and any frame inside a counted
//! frame is counted, so that a parent's own counts can subtract its
//! children's exactly. (Deciding region by region would alias: with
//! every k-th region, an outer and an inner region alternating, only inner
//! ones would be picked.)

use std::cell::{RefCell, UnsafeCell};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

mod counters;
mod cpu;
pub(crate) mod env;
mod events;
mod frames;
mod session;
#[cfg(test)]
mod tests;

pub use self::counters::{Counter, Unavailable};
use self::counters::{CounterGroup, MAX_COUNTERS};
pub use self::events::{PushRecord, QueueSample, StealLevel, StealRecord, WaitRecord};
pub use self::frames::label;
pub(crate) use self::frames::{CloseLabel, OpenLabel, WorkerRec};
use self::session::SlotData;
pub(crate) use self::session::{record, start, stop, Owner, PoolMeta, PoolRecorder, Slot};
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
    /// Bytes of data the placed task declared (0: none). A labelled region
    /// inside a placed task repeats its task's node and bytes.
    pub data_bytes: u64,
    /// Start, in nanoseconds from the start of the recording.
    pub start_ns: u64,
    /// End, in nanoseconds from the start of the recording.
    pub end_ns: u64,
    /// Its own time: duration minus the time of its children (nested
    /// labelled regions, waits for stolen work).
    pub own_ns: u64,
    /// Counter deltas of its own time, in the order of
    /// [`Recording::counters`]; empty when they were not read: unlabelled
    /// jobs (outside a counted task), and labelled tasks that the
    /// [`CounterSampling`] left out.
    pub counters: Vec<u64>,
    /// For a job a thief took: the [`StealRecord::id`] of that steal.
    pub stolen: Option<u64>,
    /// For a placed task sent while the pool recorded: the
    /// [`PushRecord::id`] of that push.
    pub pushed: Option<u64>,
}

/// Where one worker's time went during a recording, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerTimes {
    /// In tasks (the sum of their own times).
    pub work_ns: u64,
    /// Looking for work (its own queues and steal attempts) and recording
    /// (reading clocks and counters at task boundaries).
    pub overhead_ns: u64,
    /// With nothing to do: spinning, yielding, parked.
    pub idle_ns: u64,
    /// The CPU time the worker's thread used from its first frame or wait
    /// of the recording to the stop (`CLOCK_THREAD_CPUTIME_ID`); `None`
    /// when it did nothing in the recording or the clock could not be
    /// read. Below its busy time (work + overhead), it was preempted.
    pub cpu_ns: Option<u64>,
}

/// How a recording read its counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterMethod {
    /// The sampling asked for.
    pub sampling: CounterSampling,
    /// How one read is made, in words (e.g. "one read(2) of the software
    /// perf group"); empty when no counter counted.
    pub read: String,
    /// Labelled tasks recorded.
    pub labelled: u64,
    /// Of those, tasks whose counters were read (the sample).
    pub counted: u64,
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
    /// Each worker's node index.
    pub worker_nodes: Vec<usize>,
    /// Each worker's CPU, when its thread is bound to that CPU alone
    /// ([`Pinning::Pu`](crate::Pinning::Pu)).
    pub worker_cpus: Vec<Option<u32>>,
    /// Wall-clock length of the recording.
    pub wall_ns: u64,
    /// Every task recorded, worker by worker.
    pub tasks: Vec<TaskRecord>,
    /// Each worker's split of the recording's time.
    pub workers: Vec<WorkerTimes>,
    /// Every wait for work, worker by worker.
    pub waits: Vec<WaitRecord>,
    /// Jobs taken from another worker or a node's queue, by time.
    pub steals: Vec<StealRecord>,
    /// Placed tasks sent to a node's queue or a worker's inbox, by time.
    pub pushes: Vec<PushRecord>,
    /// Placed tasks queued on a node, sampled at pushes and at placed
    /// tasks' starts, by time.
    pub queued: Vec<QueueSample>,
    /// The counters that counted, in the order of [`TaskRecord::counters`].
    pub counters: Vec<Counter>,
    /// The counters asked for that could not be opened, and why.
    pub unavailable: Vec<Unavailable>,
    /// How the counters were read.
    pub counter_method: CounterMethod,
}

/// Which labelled tasks' counters a recording reads (each read is a system
/// call at both ends of a task, ~2 µs per task in a VM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CounterSampling {
    /// Every labelled task.
    EveryTask,
    /// Every k-th labelled task of each worker (k ≥ 1; 0 counts as 1;
    /// labelled regions inside a task go with it).
    Every(u32),
    /// As many tasks as keep the reads' cost at most this percentage of
    /// the tasks' own time (the default: 2): each worker measures what a
    /// counted task's reads cost and counts the next task once the own time
    /// of the tasks since its last counted one pays for it. Long tasks are
    /// all counted, short ones sampled. Whether a task is counted is
    /// decided before it runs, so its own length does not bias the sample.
    Auto(u32),
}

impl Default for CounterSampling {
    fn default() -> Self {
        CounterSampling::Auto(2)
    }
}

impl fmt::Display for CounterSampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CounterSampling::EveryTask => f.write_str("every labelled task"),
            CounterSampling::Every(k) => {
                write!(f, "one labelled task in {} of each worker", k.max(&1))
            }
            CounterSampling::Auto(percent) => write!(
                f,
                "a sample of labelled tasks sized so that reading costs at most {percent} % of \
                 their own time"
            ),
        }
    }
}

/// Which counters a recording reads at task boundaries, and on which tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordOptions {
    /// The counters to open on each worker (default: [`Counter::ALL`];
    /// empty for timestamps only, the cheapest recording).
    pub counters: Vec<Counter>,
    /// Which labelled tasks' counters are read (default:
    /// [`CounterSampling::Auto`]).
    pub sampling: CounterSampling,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            counters: Counter::ALL.to_vec(),
            sampling: CounterSampling::default(),
        }
    }
}

impl RecordOptions {
    /// Timestamps only: no counter is opened or read.
    pub fn timestamps_only() -> Self {
        RecordOptions {
            counters: Vec::new(),
            sampling: CounterSampling::default(),
        }
    }

    /// These options with counters read on the tasks `sampling` picks.
    ///
    /// ```
    /// use terroir::report::{CounterSampling, RecordOptions};
    /// let every = RecordOptions::default().sampling(CounterSampling::EveryTask);
    /// assert_eq!(every.sampling, CounterSampling::EveryTask);
    /// ```
    pub fn sampling(mut self, sampling: CounterSampling) -> Self {
        self.sampling = sampling;
        self
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
                 its closure returns (or, for the global pool, to TERROIR_REPORT's recording, \
                 stopped at exit)"
            }
        })
    }
}

impl std::error::Error for RecordError {}
