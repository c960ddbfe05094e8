//! A worker's frames: each job and labelled region a worker runs while its
//! pool records, with the counters read at both ends of the counted ones.

use std::cell::Cell;

use super::*;

/// One open frame of a worker.
pub(super) struct Frame {
    label: Label,
    /// Emitted as a task (a wait frame is not: its time belongs to nobody's
    /// own time, and the jobs run during it are frames of their own).
    task: bool,
    /// The recording it belongs to.
    epoch: u64,
    pub(super) data_node: Option<NodeId>,
    pub(super) data_bytes: u64,
    /// The steal and push that brought its job here (job frames only).
    stolen: Option<u64>,
    pub(super) pushed: Option<u64>,
    /// Before the counters were read (the recording's cost starts here).
    enter: u64,
    start: u64,
    child_ns: u64,
    /// Whether the counters were read at its start: a labelled region the
    /// sampling picked, or any frame inside a counted one (see "Counters,
    /// sampled" in the module docs).
    counted: bool,
    counts: [u64; MAX_COUNTERS],
    child_counts: [u64; MAX_COUNTERS],
    /// A labelled region opened without a scope (the C API's
    /// `terroir_label_push`): its id on this worker; 0 for a scoped frame
    /// (a job, a wait, a [`label`] closure).
    detached: u64,
}

/// A labelled region opened by [`WorkerThread::rec_open_label`]: where
/// its frame is on the worker's stack, and its id there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenLabel {
    depth: usize,
    id: u64,
}

/// What [`WorkerThread::rec_close_label`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CloseLabel {
    /// The region's frame was the newest: closed and recorded.
    Closed,
    /// The region's frame is gone: closed with the job it was left open
    /// in, or dropped by a new recording.
    Gone,
    /// Frames opened after the region's are still open (the close comes
    /// from a job run on top of the region, e.g. during a wait inside
    /// it): nothing was closed.
    Nested,
}

/// A worker's own recording state.
pub(crate) struct WorkerRec {
    pub(super) frames: RefCell<Vec<Frame>>,
    epoch: Cell<u64>,
    group: RefCell<Option<CounterGroup>>,
    /// The counters its group reads for the current recording.
    ncounters: Cell<usize>,
    /// The steal (recording epoch, id) of the job this worker took last,
    /// for the job's frame.
    pub(super) arrived: Cell<Option<(u64, u64)>>,
    /// The current recording's sampling.
    sampling: Cell<CounterSampling>,
    /// Labelled tasks the sampling has decided on (`Every`).
    seen: Cell<u64>,
    /// Reading time the tasks' own time has paid for so far, ns (`Auto`).
    budget: Cell<i64>,
    /// What reading a counted task's counters costs, ns (`Auto`; a moving
    /// average of the measured cost).
    read_cost: Cell<i64>,
    /// The id of the last region opened by `rec_open_label`.
    last_detached: Cell<u64>,
}

/// First guess of what a counted task's reads cost (two `read(2)` calls in
/// a VM), until measured.
const FIRST_READ_COST_NS: i64 = 2_000;

impl WorkerRec {
    pub(crate) fn new() -> WorkerRec {
        WorkerRec {
            frames: RefCell::new(Vec::new()),
            epoch: Cell::new(0),
            group: RefCell::new(None),
            ncounters: Cell::new(0),
            arrived: Cell::new(None),
            sampling: Cell::new(CounterSampling::EveryTask),
            seen: Cell::new(0),
            budget: Cell::new(FIRST_READ_COST_NS),
            read_cost: Cell::new(FIRST_READ_COST_NS),
            last_detached: Cell::new(0),
        }
    }

    /// Whether a new frame labelled `label` reads the counters, under the
    /// open `frames`: always inside a counted frame (so that its parent's
    /// own counts can subtract it exactly); never inside a labelled task
    /// left out of the sample (the sample takes whole tasks, nested regions
    /// with them); otherwise, for a labelled task, as the sampling picks
    /// (a wait frame starts afresh: the jobs run during it are tasks of
    /// their own).
    fn wants_counts(&self, frames: &[Frame], label: Label) -> bool {
        if frames.last().is_some_and(|f| f.counted) {
            return true;
        }
        if label == Label::Unlabelled {
            return false;
        }
        for f in frames.iter().rev() {
            if !f.task {
                break;
            }
            if matches!(f.label, Label::Named(_)) {
                return false;
            }
        }
        self.pick()
    }

