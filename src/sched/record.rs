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

/// Who owns a pool's recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The closure form (`record`), which stops it when its closure returns.
    Closure,
    /// `start_recording`, stopped by `stop_recording`.
    Explicit,
}

/// The recording a pool runs now (see "Starting and stopping" in the
/// module docs).
struct Session {
    owner: Owner,
    start: u64,
    counters: Vec<Counter>,
    unavailable: Vec<Unavailable>,
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
    /// The recording in progress, if any: starts and stops run under this
    /// lock (see the module docs).
    session: std::sync::Mutex<Option<Session>>,
}

impl PoolRecorder {
    pub(crate) fn new() -> PoolRecorder {
        PoolRecorder {
            recording: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            start_ns: AtomicU64::new(0),
            counters: std::sync::Mutex::new(Vec::new()),
            session: std::sync::Mutex::new(None),
        }
    }

    /// Acquire: a worker that sees the recording on also sees its epoch,
    /// start and counters.
    #[inline]
    pub(crate) fn is_recording(&self) -> bool {
        self.recording.load(Ordering::Acquire)
    }

    fn session(&self) -> std::sync::MutexGuard<'_, Option<Session>> {
        // Poisoned only by a panic inside a start or stop (a bug, or the
        // counter probe before anything changed): the session is still
        // the last one set.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for PoolRecorder {
    /// A pool dropped while it records (a `start_recording` never stopped):
    /// the recording is discarded, and the process-wide count of recording
    /// pools goes down with it, so that the hot path's check is cheap
    /// again.
    fn drop(&mut self) {
        let session = self.session.get_mut().unwrap_or_else(|e| e.into_inner());
        if session.take().is_some() {
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Starts a recording of `slots` (a pool's workers) owned by `owner`.
///
/// # Errors
/// [`RecordError::AlreadyRecording`] when the pool records already.
pub(crate) fn start(
    rec: &PoolRecorder,
    slots: &[&Slot],
    options: &RecordOptions,
    owner: Owner,
) -> Result<(), RecordError> {
    // Held until the recording is on: a concurrent start waits, then finds
    // the session taken; a concurrent stop waits, then stops this one.
    let mut session = rec.session();
    if session.is_some() {
        return Err(RecordError::AlreadyRecording);
    }
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
        // SAFETY: not recording: the session is empty and we hold its lock,
        // so the last stop (which emptied it under that lock) has waited
        // for every writer, and no worker writes until it sees `recording`
        // set, which happens below, after this reset (SeqCst).
        unsafe { *s.data.get() = SlotData::default() };
    }
    let start = now_ns();
    rec.start_ns.store(start, Ordering::SeqCst);
    rec.epoch.fetch_add(1, Ordering::SeqCst);
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    rec.recording.store(true, Ordering::SeqCst);
    *session = Some(Session {
        owner,
        start,
        counters,
        unavailable,
    });
    Ok(())
}

/// Stops the recording of `slots` that `owner` started, once its writers
/// are done, and collects it. `meta` is the pool's policy and nodes.
///
/// # Errors
/// [`RecordError::NotRecording`] when the pool does not record;
/// [`RecordError::RecordInProgress`] when an explicit stop finds a
/// closure's recording.
pub(crate) fn stop(
    rec: &PoolRecorder,
    slots: &[&Slot],
    meta: (Policy, Vec<NodeId>),
    owner: Owner,
) -> Result<Recording, RecordError> {
    // Held until the buffers are collected: a start that follows this stop
    // waits for the writers to be done (see `start`).
    let mut guard = rec.session();
    let session = match guard.take() {
        None => return Err(RecordError::NotRecording),
        Some(s) if s.owner != owner => {
            *guard = Some(s);
            return Err(RecordError::RecordInProgress);
        }
        Some(s) => s,
    };
    // The caller's own frames, when it is one of the workers, enclose this
    // call: they cannot close before it returns, so there is no waiting for
    // them (its slot is not being written either: it runs this code).
    let own: *const Slot = WorkerThread::current().map_or(std::ptr::null(), |wt| wt.rec_slot());
    // The job that ran the recorded work (an `install` from outside the
    // pool, the closure form's `op`) closes its frame just after it let
    // the caller go: give open frames a moment to close (other users' long
    // jobs do not hold the stop up for more than that).
    let grace = Instant::now();
    while slots
        .iter()
        .any(|s| !std::ptr::eq(*s, own) && s.open.load(Ordering::SeqCst) != 0)
        && grace.elapsed() < std::time::Duration::from_millis(50)
    {
        std::thread::yield_now();
    }
    rec.recording.store(false, Ordering::SeqCst);
    let stop = now_ns();
    ACTIVE.fetch_sub(1, Ordering::SeqCst);
    let start = session.start;
    let mut tasks = Vec::new();
    let mut workers = Vec::new();
    for s in slots {
        // A write is a few stores; the writer may have been preempted,
        // though: spin briefly, then give the CPU up.
        let mut spins = 0u32;
        while s.writing.load(Ordering::SeqCst) {
            if spins < 64 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        // SAFETY: recording is off and the worker is not writing: by the
        // protocol it will not touch `data` until the next start, which
        // waits for the session lock we hold.
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
    drop(guard);
    tasks.sort_by_key(|t| (t.worker, t.start_ns));
    Ok(Recording {
        threads: slots.len(),
        policy: meta.0,
        nodes: meta.1,
        wall_ns: stop - start,
        tasks,
        workers,
        counters: session.counters,
        unavailable: session.unavailable,
    })
}

/// Runs `op` while recording `slots` (a pool's workers): [`start`], `op`,
/// [`stop`]. A panic of `op` propagates once the recording is stopped.
///
/// # Errors
/// [`RecordError::AlreadyRecording`] (and `op` does not run) when the pool
/// records already.
pub(crate) fn record<R>(
    rec: &PoolRecorder,
    slots: &[&Slot],
    meta: (Policy, Vec<NodeId>),
    options: &RecordOptions,
    op: impl FnOnce() -> R,
) -> Result<(R, Recording), RecordError> {
    start(rec, slots, options, Owner::Closure)?;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(op));
    // Nothing else stops a closure's recording (an explicit stop gets
    // `RecordInProgress`), so this stop finds its own.
    let recording = stop(rec, slots, meta, Owner::Closure)
        .unwrap_or_else(|e| unreachable!("a record call's own recording: {e}"));
    match result {
        Ok(r) => Ok((r, recording)),
        Err(p) => std::panic::resume_unwind(p),
    }
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
            self.rec_write_in(Some(f.epoch), |d| d.times.overhead_ns += cost);
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
        self.rec_write_in(Some(f.epoch), |d| {
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
        self.rec_write_in(None, f)
    }

    /// Writes into this worker's slot if the pool records, and, with
    /// `Some(epoch)`, only if it still records *that* recording: a frame
    /// opened in one recording and closed after a stop and a new start
    /// (the stop's grace ran out) must not land in the new one. The start
    /// bumps the epoch before it sets `recording` (both SeqCst), so a
    /// writer that sees the new recording on also sees its epoch.
    fn rec_write_in(&self, epoch: Option<u64>, f: impl FnOnce(&mut SlotData)) {
        let slot = self.rec_slot();
        slot.writing.store(true, Ordering::SeqCst);
        let rec = self.registry().recorder();
        if rec.recording.load(Ordering::SeqCst)
            && epoch.is_none_or(|e| rec.epoch.load(Ordering::SeqCst) == e)
        {
            // SAFETY: `writing` is set and recording is on: by the protocol
            // of the module docs the stopper is not reading `data` (it
            // waits for `writing` to clear after turning recording off).
            // The only other thread that writes the slot is a start, which
            // resets it before it sets `recording` (SeqCst), so the reset
            // happened before this worker saw the recording on.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ThreadPoolBuilder;

    fn pool(n: usize) -> crate::ThreadPool {
        ThreadPoolBuilder::new()
            .num_threads(n)
            .pin(false)
            .build()
            .unwrap()
    }

    fn labelled(rec: &Recording, name: &str) -> usize {
        rec.tasks
            .iter()
            .filter(|t| t.label.as_str() == name)
            .count()
    }

    fn leaves(n: usize) {
        crate::scope(|s| {
            for _ in 0..n {
                s.spawn(|_| {
                    label("leaf", || std::hint::black_box((0..1000u64).sum::<u64>()));
                });
            }
        });
    }

    #[test]
    fn start_and_stop_record_what_ran_between() {
        let pool = pool(2);
        let options = RecordOptions::timestamps_only();
        pool.start_recording(&options).unwrap();
        pool.install(|| leaves(20));
        let rec = pool.stop_recording().unwrap();
        assert_eq!(labelled(&rec, "leaf"), 20);
        assert_eq!(rec.threads, 2);
        assert_eq!(rec.workers.len(), 2);
        assert!(rec.wall_ns > 0);
        assert!(rec.counters.is_empty());
        // Work after the stop is not recorded; a new recording starts empty.
        pool.install(|| leaves(5));
        pool.start_recording(&options).unwrap();
        pool.install(|| leaves(3));
        let again = pool.stop_recording().unwrap();
        assert_eq!(labelled(&again, "leaf"), 3);
    }

    #[test]
    fn start_twice_and_stop_without_start_are_errors() {
        let pool = pool(2);
        assert_eq!(
            pool.stop_recording().unwrap_err(),
            RecordError::NotRecording
        );
        pool.start_recording(&RecordOptions::default()).unwrap();
        assert_eq!(
            pool.start_recording(&RecordOptions::timestamps_only()),
            Err(RecordError::AlreadyRecording)
        );
        // The closure form on a recording pool: an error, `op` not run.
        let ran = std::sync::atomic::AtomicBool::new(false);
        let r = pool.try_record_with(&RecordOptions::default(), || {
            ran.store(true, Ordering::SeqCst)
        });
        assert_eq!(r.unwrap_err(), RecordError::AlreadyRecording);
        assert!(!ran.load(Ordering::SeqCst));
        pool.install(|| leaves(2));
        let rec = pool.stop_recording().unwrap();
        assert_eq!(labelled(&rec, "leaf"), 2);
        assert_eq!(
            pool.stop_recording().unwrap_err(),
            RecordError::NotRecording
        );
        for e in [
            RecordError::AlreadyRecording,
            RecordError::NotRecording,
            RecordError::RecordInProgress,
        ] {
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn a_record_call_owns_its_recording() {
        let pool = pool(2);
        let options = RecordOptions::timestamps_only();
        let ((start, stop), rec) = pool.record_with(&options, || {
            leaves(4);
            (
                pool.start_recording(&options),
                pool.stop_recording().map(drop),
            )
        });
        assert_eq!(start, Err(RecordError::AlreadyRecording));
        assert_eq!(stop, Err(RecordError::RecordInProgress));
        assert_eq!(labelled(&rec, "leaf"), 4);
        // From another thread while the closure runs: the same.
        let (tx, rx) = std::sync::mpsc::channel();
        let ((), _) = pool.record_with(&options, || {
            std::thread::scope(|s| {
                s.spawn(|| {
                    tx.send((
                        pool.start_recording(&options),
                        pool.stop_recording().map(drop),
                    ))
                    .unwrap()
                });
            });
        });
        let (start, stop) = rx.recv().unwrap();
        assert_eq!(start, Err(RecordError::AlreadyRecording));
        assert_eq!(stop, Err(RecordError::RecordInProgress));
        // And the pool records again afterwards, both ways.
        pool.start_recording(&options).unwrap();
        pool.stop_recording().unwrap();
        let (_, rec) = pool.record_with(&options, || leaves(1));
        assert_eq!(labelled(&rec, "leaf"), 1);
    }

    #[test]
    #[should_panic(expected = "already recording")]
    fn the_closure_form_panics_on_a_recording_pool() {
        let pool = pool(1);
        pool.start_recording(&RecordOptions::timestamps_only())
            .unwrap();
        pool.record(|| ());
    }

    #[test]
    fn a_panic_in_the_closure_stops_the_recording() {
        let pool = pool(2);
        let options = RecordOptions::timestamps_only();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.record_with(&options, || panic!("expected: a test panic"))
        }));
        assert!(r.is_err());
        assert_eq!(
            pool.stop_recording().unwrap_err(),
            RecordError::NotRecording
        );
        pool.start_recording(&options).unwrap();
        pool.stop_recording().unwrap();
    }

    #[test]
    fn start_and_stop_on_different_threads_and_inside_the_pool() {
        let pool = pool(2);
        let options = RecordOptions::timestamps_only();
        std::thread::scope(|s| {
            s.spawn(|| pool.start_recording(&options).unwrap());
        });
        pool.install(|| leaves(6));
        let rec =
            std::thread::scope(|s| s.spawn(|| pool.stop_recording().unwrap()).join()).unwrap();
        assert_eq!(labelled(&rec, "leaf"), 6);
        // Started and stopped by a job of the pool itself.
        let rec = pool.install(|| {
            pool.start_recording(&options).unwrap();
            leaves(3);
            pool.stop_recording().unwrap()
        });
        assert_eq!(labelled(&rec, "leaf"), 3);
        // Stopped by a job that began after the start: its own open frame
        // encloses the stop and does not hold it up for the grace period
        // (50 ms), at least once in five tries on a loaded machine.
        let fastest = (0..5)
            .map(|_| {
                pool.start_recording(&options).unwrap();
                let (rec, took) = pool.install(|| {
                    leaves(3);
                    let t = Instant::now();
                    (pool.stop_recording().unwrap(), t.elapsed())
                });
                assert_eq!(labelled(&rec, "leaf"), 3);
                took
            })
            .min()
            .unwrap();
        assert!(
            fastest < std::time::Duration::from_millis(40),
            "{fastest:?}"
        );
    }

    #[test]
    fn one_of_concurrent_starts_wins() {
        let pool = pool(2);
        let options = RecordOptions::timestamps_only();
        for _ in 0..20 {
            let wins: usize = std::thread::scope(|s| {
                let hs: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| pool.start_recording(&options).is_ok()))
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap() as usize).sum()
            });
            assert_eq!(wins, 1);
            pool.stop_recording().unwrap();
        }
    }

    #[test]
    fn a_pool_dropped_while_recording_discards_it() {
        let pool = pool(2);
        pool.start_recording(&RecordOptions::timestamps_only())
            .unwrap();
        pool.install(|| leaves(2));
        drop(pool);
        // Another pool records as usual.
        let other = self::pool(1);
        let (_, rec) = other.record_with(&RecordOptions::timestamps_only(), || leaves(2));
        assert_eq!(labelled(&rec, "leaf"), 2);
    }
}
