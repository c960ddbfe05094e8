//! A wait's batch: the queued tasks of a group, run on a worker of the
//! group's pool, and everything the group's tasks spawn into the group
//! while the batch runs.
//!
//! Tasks with no place run by a tree of `join`s (a join branch costs a
//! few nanoseconds where a spawned job costs an allocation and a deque
//! round trip, and an idle worker still takes half of what is left);
//! placed tasks, claims of tasks started from outside the pool, and tasks
//! spawned by the batch's tasks are spawned as jobs counted by the batch.
//! The batch returns when its count is down to its own: a batch whose
//! tasks spawn nothing costs no atomic read-modify-write for the count.
//! Each task runs in a frame naming the group and the batch (`frame.rs`),
//! which is how a task's spawn finds the batch and how a wait from it is
//! refused; a part of the join tree that another worker stole is listed in
//! that worker's entered groups while it runs (so a wait from work the
//! thief takes meanwhile is refused too). The first panic of a task is
//! kept for the group's wait.

use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;

use super::core::{claim, group_view, CorePtr, GroupCore, Panic};
use super::frame::{entered_head, with_entered, with_frame, Entered, Frame, FramePtr};
use super::task::Task;
use super::TaskGroup;
use crate::sched::join_flagged;
use crate::sched::latch::{Latch, WorkerLatch};
use crate::sched::place::Place;
use crate::sched::registry::Registry;
use crate::sched::route::PlacedTask;
use crate::sched::unwind::halt_unwinding;
use crate::sched::worker::WorkerThread;

/// A queued task of a group: not started (the next wait starts it, at its
/// place; none: plain), or started with a `'static` job from outside the
/// pool, which the wait claims if that job has not (`started`); once
/// handed to a batch, its task is empty.
pub(crate) struct Queued {
    task: Task,
    place: Option<Box<Place>>,
    started: Option<Arc<Started>>,
}

impl Queued {
    /// Appends a task not started yet, written in place (see
    /// [`Task::write`]).
    #[inline(always)]
    pub(crate) fn push<F>(queue: &mut Vec<Queued>, f: F, place: Option<Box<Place>>)
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        queue.reserve(1);
        let len = queue.len();
        // SAFETY: capacity for one more was reserved; every field of the
        // new entry is written before the length covers it.
        unsafe {
            let slot = queue.as_mut_ptr().add(len);
            Task::write(ptr::addr_of_mut!((*slot).task), f);
            ptr::addr_of_mut!((*slot).place).write(place);
            ptr::addr_of_mut!((*slot).started).write(None);
            queue.set_len(len + 1);
        }
    }

    /// Appends a task started from outside the pool, for the wait to claim.
    pub(crate) fn push_started(queue: &mut Vec<Queued>, started: Arc<Started>) {
        queue.push(Queued {
            task: Task::empty(),
            place: None,
            started: Some(started),
        });
    }

    /// Whether the entry holds a plain task not handed out yet.
    fn is_plain(&self) -> bool {
        self.place.is_none() && !self.task.is_empty()
    }
}

/// A task started at once (spawned from outside the pool), which a wait's
/// batch may also claim: whichever claims it first runs it.
pub(crate) struct Started {
    task: UnsafeCell<Option<Task>>,
    taken: AtomicBool,
    pub(crate) place: Place,
}

// SAFETY: the task is only touched by the one thread that wins the claim
// (`take`); the rest is `Sync`.
unsafe impl Sync for Started {}

impl Started {
    pub(crate) fn new(task: Task, place: Place) -> Started {
        Started {
            task: UnsafeCell::new(Some(task)),
            taken: AtomicBool::new(false),
            place,
        }
    }

    /// The task, for the first caller only.
    pub(crate) fn take(&self) -> Option<Task> {
        if claim(&self.taken) {
            // SAFETY: the claim is won once, so this thread alone touches
            // the task.
            unsafe { (*self.task.get()).take() }
        } else {
            None
        }
    }

    fn is_taken(&self) -> bool {
        self.taken.load(Ordering::Relaxed)
    }
}

/// A running batch, on the stack of the worker that runs it.
pub(crate) struct Batch {
    core: CorePtr,
    registry: *const Registry,
    /// Jobs of the batch not finished, plus one for the batch itself.
    count: AtomicUsize,
    /// Set by the job that brings the count to zero after the batch let
    /// go of its own.
    latch: WorkerLatch,
    /// The first panic of a task of the batch.
    panic: AtomicPtr<Panic>,
    /// The waiter's frame: the parent of the frames of the batch's tasks.
    parent: *const Frame,
    /// The batch's node in its runner's entered groups, over what the
    /// runner holds lower on its stack (see `walk.rs`).
    entered: *const Entered,
}

// SAFETY: the registry, the parent frame and the `entered` node are only
// read, and outlive the batch (the batch runs on a worker of the registry;
// the waiter whose frame is the parent waits for the batch; the node is a
// local of the call on the runner's stack that runs the batch, linked
// before the batch starts and never written after); the rest is atomic or
// `Sync`.
unsafe impl Sync for Batch {}

