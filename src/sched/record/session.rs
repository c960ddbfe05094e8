//! Starting and stopping a pool's recording (see "Starting and stopping"
//! in the module docs of `record`).

use super::cpu::CpuStart;
use super::*;

/// What a [`Recording`] says of its pool: policy, nodes (by index), each
/// worker's node index and CPU (when bound to that CPU alone).
pub(crate) type PoolMeta = (Policy, Vec<NodeId>, Vec<usize>, Vec<Option<u32>>);

/// Who owns a pool's recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The closure form (`record`), which stops it when its closure returns.
    Closure,
    /// `start_recording`, stopped by `stop_recording`.
    Explicit,
    /// `TERROIR_REPORT`'s recording of the global pool, stopped at exit.
    Env,
}

/// The recording a pool runs now (see "Starting and stopping" in the
/// module docs).
pub(super) struct Session {
    pub(super) owner: Owner,
    pub(super) start: u64,
    pub(super) counters: Vec<Counter>,
    pub(super) unavailable: Vec<Unavailable>,
    pub(super) sampling: CounterSampling,
    pub(super) read: String,
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
    /// The worker's thread CPU clock, noted at its first frame or wait of
    /// a recording.
    cpu: CpuStart,
    pub(super) data: UnsafeCell<SlotData>,
}

#[derive(Default)]
pub(super) struct SlotData {
    pub(super) tasks: Vec<TaskRecord>,
    pub(super) times: WorkerTimes,
    pub(super) waits: Vec<WaitRecord>,
    pub(super) steals: Vec<StealRecord>,
    pub(super) pushes: Vec<PushRecord>,
    pub(super) queued: Vec<QueueSample>,
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
            cpu: CpuStart::new(),
            data: UnsafeCell::new(SlotData::default()),
        }
    }

    /// On the worker's thread: notes its CPU clock for recording `epoch`.
    pub(super) fn note_cpu_start(&self, epoch: u64) {
        self.cpu.note(epoch);
    }
}

/// A pool's recording state.
pub(crate) struct PoolRecorder {
    pub(super) recording: AtomicBool,
    /// Bumped at each start, so workers notice a new recording.
    pub(super) epoch: AtomicU64,
    pub(super) start_ns: AtomicU64,
    /// The counters the workers open, and which tasks they read them on.
    pub(super) counters: std::sync::Mutex<(Vec<Counter>, CounterSampling)>,
    /// Ids of steals and pushes, from 1 in each recording.
    pub(super) next_id: AtomicU64,
    /// Pushes from threads outside the pool, and their queue samples:
    /// written under the lock while `recording` is set (checked under the
    /// lock), drained by the stop under the lock once it is cleared.
    outside: std::sync::Mutex<SlotData>,
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
            counters: std::sync::Mutex::new((Vec::new(), CounterSampling::EveryTask)),
            next_id: AtomicU64::new(1),
            outside: std::sync::Mutex::new(SlotData::default()),
            session: std::sync::Mutex::new(None),
        }
    }

    /// Writes into the buffer of threads outside the pool, if the pool
    /// records.
    pub(super) fn write_outside(&self, f: impl FnOnce(&mut SlotData)) {
        let mut outside = self.outside.lock().unwrap_or_else(|e| e.into_inner());
        if self.recording.load(Ordering::SeqCst) {
            f(&mut outside);
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
    let (counters, unavailable, read) = probe(&wanted);
    *rec.counters.lock().unwrap_or_else(|e| e.into_inner()) = (counters.clone(), options.sampling);
    for s in slots {
        // SAFETY: not recording: the session is empty and we hold its lock,
        // so the last stop (which emptied it under that lock) has waited
        // for every writer, and no worker writes until it sees `recording`
        // set, which happens below, after this reset (SeqCst).
        unsafe { *s.data.get() = SlotData::default() };
    }
    *rec.outside.lock().unwrap_or_else(|e| e.into_inner()) = SlotData::default();
    rec.next_id.store(1, Ordering::SeqCst);
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
        sampling: options.sampling,
        read,
    });
    Ok(())
}

