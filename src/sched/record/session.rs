//! Starting and stopping a pool's recording (see "Starting and stopping"
//! in the module docs of `record`).

use super::*;

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
pub(super) struct Session {
    pub(super) owner: Owner,
    pub(super) start: u64,
    pub(super) counters: Vec<Counter>,
    pub(super) unavailable: Vec<Unavailable>,
}

/// Per-worker recording slot, shared with the stopper (see the module docs
/// for the protocol).
pub(crate) struct Slot {
    pub(super) writing: AtomicBool,
    /// When the worker entered its current wait for work: `NOT_WAITING`,
    /// or 0 for "since before the recording started".
    pub(super) wait_since: AtomicU64,
    /// Frames the worker has open (a job, a labelled region): the stopper
    /// lets them close before it stops.
    pub(super) open: AtomicUsize,
    pub(super) data: UnsafeCell<SlotData>,
}

#[derive(Default)]
pub(super) struct SlotData {
    pub(super) tasks: Vec<TaskRecord>,
    pub(super) times: WorkerTimes,
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
    pub(super) recording: AtomicBool,
    /// Bumped at each start, so workers notice a new recording.
    pub(super) epoch: AtomicU64,
    pub(super) start_ns: AtomicU64,
    pub(super) counters: std::sync::Mutex<Vec<Counter>>,
    /// The recording in progress, if any: starts and stops run under this
    /// lock (see the module docs).
    pub(super) session: std::sync::Mutex<Option<Session>>,
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
    let (counters, unavailable) = {
        let (probe, unavailable) = CounterGroup::open(&wanted);
        (probe.counters().to_vec(), unavailable)
    };
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