/// A `Send` pointer to a batch, for its jobs (the batch waits for them).
#[derive(Clone, Copy)]
struct BatchPtr(*const Batch);

// SAFETY: the batch outlives its jobs (it waits for its count to drop to
// zero) and is only accessed through `&` (it is `Sync`).
unsafe impl Send for BatchPtr {}

impl Batch {
    /// The batch's node in its runner's entered groups.
    pub(crate) fn entered(&self) -> *const Entered {
        self.entered
    }

    /// The pool the batch runs in.
    pub(crate) fn registry(&self) -> &Registry {
        // SAFETY: the batch runs on a worker of this registry, which holds
        // it alive while the batch runs.
        unsafe { &*self.registry }
    }

    fn core(&self) -> &GroupCore {
        // SAFETY: a group is busy, and alive, while a batch of it runs.
        unsafe { self.core.get() }
    }

    /// Spawns `task` at `place` as a job counted by the batch (from the
    /// batch itself, or from one of its tasks on a worker of its pool).
    pub(crate) fn spawn(&self, place: &Place, task: Task) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let batch = BatchPtr(self);
        let body = move || {
            let batch = batch;
            // SAFETY: the batch waits for this job (its count).
            let batch = unsafe { &*batch.0 };
            let view = group_view(batch.core());
            batch.run_caught(task, &view);
            batch.job_done();
        };
        // SAFETY: the job borrows only the batch, which waits for it.
        unsafe { self.registry().spawn_placed(place, body) };
    }

    /// Spawns a claim of a task started from outside the pool.
    fn spawn_claim(&self, started: Arc<Started>) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let batch = BatchPtr(self);
        let place = started.place.clone();
        let body = move |placed: PlacedTask| {
            let batch = batch;
            // SAFETY: as in `spawn`.
            let batch = unsafe { &*batch.0 };
            if let Some(task) = started.take() {
                let _run = placed.begins();
                batch.core().run_started(task, Some(batch));
            }
            batch.job_done();
        };
        // SAFETY: as in `spawn`. The claim counts as a placed task only if
        // it runs the task (the job started with it may have taken it).
        unsafe { self.registry().spawn_placed_claim(&place, body) };
    }

    fn job_done(&self) {
        // AcqRel: the job's work happens before the batch's end.
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: the batch let go of its own count and waits for its
            // latch: alive until this set.
            unsafe { WorkerLatch::set(&self.latch) };
        }
    }

    fn panicked(&self, p: Panic) {
        let boxed = Box::into_raw(Box::new(p));
        if self
            .panic
            .compare_exchange(ptr::null_mut(), boxed, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SAFETY: not published; ours to drop (the first panic wins).
            drop(unsafe { Box::from_raw(boxed) });
        }
    }

    /// Runs `task` in the batch's frame, keeping its panic.
    fn run_caught(&self, task: Task, view: &TaskGroup) {
        if let Err(p) = halt_unwinding(|| self.run_in_frame(task, view)) {
            self.panicked(p);
        }
    }

    /// Runs `task` in the batch's frame on the calling worker.
    #[inline]
    pub(crate) fn run_in_frame(&self, task: Task, view: &TaskGroup) {
        let wt = WorkerThread::current().expect("a batch's task runs on a worker");
        let frame = Frame::new(wt, self.core.0, self, self.parent);
        with_frame(wt, &frame, || {
            with_entered(wt, self.core.0, &frame, || task.run(view))
        });
    }

    /// Runs the plain tasks of `run.tasks[lo..hi]` (`range` is `lo << 32 |
    /// hi`; the other entries were handed out already), by halving with
    /// `join`; panics propagate (join runs both halves first). Each closure
    /// state is two words (a reference and a range), passed to `join` in
    /// registers rather than copied through memory.
    fn join_plain(run: &PlainRun<'_>, range: u64) {
        let (lo, hi) = ((range >> 32) as usize, (range & 0xFFFF_FFFF) as usize);
        match hi - lo {
            0 => {}
            1 => {
                // SAFETY: the ranges of the join tree are disjoint, so this
                // entry is touched by this call alone; it is in bounds.
                let q = unsafe { &mut *run.tasks.add(lo) };
                if q.is_plain() {
                    let task = std::mem::replace(&mut q.task, Task::empty());
                    run.batch.run_in_frame(task, run.view);
                }
            }
            n => {
                let mid = (lo + n / 2) as u64;
                let (a, b) = (((lo as u64) << 32) | mid, (mid << 32) | hi as u64);
                join_flagged(
                    move || Batch::join_plain(run, a),
                    move |stolen| {
                        if stolen {
                            Batch::join_stolen(run, b);
                        } else {
                            Batch::join_plain(run, b);
                        }
                    },
                );
            }
        }
    }

    /// [`join_plain`](Self::join_plain) for a part of the join tree that
    /// ran as a job (stolen, as a rule by another worker): listed in its
    /// thread's entered groups while it runs, so that work the thread takes
    /// while it waits in that part's joins (when none of the group's tasks
    /// runs on it) is known to be stacked on the batch. The node's frame names the batch (as its
    /// tasks' frames do), so that the walk of a wait from such work goes
    /// on to the batch's runner and to the batch's waiter.
    #[cold]
    #[inline(never)]
    fn join_stolen(run: &PlainRun<'_>, range: u64) {
        let batch = run.batch;
        let wt = WorkerThread::current().expect("a stolen branch runs on a worker");
        let frame = Frame::new(wt, batch.core.0, batch, batch.parent);
        with_entered(wt, batch.core.0, &frame, || Batch::join_plain(run, range));
    }
}

