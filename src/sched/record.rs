//! Recording: what each worker ran, for how long, and where its time went.
//!
//! While a pool records ([`ThreadPool::record`](crate::ThreadPool::record)),
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
//! When no pool records, the cost on the hot path is one relaxed load of a
//! global counter and a predictable branch per job.

use std::cell::{RefCell, UnsafeCell};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use super::counters::{Counter, CounterGroup, Unavailable, MAX_COUNTERS};
use super::policy::Policy;
use super::registry::WorkerThread;
use crate::numa::NodeId;

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

/// What [`ThreadPool::record`](crate::ThreadPool::record) returns.
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

/// Per-worker recording slot, shared with the stopper (see the module docs
/// for the protocol).
pub(crate) struct Slot {
    writing: AtomicBool,
    /// When the worker entered its current wait for work: `NOT_WAITING`,
    /// or 0 for "since before the recording started".
    wait_since: AtomicU64,
    /// Frames the worker has open (a job, a labelled region): the stopper
    /// lets them close before it stops.
    open: AtomicUsize,
    data: UnsafeCell<SlotData>,
}

#[derive(Default)]
struct SlotData {
    tasks: Vec<TaskRecord>,
    times: WorkerTimes,
}

// SAFETY: `data` is only touched under the `writing`/`recording` protocol
// of the module docs, which gives it one user at a time.
unsafe impl Sync for Slot {}

impl Slot {
    pub(crate) fn new() -> Slot {
        Slot {
            writing: AtomicBool::new(false),
            wait_since: AtomicU64::new(NOT_WAITING),
            open: AtomicUsize::new(0),
            data: UnsafeCell::new(SlotData::default()),
        }
    }
}

/// A pool's recording state.
pub(crate) struct PoolRecorder {
    recording: AtomicBool,
    /// Bumped at each start, so workers notice a new recording.
    epoch: AtomicU64,
    start_ns: AtomicU64,
    counters: std::sync::Mutex<Vec<Counter>>,
    /// Serialises `record` calls on one pool.
    busy: std::sync::Mutex<()>,
}

impl PoolRecorder {
    pub(crate) fn new() -> PoolRecorder {
        PoolRecorder {
            recording: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            start_ns: AtomicU64::new(0),
            counters: std::sync::Mutex::new(Vec::new()),
            busy: std::sync::Mutex::new(()),
        }
    }

    /// Acquire: a worker that sees the recording on also sees its epoch,
    /// start and counters.
    #[inline]
    pub(crate) fn is_recording(&self) -> bool {
        self.recording.load(Ordering::Acquire)
    }
}

/// Runs `op` while recording `slots` (a pool's workers).
pub(crate) fn record<R>(
    rec: &PoolRecorder,
    slots: &[&Slot],
    meta: (Policy, Vec<NodeId>),
    options: &RecordOptions,
    op: impl FnOnce() -> R,
) -> (R, Recording) {
    let _one_at_a_time = match rec.busy.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => panic!(
            "terroir: ThreadPool::record called while this pool is already recording \
             (from inside another record, or from two threads at once)"
        ),
    };
    // Which counters open here (the workers see the same: same kernel,
    // same permissions); the workers open their own groups lazily.
    let mut wanted = options.counters.clone();
    wanted.sort();
    wanted.dedup();
    wanted.truncate(MAX_COUNTERS);
    let (probe, unavailable) = CounterGroup::open(&wanted);
    let counters = probe.counters().to_vec();
    drop(probe);
    *rec.counters.lock().unwrap_or_else(|e| e.into_inner()) = counters.clone();
    for s in slots {
        // SAFETY: not recording, so no worker writes (the previous stop
        // waited for every writer).
        unsafe { *s.data.get() = SlotData::default() };
    }
    let start = now_ns();
    rec.start_ns.store(start, Ordering::SeqCst);
    rec.epoch.fetch_add(1, Ordering::SeqCst);
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    rec.recording.store(true, Ordering::SeqCst);

    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(op));

    // The job that ran `op` closes its frame just after it let us go: give
    // open frames a moment to close (other users' long jobs do not hold
    // the stop up for more than that).
    let grace = Instant::now();
    while slots.iter().any(|s| s.open.load(Ordering::SeqCst) != 0)
        && grace.elapsed() < std::time::Duration::from_millis(50)
    {
        std::thread::yield_now();
    }
    rec.recording.store(false, Ordering::SeqCst);
    let stop = now_ns();
    ACTIVE.fetch_sub(1, Ordering::SeqCst);
    let mut tasks = Vec::new();
    let mut workers = Vec::new();
    for s in slots {
        while s.writing.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        // SAFETY: recording is off and the worker is not writing: by the
        // protocol it will not touch `data` until the next start.
        let mut d = std::mem::take(unsafe { &mut *s.data.get() });
        // A worker still waiting for work was idle since it began waiting
        // (or since the start, if it began before).
        let since = s.wait_since.load(Ordering::SeqCst);
        if since != NOT_WAITING {
            d.times.idle_ns += stop.saturating_sub(since.max(start));
        }
        tasks.append(&mut d.tasks);
        workers.push(d.times);
    }
    let r = match result {
        Ok(r) => r,
        Err(p) => std::panic::resume_unwind(p),
    };
    tasks.sort_by_key(|t| (t.worker, t.start_ns));
    (
        r,
        Recording {
            threads: slots.len(),
            policy: meta.0,
            nodes: meta.1,
            wall_ns: stop - start,
            tasks,
            workers,
            counters,
            unavailable,
        },
    )
}