    /// Whether a labelled task outside every counted frame is counted, per
    /// the sampling.
    fn pick(&self) -> bool {
        match self.sampling.get() {
            CounterSampling::EveryTask => true,
            CounterSampling::Every(k) => {
                let n = self.seen.get();
                self.seen.set(n.wrapping_add(1));
                n % u64::from(k.max(1)) == 0
            }
            CounterSampling::Auto(_) => self.budget.get() >= self.read_cost.get(),
        }
    }

    /// `Auto` book-keeping when a labelled task closes: its own time pays
    /// into the budget, and a counted task's reads (`cost`, measured) are
    /// taken out of it. The budget never holds more than two reads, so a
    /// long task does not make a burst of counted short ones.
    fn account(&self, own_ns: u64, counted: bool, cost: u64) {
        let CounterSampling::Auto(percent) = self.sampling.get() else {
            return;
        };
        let mut budget = self.budget.get();
        budget = budget.saturating_add((own_ns as i64).saturating_mul(i64::from(percent)) / 100);
        if counted {
            let cost = cost.min(i64::MAX as u64) as i64;
            // Weight 1/4: a slow read (preemption) does not stop the
            // sampling for long.
            let avg = self.read_cost.get();
            self.read_cost.set(avg + (cost - avg) / 4);
            budget = budget.saturating_sub(cost);
        }
        self.budget.set(budget.min(2 * self.read_cost.get()));
    }
}

