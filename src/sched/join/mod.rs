//! `join`: fork two closures, continue when both are done.
//!
//! The continuation `b` stays private to the worker (a push on a plain
//! `Vec`, no atomic read-modify-write, no fence) unless an idle worker asks
//! for work; then the worker promotes its *oldest* private continuation to
//! its deque at the next `join` (a "steal request", Acar, Charguéraud and
//! Rainey, PPoPP 2013). See `README.md` beside this file.

mod context;
mod offer;
mod private;
mod split;

pub use context::{join_context, FnContext};
pub(crate) use offer::{offer_during, OfferList, Offered};
pub(crate) use private::{PrivateJob, PrivateList};
pub(crate) use split::{join_to, To};

use super::job::StackJob;
use super::latch::WorkerLatch;
use super::registry::global_registry;
use super::worker::WorkerThread;

/// Runs `oper_a` and `oper_b`, potentially in parallel, and returns both
/// results. Same contract as `rayon::join`.
///
/// Called from outside any pool, the work runs in the global pool and the
/// calling thread blocks until it is done.
///
/// `oper_b` stays private to the calling worker until an idle worker asks
/// for work, and becomes takeable when the caller reaches its next `join`
/// (`src/sched/README.md`, §1): unlike rayon-core, an `oper_a` that waits
/// for something `oper_b` does may wait forever. Use
/// [`join_context`](crate::join_context), whose `oper_b` is takeable at
/// once, or a [`scope`](crate::scope) for that.
///
/// # Panics
/// If either closure panics, the panic is propagated to the caller after
/// both closures have finished (if both panic, `oper_a`'s panic wins).
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 2 {
///         return n;
///     }
///     let (a, b) = terroir::join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
/// assert_eq!(fib(20), 6765);
/// ```
///
/// The two closures may run at the same time, so they cannot both borrow
/// the same data mutably:
///
/// ```compile_fail
/// let mut v = vec![1, 2, 3];
/// terroir::join(|| v.push(4), || v.push(5));
/// ```
pub fn join<A, B, RA, RB>(oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    join_flagged(oper_a, move |_| oper_b())
}

/// [`join`] whose second closure learns whether it ran as a job (`true`:
/// stolen, or promoted and then taken back, maybe on another thread; also
/// when it runs after the first closure unwound, which executes it as a
/// job on the forking thread) or inline on the forking thread right after
/// the first closure returned (`false`). The C API's `terroir_join` uses
/// the flag to find its frame.
#[inline]
pub(crate) fn join_flagged<A, B, RA, RB>(oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce(bool) -> RB + Send,
    RA: Send,
    RB: Send,
{
    match WorkerThread::current() {
        Some(wt) => join_flagged_in(wt, oper_a, oper_b),
        None => global_registry().in_worker(|wt, _| join_flagged_in(wt, oper_a, oper_b)),
    }
}

/// [`join_flagged`] on `wt`, which must be the calling thread's worker
/// (for callers that looked it up already: one thread-local read less).
#[inline]
pub(crate) fn join_flagged_in<A, B, RA, RB>(wt: &WorkerThread, oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce(bool) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let job_b = StackJob::new(oper_b, WorkerLatch::new(wt, false));
    let mut node = PrivateJob::new(job_b.as_job_ref());
    wt.push_private(&mut node);
    // If `oper_a` unwinds, the guard takes `b` back and finishes it before
    // the panic goes on (a landing pad, free on the normal path, where
    // `catch_unwind` would cost a call through a function pointer). It is
    // armed before `poll`, which may publish `b` (or an older node): from
    // the moment `node` is linked until it is unlinked, this frame must
    // not end while `b` may be on the deque or running elsewhere.
    let guard = UnwindGuard {
        wt,
        node: &node,
        job_b: &job_b,
    };
    wt.poll();
    let ra = oper_a();
    std::mem::forget(guard);
    wt.pop_private(&node);
    if !node.was_promoted() {
        // SAFETY: not promoted, so never shared: this thread alone has
        // touched `job_b`, whose function is still there.
        let rb = unsafe { job_b.run_private(false) };
        // Nothing left to drop: no function, no result, and the latch has
        // no drop glue (if `b` unwinds, `job_b` is dropped as usual).
        std::mem::forget(job_b);
        (ra, rb)
    } else {
        // Promoted: a thief may run it, or we find it on our deque.
        wt.wait_until(&job_b.latch);
        (ra, job_b.into_result())
    }
}

// `join` forgets a job it ran inline (see `StackJob::run_private`): its
// latch must have nothing to drop.
const _: () = assert!(!std::mem::needs_drop::<WorkerLatch>());

/// Finishes `b` when `a` unwinds, so that the panic reaches the caller only
/// after the sibling work is done (rayon's contract: both closures run).
struct UnwindGuard<'a, F, R>
where
    F: FnOnce(bool) -> R + Send,
    R: Send,
{
    wt: &'a WorkerThread,
    node: &'a PrivateJob,
    job_b: &'a StackJob<WorkerLatch, F, R>,
}

impl<F, R> Drop for UnwindGuard<'_, F, R>
where
    F: FnOnce(bool) -> R + Send,
    R: Send,
{
    // Inlined, so that the guard's fields are never written to the frame:
    // the landing pad rebuilds them from registers and the frame's address.
    #[inline(always)]
    fn drop(&mut self) {
        finish_after_unwind(self.wt, self.node, self.job_b);
    }
}

/// The landing pad of [`UnwindGuard`], out of line.
#[cold]
#[inline(never)]
fn finish_after_unwind<F, R>(
    wt: &WorkerThread,
    node: &PrivateJob,
    job_b: &StackJob<WorkerLatch, F, R>,
) where
    F: FnOnce(bool) -> R + Send,
    R: Send,
{
    wt.pop_private(node);
    if !node.was_promoted() {
        // Never shared: run it here; a second panic is dropped (the
        // first one wins, as in rayon).
        // SAFETY: `b` was private, so nobody else can execute it, and we
        // execute it once; `execute` catches its panic into the job's
        // result, which is dropped with `job_b`.
        unsafe { job_b.as_job_ref().execute() };
    } else {
        wt.wait_until(&job_b.latch);
    }
}
