//! Jobs: type-erased references to work that a worker can run.
//!
//! A [`JobRef`] is a pointer plus a function that knows the pointee's type.
//! [`StackJob`] lives on the stack of the thread that waits for it (the `b`
//! half of `join`, the body of `install`); [`HeapJob`] lives in a block of the
//! node-local slab pool (scoped and global spawns).

use std::alloc::Layout;
use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;

use crossbeam_deque::{Injector, Steal};

use super::latch::Latch;
use super::unwind::{AbortOnUnwind, StackJobSetsLatch};
use crate::numa::NodeId;
use crate::pool::SlabPool;

/// A type-erased job. Whoever holds it may execute it exactly once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobRef {
    pointer: *const (),
    execute_fn: unsafe fn(*const ()),
}

// SAFETY: a JobRef is only created from jobs whose closures and results are
// `Send` (see `StackJob::as_job_ref` and `HeapJob::into_job_ref`); the
// pointee is kept alive by its owner until the job signals completion.
unsafe impl Send for JobRef {}

impl JobRef {
    /// Whether `a` and `b` refer to the same job.
    #[inline]
    pub(crate) fn same(a: JobRef, b: JobRef) -> bool {
        std::ptr::eq(a.pointer, b.pointer) && std::ptr::fn_addr_eq(a.execute_fn, b.execute_fn)
    }

    /// Runs the job.
    ///
    /// # Safety
    /// The job must not have been executed before, and its pointee must be
    /// alive (guaranteed by the latch protocol for stack jobs and by
    /// ownership for heap jobs).
    #[inline]
    pub(crate) unsafe fn execute(self) {
        // SAFETY: forwarded from this function's contract.
        unsafe { (self.execute_fn)(self.pointer) }
    }
}

/// The outcome of a job run by another thread.
pub(crate) enum JobResult<T> {
    None,
    Ok(T),
    Panic(Box<dyn Any + Send>),
}

impl<T> JobResult<T> {
    /// The value, or the panic resumed on this thread.
    pub(crate) fn into_return_value(self) -> T {
        match self {
            JobResult::Ok(v) => v,
            JobResult::Panic(p) => panic::resume_unwind(p),
            JobResult::None => unreachable!("job result read before the job ran"),
        }
    }
}

/// A job on the stack of the thread that will wait for it.
pub(crate) struct StackJob<L: Latch, F, R> {
    pub(crate) latch: L,
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<JobResult<R>>,
}

impl<L, F, R> StackJob<L, F, R>
where
    L: Latch + Sync,
    F: FnOnce(bool) -> R + Send,
    R: Send,
{
    #[inline(always)]
    pub(crate) fn new(func: F, latch: L) -> Self {
        StackJob {
            latch,
            func: UnsafeCell::new(Some(func)),
            result: UnsafeCell::new(JobResult::None),
        }
    }

    /// A reference other threads can execute. The caller must keep `self`
    /// alive (and in place) until `self.latch` is set.
    #[inline(always)]
    pub(crate) fn as_job_ref(&self) -> JobRef {
        JobRef {
            pointer: self as *const Self as *const (),
            execute_fn: Self::execute,
        }
    }

    /// # Safety
    /// `this` points to a live `StackJob<L, F, R>` whose function has not been
    /// taken.
    unsafe fn execute(this: *const ()) {
        // From here until the latch is set nothing may unwind: the owner
        // waits for the latch and frees the job only then (the closure's
        // own panic is caught into the result below). If the runtime
        // unwinds anyway (the `expect`, a latch's `set`), abort.
        let abort = AbortOnUnwind::<StackJobSetsLatch>::arm();
        // SAFETY: `this` came from `as_job_ref` on a live job (contract).
        let this = unsafe { &*(this as *const Self) };
        // SAFETY: the job is executed once, by one thread, so nobody else
        // touches `func` or `result` until the latch below is set.
        let func = unsafe { (*this.func.get()).take() }.expect("stack job executed twice");
        let result = match panic::catch_unwind(AssertUnwindSafe(|| func(true))) {
            Ok(v) => JobResult::Ok(v),
            Err(p) => JobResult::Panic(p),
        };
        // SAFETY: as above; the waiting thread reads `result` only after it
        // observes the latch set (Release in `set`, Acquire in `probe`).
        unsafe { *this.result.get() = result };
        // SAFETY: `this` is alive until the latch is set; after this call we
        // do not touch `this` again.
        unsafe { L::set(&this.latch) };
        abort.disarm();
    }

    /// Runs the function on this thread (the job was never shared).
    ///
    /// Takes `&self` rather than `self`: moving the job would copy it
    /// through the stack with wide loads that cannot be forwarded from the
    /// narrow stores that built it, a stall on every `join`.
    #[inline(always)]
    pub(crate) fn run_inline(&self, stolen: bool) -> R {
        // SAFETY: the job was never shared (the caller checked it is still
        // private), so this thread is the only one touching `func`.
        let func = unsafe { (*self.func.get()).take() };
        func.expect("stack job run inline after being taken")(stolen)
    }

    /// [`run_inline`](Self::run_inline) for `join`'s fast path, which then
    /// forgets the job instead of dropping it: a job run inline holds no
    /// function and no result, and the drop of its result cell (a check
    /// for a panic payload) and the check of its function cell cost six
    /// of the forty-six instructions of a `join` (callgrind).
    ///
    /// # Safety
    /// The job was never shared and its function not taken: this thread
    /// is the only one that ever touched `func`, and `result` still holds
    /// [`JobResult::None`].
    #[inline(always)]
    pub(crate) unsafe fn run_private(&self, stolen: bool) -> R {
        // SAFETY: never shared, so only this thread touches `func`, and it
        // still holds the function (the caller's promise).
        let func = unsafe { (*self.func.get()).take().unwrap_unchecked() };
        func(stolen)
    }

    /// The result left by another thread; resumes its panic here.
    pub(crate) fn into_result(self) -> R {
        self.result.into_inner().into_return_value()
    }
}