/// The plain tasks of a batch, run by [`Batch::join_plain`].
struct PlainRun<'a> {
    batch: &'a Batch,
    tasks: *mut Queued,
    view: &'a TaskGroup,
}

// SAFETY: the entries behind `tasks` are split into disjoint ranges, each
// touched by one thread (`join_plain`); they are `Send`, and the rest is
// `Sync`.
unsafe impl Sync for PlainRun<'_> {}

/// Runs a task started from outside the pool that no wait claimed, in a
/// frame of its group with no batch.
pub(crate) fn run_unbatched(core: &GroupCore, task: Task, view: &TaskGroup) {
    let wt = WorkerThread::current().expect("a started task runs on a worker");
    let frame = Frame::new(wt, core, ptr::null(), ptr::null());
    with_frame(wt, &frame, || {
        with_entered(wt, core, &frame, || task.run(view))
    });
}

/// Runs the queued `tasks` of `core` as a batch on a worker of
/// `registry`, the group's pool: on the calling thread when it is one,
/// else entering the pool (while the caller waits, and, if it is a worker
/// of another pool, works). `here` is the waiter's frame, the parent of
/// the tasks' frames. Returns the first panic of a task.
pub(crate) fn run_batch(
    core: &GroupCore,
    registry: *const Registry,
    tasks: &mut [Queued],
    here: FramePtr,
) -> Option<Panic> {
    match WorkerThread::current() {
        Some(wt) if ptr::eq(&**wt.registry(), registry) => {
            with_entered(wt, core, here.0, || run_here(wt, core, tasks, here))
        }
        caller => {
            let core = CorePtr(core);
            let run = move |wt: &WorkerThread, _| {
                let here = here;
                // SAFETY: the group is busy (this batch), so alive.
                let core = unsafe { core.get() };
                let entered = Frame::new(wt, ptr::null(), ptr::null(), here.0);
                with_frame(wt, &entered, || {
                    with_entered(wt, core, &entered, || {
                        run_here(wt, core, tasks, FramePtr(&entered))
                    })
                })
            };
            // SAFETY: the group holds a reference to its pool (a caller
            // that is not its owner adopted it), alive meanwhile; the view
            // is never dropped.
            let registry = ManuallyDrop::new(unsafe { Arc::from_raw(registry) });
            match caller {
                // Listed on both stacks: the waiting worker (of another
                // pool) runs other work while its install waits, and a
                // wait for this group from that work could never end.
                Some(wt) => with_entered(wt, core.0, here.0, || registry.in_worker(run)),
                None => registry.in_worker(run),
            }
        }
    }
}

/// [`run_batch`] on `wt`, a worker of the group's pool.
fn run_here(
    wt: &WorkerThread,
    core: &GroupCore,
    tasks: &mut [Queued],
    here: FramePtr,
) -> Option<Panic> {
    let batch = Batch {
        core: CorePtr(core),
        registry: Arc::as_ptr(wt.registry()),
        count: AtomicUsize::new(1),
        latch: WorkerLatch::new(wt, false),
        panic: AtomicPtr::new(ptr::null_mut()),
        parent: here.0,
        // The caller listed the batch in `wt`'s entered groups just now.
        entered: entered_head(wt),
    };
    let view = group_view(core);
    let body = halt_unwinding(|| {
        // Placed tasks and claims first: a place needs a spawn to be
        // honoured.
        for q in tasks.iter_mut() {
            if let Some(started) = q.started.take() {
                if !started.is_taken() {
                    batch.spawn_claim(started);
                }
            } else if let Some(place) = q.place.take() {
                let task = std::mem::replace(&mut q.task, Task::empty());
                batch.spawn(&place, task);
            }
        }
        assert!(tasks.len() < 1 << 31, "a batch of 2^31 tasks");
        let run = PlainRun {
            batch: &batch,
            tasks: tasks.as_mut_ptr(),
            view: &view,
        };
        Batch::join_plain(&run, tasks.len() as u64);
    });
    if let Err(p) = body {
        batch.panicked(p);
    }
    // The batch's own count: when it is the only one left, no job of the
    // batch is running and none can start (only the batch's tasks spawn
    // into it), so nobody touches the latch.
    if batch.count.load(Ordering::Acquire) != 1 && batch.count.fetch_sub(1, Ordering::AcqRel) != 1 {
        wt.wait_until(&batch.latch);
    }
    let panic = batch.panic.swap(ptr::null_mut(), Ordering::Acquire);
    // SAFETY: a non-null pointer was published by `panicked` from
    // `Box::into_raw`, and the swap gives it to us alone.
    (!panic.is_null()).then(|| *unsafe { Box::from_raw(panic) })
}