/// One open frame of a worker.
struct Frame {
    label: Label,
    /// Emitted as a task (a wait frame is not: its time belongs to nobody's
    /// own time, and the jobs run during it are frames of their own).
    task: bool,
    /// The recording it belongs to.
    epoch: u64,
    data_node: Option<NodeId>,
    /// Before the counters were read (the recording's cost starts here).
    enter: u64,
    start: u64,
    child_ns: u64,
    /// Whether the counters were read at its start (labelled regions
    /// only: each read is a system call, ~1 µs in a VM).
    counted: bool,
    counts: [u64; MAX_COUNTERS],
    child_counts: [u64; MAX_COUNTERS],
}

/// A worker's own recording state.
pub(crate) struct WorkerRec {
    frames: RefCell<Vec<Frame>>,
    epoch: std::cell::Cell<u64>,
    group: RefCell<Option<CounterGroup>>,
    /// The counters its group reads for the current recording.
    ncounters: std::cell::Cell<usize>,
}

impl WorkerRec {
    pub(crate) fn new() -> WorkerRec {
        WorkerRec {
            frames: RefCell::new(Vec::new()),
            epoch: std::cell::Cell::new(0),
            group: RefCell::new(None),
            ncounters: std::cell::Cell::new(0),
        }
    }
}

impl WorkerThread {
    /// Brings this worker up to the current recording (counters opened).
    fn rec_sync(&self, rec: &PoolRecorder) {
        let epoch = rec.epoch.load(Ordering::Acquire);
        let me = self.rec_state();
        if me.epoch.get() == epoch {
            return;
        }
        me.epoch.set(epoch);
        let stale = std::mem::take(&mut *me.frames.borrow_mut()).len();
        self.rec_slot().open.fetch_sub(stale, Ordering::SeqCst);
        let wanted = rec
            .counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut group = me.group.borrow_mut();
        let same = group
            .as_ref()
            .is_some_and(|g| g.counters() == wanted.as_slice());
        if !same {
            *group = if wanted.is_empty() {
                None
            } else {
                let (g, _) = CounterGroup::open(&wanted);
                Some(g)
            };
        }
        let n = group.as_ref().map_or(0, |g| g.counters().len());
        // A group that opened fewer counters than the probe did reports
        // none, rather than misaligned values.
        me.ncounters.set(if n == wanted.len() { n } else { 0 });
    }

    /// Reads the counters; false (and counters off for the rest of this
    /// recording, the group dropped to be reopened by the next one) when
    /// the read fails, so that a failed read never becomes zeros.
    fn read_counts(&self, out: &mut [u64; MAX_COUNTERS]) -> bool {
        let me = self.rec_state();
        if me.ncounters.get() == 0 {
            return false;
        }
        let ok = me.group.borrow_mut().as_mut().is_some_and(|g| g.read(out));
        if !ok {
            me.ncounters.set(0);
            *me.group.borrow_mut() = None;
        }
        ok
    }

    /// Opens a frame if the pool records; returns whether it did.
    #[inline]
    pub(crate) fn rec_push(&self, label: Label, task: bool) -> bool {
        if !any_active() {
            return false;
        }
        self.rec_push_cold(label, task)
    }