/// A heap job, for spawned work that outlives the spawner's frame.
///
/// Its frame comes from the node-local slab pool ([`SlabPool`]): on the
/// spawning thread's node by default (a worker's node: the spawner usually
/// runs its own spawns), or on the node the task is placed on. The frame is
/// freed (back to the runner's cache, or batched home when the runner is on
/// another node) before the body runs, so a chain of spawns reuses one
/// cache-hot block.
pub(crate) struct HeapJob<BODY> {
    body: BODY,
}

impl<BODY: FnOnce() + Send> HeapJob<BODY> {
    #[inline]
    pub(crate) fn new(body: BODY) -> Self {
        HeapJob { body }
    }

    /// Moves the job into a frame on `node` (the calling thread's node for
    /// `None`, or when this process may not allocate on `node`) and returns
    /// a [`JobRef`] that frees the frame when executed.
    ///
    /// # Safety
    /// Everything `BODY` borrows must outlive the job's execution (scopes
    /// guarantee it by waiting; global spawns require `'static`).
    pub(crate) unsafe fn into_job_ref(self, node: Option<NodeId>) -> JobRef {
        let layout = Layout::new::<Self>();
        let pool = SlabPool::global();
        let frame = match node {
            Some(n) => pool.alloc_on(n, layout).or_else(|_| pool.alloc(layout)),
            None => pool.alloc(layout),
        }
        .unwrap_or_else(|_| std::alloc::handle_alloc_error(layout))
        .cast::<Self>();
        // SAFETY: `frame` is a fresh block of at least `layout`'s size and
        // alignment (the slab pool's contract; zero-sized layouts get a
        // 16-byte block), owned by us until `execute` frees it.
        unsafe { frame.as_ptr().write(self) };
        JobRef {
            pointer: frame.as_ptr() as *const (),
            execute_fn: Self::execute,
        }
    }

    /// # Safety
    /// `this` came from `into_job_ref` and is executed once.
    unsafe fn execute(this: *const ()) {
        let frame = this as *mut Self;
        // SAFETY: `this` is the frame written by `into_job_ref` (contract),
        // read once; after the read the frame holds no live value.
        let job = unsafe { frame.read() };
        // SAFETY: the frame came from the slab pool with this layout and is
        // not used again (the job was moved out above).
        unsafe {
            SlabPool::global().dealloc(NonNull::new_unchecked(frame.cast()), Layout::new::<Self>())
        };
        (job.body)();
    }
}

/// A FIFO of jobs behind stand-ins: [`push`](Self::push) queues a job and
/// returns a stand-in job that, wherever and whenever it runs, runs the
/// *oldest* queued job. A worker pushes the stand-in on its own deque, so
/// the deque's order (newest first) decides *when* a FIFO job runs and
/// the FIFO decides *which*: jobs spawned through one FIFO run in the
/// order they were spawned, while LIFO spawns, joins and other FIFOs keep
/// their places in between (`spawn_fifo`, `scope_fifo`; README §4).
///
/// There are as many stand-ins as queued jobs, each published after its
/// job, so a stand-in always finds a job. The FIFO must outlive its
/// stand-ins: a worker's FIFO lives as long as the worker, which cannot
/// exit while a spawned job (counted in the pool's terminate count) is
/// queued; a scope's lives in the scope, which waits for its jobs.
pub(crate) struct JobFifo {
    jobs: Injector<JobRef>,
}

impl JobFifo {
    pub(crate) fn new() -> JobFifo {
        JobFifo {
            jobs: Injector::new(),
        }
    }

    /// Queues `job` and returns its stand-in.
    ///
    /// # Safety
    /// `self` must stay alive (and in place) until the stand-in has run.
    pub(crate) unsafe fn push(&self, job: JobRef) -> JobRef {
        self.jobs.push(job);
        JobRef {
            pointer: self as *const Self as *const (),
            execute_fn: Self::execute,
        }
    }

    /// # Safety
    /// `this` is a live `JobFifo` with a job queued for this stand-in.
    unsafe fn execute(this: *const ()) {
        // SAFETY: the stand-in's FIFO is alive until it has run (contract
        // of `push`).
        let this = unsafe { &*(this as *const Self) };
        loop {
            match this.jobs.steal() {
                // SAFETY: each queued job is taken once, by one stand-in,
                // and executed once.
                Steal::Success(job) => return unsafe { job.execute() },
                Steal::Empty => unreachable!("a FIFO stand-in found its FIFO empty"),
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }
}