impl WorkerThread {
    /// Brings this worker up to the current recording (counters opened,
    /// sampling reset, thread CPU clock noted).
    pub(super) fn rec_sync(&self, rec: &PoolRecorder) {
        let epoch = rec.epoch.load(Ordering::Acquire);
        let me = self.rec_state();
        if me.epoch.get() == epoch {
            return;
        }
        me.epoch.set(epoch);
        let stale = std::mem::take(&mut *me.frames.borrow_mut()).len();
        self.rec_slot().open.fetch_sub(stale, Ordering::SeqCst);
        me.arrived.set(None);
        me.seen.set(0);
        me.budget.set(me.read_cost.get());
        self.rec_slot().note_cpu_start(epoch);
        let (wanted, sampling) = {
            let s = rec.counters.lock().unwrap_or_else(|e| e.into_inner());
            (s.0.clone(), s.1)
        };
        me.sampling.set(sampling);
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
        let me = self.rec_state();
        let (wanted, data) = {
            let frames = me.frames.borrow();
            let parent = frames.last();
            // A labelled region works on its job's declared data (a job run
            // during a wait has its own).
            let data = match label {
                Label::Named(_) => parent.map_or((None, 0), |f| (f.data_node, f.data_bytes)),
                Label::Unlabelled => (None, 0),
            };
            (me.wants_counts(&frames, label), data)
        };
        let mut counts = [0; MAX_COUNTERS];
        let counted = wanted && self.read_counts(&mut counts);
        let stolen = if task && label == Label::Unlabelled {
            me.arrived
                .take()
                .filter(|&(e, _)| e == me.epoch.get())
                .map(|(_, id)| id)
        } else {
            None
        };
        let epoch = me.epoch.get();
        me.frames.borrow_mut().push(Frame {
            label,
            task,
            epoch,
            data_node: data.0,
            data_bytes: data.1,
            stolen,
            pushed: None,
            enter,
            start: if counted { now_ns() } else { enter },
            child_ns: 0,
            counted,
            counts,
            child_counts: [0; MAX_COUNTERS],
            detached: 0,
        });
        self.rec_slot().open.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Closes the frame opened by the matching `rec_push` (which returned
    /// true), the newest scoped frame, and emits it if it is a task. Frames
    /// of labelled regions opened inside it without a scope
    /// ([`rec_open_label`](Self::rec_open_label)) and left open are closed
    /// first, ending now: a C task that returns with a label pushed does
    /// not make the next frames close the wrong ones.
    #[cold]
    #[inline(never)]
    pub(crate) fn rec_pop(&self) {
        while self
            .rec_state()
            .frames
            .borrow()
            .last()
            .is_some_and(|f| f.detached != 0)
        {
            self.rec_pop_newest();
        }
        self.rec_pop_newest();
    }

    /// Opens a labelled region without a scope (the C API's
    /// `terroir_label_push`) if the pool records: a task frame labelled
    /// `name`, closed by [`rec_close_label`](Self::rec_close_label), or by
    /// the scoped frame it was opened in if that closes first.
    pub(crate) fn rec_open_label(&self, name: &'static str) -> Option<OpenLabel> {
        if !self.rec_push(Label::Named(name), true) {
            return None;
        }
        let me = self.rec_state();
        let mut frames = me.frames.borrow_mut();
        let depth = frames.len() - 1;
        let id = me.last_detached.get().wrapping_add(1).max(1);
        me.last_detached.set(id);
        frames[depth].detached = id;
        Some(OpenLabel { depth, id })
    }

    /// Closes the region `open` when its frame is the newest (see
    /// [`CloseLabel`]).
    pub(crate) fn rec_close_label(&self, open: OpenLabel) -> CloseLabel {
        let frames = self.rec_state().frames.borrow();
        match frames.get(open.depth) {
            Some(f) if f.detached == open.id => {
                if frames.len() == open.depth + 1 {
                    drop(frames);
                    self.rec_pop_newest();
                    CloseLabel::Closed
                } else {
                    CloseLabel::Nested
                }
            }
            _ => CloseLabel::Gone,
        }
    }

    /// Closes the newest frame and emits it if it is a task.
    fn rec_pop_newest(&self) {
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
        // not the task's or its parent's work. Without counters, the clock
        // read at the end is the whole of it.
        let full = if f.counted {
            now_ns().saturating_sub(f.enter)
        } else {
            end.saturating_sub(f.enter)
        };
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
        if matches!(f.label, Label::Named(_)) {
            me.account(own, f.counted, cost);
        }
        let rec = self.registry().recorder();
        let start_ns = rec.start_ns.load(Ordering::Relaxed);
        let record = TaskRecord {
            label: f.label,
            worker: self.index(),
            node: self.node_index(),
            data_node: f.data_node,
            data_bytes: f.data_bytes,
            start_ns: f.start.saturating_sub(start_ns),
            end_ns: end.saturating_sub(start_ns),
            own_ns: own,
            counters: (0..n)
                .map(|i| inclusive[i].saturating_sub(f.child_counts[i]))
                .collect(),
            stolen: f.stolen,
            pushed: f.pushed,
        };
        self.rec_write_in(Some(f.epoch), |d| {
            d.times.work_ns += own;
            d.times.overhead_ns += cost;
            d.tasks.push(record);
        });
    }

    /// Notes a wait for work from `start` to `end` (absolute, from
    /// [`now_ns`]; `start` not before the recording's start), of which
    /// `overhead` was spent looking for work.
    pub(crate) fn rec_wait(&self, start: u64, end: u64, overhead: u64) {
        let rec = self.registry().recorder();
        self.rec_sync(rec);
        let origin = rec.start_ns.load(Ordering::Relaxed);
        let total = end.saturating_sub(start);
        let overhead = overhead.min(total);
        let wait = WaitRecord {
            worker: self.index(),
            start_ns: start.saturating_sub(origin),
            end_ns: end.saturating_sub(origin),
            overhead_ns: overhead,
        };
        self.rec_write(|d| {
            d.times.overhead_ns += overhead;
            d.times.idle_ns += total - overhead;
            d.waits.push(wait);
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

    pub(super) fn rec_write(&self, f: impl FnOnce(&mut SlotData)) {
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