/// Which of `wanted` (sorted, deduplicated) open on this machine, the
/// others with the reason, and how a read is made: a probe group is opened
/// once per set of counters and process, since what opens does not change
/// while a process runs (same kernel, same permissions) and opening costs
/// about a millisecond in a VM, at every start.
fn probe(wanted: &[Counter]) -> (Vec<Counter>, Vec<Unavailable>, String) {
    type Probe = (Vec<Counter>, (Vec<Counter>, Vec<Unavailable>, String));
    static PROBES: std::sync::Mutex<Vec<Probe>> = std::sync::Mutex::new(Vec::new());
    let mut probes = PROBES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, found)) = probes.iter().find(|(w, _)| w == wanted) {
        return found.clone();
    }
    let found = {
        let (group, unavailable) = CounterGroup::open(wanted);
        (group.counters().to_vec(), unavailable, group.read_method())
    };
    probes.push((wanted.to_vec(), found.clone()));
    found
}

/// Stops the recording of `slots` that `owner` started, once its writers
/// are done, and collects it. `meta` is the pool's policy, nodes, and
/// its workers' nodes and CPUs.
///
/// # Errors
/// [`RecordError::NotRecording`] when the pool does not record;
/// [`RecordError::RecordInProgress`] when an explicit stop finds a
/// closure's recording.
pub(crate) fn stop(
    rec: &PoolRecorder,
    slots: &[&Slot],
    meta: PoolMeta,
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
    let epoch = rec.epoch.load(Ordering::SeqCst);
    let mut all = SlotData::default();
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
            let from = since.max(start);
            d.times.idle_ns += stop.saturating_sub(from);
            d.waits.push(WaitRecord {
                worker: workers.len(),
                start_ns: from - start,
                end_ns: stop - start,
                overhead_ns: 0,
            });
        }
        d.times.cpu_ns = s.cpu.since_start(epoch);
        all.tasks.append(&mut d.tasks);
        all.waits.append(&mut d.waits);
        all.steals.append(&mut d.steals);
        all.pushes.append(&mut d.pushes);
        all.queued.append(&mut d.queued);
        workers.push(d.times);
    }
    {
        // Outsiders write only while `recording` is set, checked under
        // this lock: after it, none will.
        let mut outside = rec.outside.lock().unwrap_or_else(|e| e.into_inner());
        all.pushes.append(&mut outside.pushes);
        all.queued.append(&mut outside.queued);
    }
    drop(guard);
    let SlotData {
        mut tasks,
        mut waits,
        mut steals,
        mut pushes,
        mut queued,
        ..
    } = all;
    tasks.sort_by_key(|t| (t.worker, t.start_ns));
    waits.sort_by_key(|w| (w.worker, w.start_ns));
    steals.sort_by_key(|e| (e.time_ns, e.id));
    pushes.sort_by_key(|e| (e.time_ns, e.id));
    queued.sort_by_key(|e| (e.time_ns, e.node));
    let labelled = tasks
        .iter()
        .filter(|t| matches!(t.label, Label::Named(_)))
        .count() as u64;
    let counted = tasks
        .iter()
        .filter(|t| matches!(t.label, Label::Named(_)) && !t.counters.is_empty())
        .count() as u64;
    let (policy, nodes, worker_nodes, worker_cpus) = meta;
    Ok(Recording {
        threads: slots.len(),
        policy,
        nodes,
        worker_nodes,
        worker_cpus,
        wall_ns: stop - start,
        tasks,
        workers,
        waits,
        steals,
        pushes,
        queued,
        counter_method: CounterMethod {
            sampling: session.sampling,
            read: if session.counters.is_empty() {
                String::new()
            } else {
                session.read
            },
            labelled,
            counted,
        },
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
    meta: PoolMeta,
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