    #[cold]
    #[inline(never)]
    fn rec_push_cold(&self, label: Label, task: bool) -> bool {
        let rec = self.registry().recorder();
        if !rec.is_recording() {
            return false;
        }
        let enter = now_ns();
        self.rec_sync(rec);
        let mut counts = [0; MAX_COUNTERS];
        let counted = matches!(label, Label::Named(_)) && self.read_counts(&mut counts);
        let mut frames = self.rec_state().frames.borrow_mut();
        // A labelled region works on its job's declared data (a job run
        // during a wait has its own).
        let data_node = match label {
            Label::Named(_) => frames.last().and_then(|f| f.data_node),
            Label::Unlabelled => None,
        };
        frames.push(Frame {
            label,
            task,
            epoch: self.rec_state().epoch.get(),
            data_node,
            enter,
            start: now_ns(),
            child_ns: 0,
            counted,
            counts,
            child_counts: [0; MAX_COUNTERS],
        });
        self.rec_slot().open.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Closes the newest frame (opened by `rec_push` returning true) and
    /// emits it if it is a task.
    #[cold]
    #[inline(never)]
    pub(crate) fn rec_pop(&self) {
        let end = now_ns();
        let me = self.rec_state();
        let Some(f) = me.frames.borrow_mut().pop() else {
            return; // the recording restarted meanwhile
        };
        // Closed only once its record is written (the stopper waits for
        // open frames), whichever way this returns.
        struct Closed<'a>(&'a AtomicUsize);
        impl Drop for Closed<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _closed = Closed(&self.rec_slot().open);
        if f.epoch != me.epoch.get() || f.epoch != rec_epoch(self) {
            return; // opened in another recording
        }
        let mut counts = [0; MAX_COUNTERS];
        let counted = f.counted && self.read_counts(&mut counts);
        let dur = end.saturating_sub(f.start);
        // The frame with the cost of recording it (reading the clock and
        // the counters at both ends): that cost is the runtime's overhead,
        // not the task's or its parent's work.
        let full = now_ns().saturating_sub(f.enter);
        let cost = full.saturating_sub(dur);
        let n = if counted { me.ncounters.get() } else { 0 };
        let mut inclusive = [0u64; MAX_COUNTERS];
        for i in 0..n {
            inclusive[i] = counts[i].wrapping_sub(f.counts[i]);
        }
        if let Some(parent) = me.frames.borrow_mut().last_mut() {
            parent.child_ns += full;
            for (c, v) in parent.child_counts.iter_mut().zip(&inclusive).take(n) {
                *c = c.wrapping_add(*v);
            }
        }
        if !f.task {
            self.rec_write(|d| d.times.overhead_ns += cost);
            return;
        }
        let own = dur.saturating_sub(f.child_ns);
        let rec = self.registry().recorder();
        let start_ns = rec.start_ns.load(Ordering::Relaxed);
        let record = TaskRecord {
            label: f.label,
            worker: self.index(),
            node: self.node_index(),
            data_node: f.data_node,
            start_ns: f.start.saturating_sub(start_ns),
            end_ns: end.saturating_sub(start_ns),
            own_ns: own,
            counters: (0..n)
                .map(|i| inclusive[i].saturating_sub(f.child_counts[i]))
                .collect(),
        };
        self.rec_write(|d| {
            d.times.work_ns += own;
            d.times.overhead_ns += cost;
            d.tasks.push(record);
        });
    }

    /// Notes the declared data's node on the newest frame.
    pub(crate) fn rec_data_node(&self, node: NodeId) {
        if let Some(f) = self.rec_state().frames.borrow_mut().last_mut() {
            f.data_node.get_or_insert(node);
        }
    }

    /// Adds to this worker's overhead and idle times.
    pub(crate) fn rec_wait(&self, overhead_ns: u64, idle_ns: u64) {
        self.rec_write(|d| {
            d.times.overhead_ns += overhead_ns;
            d.times.idle_ns += idle_ns;
        });
    }

    /// Marks the start (`Some(now)`) or end (`None`) of a wait for work.
    pub(crate) fn rec_waiting(&self, since: Option<u64>) {
        self.rec_slot()
            .wait_since
            .store(since.unwrap_or(NOT_WAITING), Ordering::SeqCst);
    }

    /// The recording's start, for clamping waits that began before it.
    pub(crate) fn rec_start_ns(&self) -> u64 {
        self.registry().recorder().start_ns.load(Ordering::Relaxed)
    }

    fn rec_write(&self, f: impl FnOnce(&mut SlotData)) {
        let slot = self.rec_slot();
        slot.writing.store(true, Ordering::SeqCst);
        if self.registry().recorder().recording.load(Ordering::SeqCst) {
            // SAFETY: `writing` is set and recording is on: by the protocol
            // of the module docs the stopper is not reading `data`, and no
            // other thread writes this worker's slot.
            f(unsafe { &mut *slot.data.get() });
        }
        slot.writing.store(false, Ordering::Release);
    }
}

/// Runs `f` as a task labelled `name` when the current worker's pool
/// records (otherwise just runs it): its time is reported under `name`,
/// not under the job it runs in.
///
/// ```
/// use terroir::{label, ThreadPoolBuilder};
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let (sum, rec) = pool.record(|| {
///     terroir::join(
///         || label("left", || (0..1000u64).sum::<u64>()),
///         || label("right", || (1000..2000u64).sum::<u64>()),
///     )
/// });
/// assert_eq!(sum, (499_500, 1_499_500));
/// assert_eq!(rec.tasks.iter().filter(|t| t.label.as_str() == "left").count(), 1);
/// ```
pub fn label<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
    if !any_active() {
        return f();
    }
    match WorkerThread::current() {
        Some(wt) if wt.rec_push(Label::Named(name), true) => {
            struct Pop<'a>(&'a WorkerThread);
            impl Drop for Pop<'_> {
                fn drop(&mut self) {
                    self.0.rec_pop();
                }
            }
            let _pop = Pop(wt);
            f()
        }
        _ => f(),
    }
}
