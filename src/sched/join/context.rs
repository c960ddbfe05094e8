//! `join_context`: a `join` whose closures learn whether they migrated to
//! another thread. Its `b` goes on the worker's deque at once, as in
//! rayon-core, rather than staying private (README §1): the question
//! "was `b` taken by another thread?" is what adaptive algorithms split
//! on, and `b` must then be takeable from the start, also while `a`
//! blocks waiting for something `b` does. It costs the deque push and pop
//! that `join` avoids.

use std::marker::PhantomData;

use super::split::WaitGuard;
use crate::sched::job::{JobRef, StackJob};
use crate::sched::latch::WorkerLatch;
use crate::sched::registry::global_registry;
use crate::sched::worker::WorkerThread;

/// What a closure of [`join_context`] learns about where it runs.
#[derive(Debug)]
pub struct FnContext {
    migrated: bool,
    /// Neither `Send` nor `Sync`, as in rayon-core.
    _marker: PhantomData<*mut ()>,
}

impl FnContext {
    #[inline(always)]
    fn new(migrated: bool) -> FnContext {
        FnContext {
            migrated,
            _marker: PhantomData,
        }
    }

    /// Whether the closure runs on another thread than the one that called
    /// [`join_context`]: the second closure when an idle worker took it;
    /// both when `join_context` was called from outside the pool (the
    /// work was sent into it).
    #[inline]
    pub fn migrated(&self) -> bool {
        self.migrated
    }
}

/// [`join`](crate::join) whose closures are told, through a [`FnContext`],
/// whether they migrated to another thread. Same contract as
/// `rayon::join_context`: called from outside any pool, the work runs in
/// the global pool (both closures then count as migrated); inside a pool,
/// the first closure runs on the calling thread, and the second migrates
/// when an idle worker takes it (adaptive algorithms split further only
/// then).
///
/// Unlike `join`, whose second closure stays private to the worker until
/// a thief asks for it (at the worker's next `join`), `join_context` puts
/// the second closure on the worker's deque at once, where any idle worker
/// may take it, even while the first closure blocks.
///
/// ```
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// // One worker: nobody can take the second closure.
/// let moved = pool.install(|| terroir::join_context(|a| a.migrated(), |b| b.migrated()));
/// assert_eq!(moved, (false, false));
/// // From outside every pool, both closures are sent into the global pool.
/// assert_eq!(terroir::join_context(|a| a.migrated(), |b| b.migrated()), (true, true));
/// ```
///
/// # Panics
/// If either closure panics, the panic is propagated to the caller after
/// both closures have finished (if both panic, `oper_a`'s panic wins).
pub fn join_context<A, B, RA, RB>(oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let run = |wt: &WorkerThread, injected: bool| join_on_deque(wt, injected, oper_a, oper_b);
    match WorkerThread::current() {
        Some(wt) => run(wt, false),
        None => global_registry().in_worker(run),
    }
}

/// `join_context` on `wt`, the calling thread's worker; `injected` when
/// the call came from outside the pool.
fn join_on_deque<A, B, RA, RB>(wt: &WorkerThread, injected: bool, oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let owner = wt as *const WorkerThread as usize;
    let job_b = StackJob::new(
        move |as_job: bool| {
            // Run as a job: by another worker, or by this one while it
            // waited for something else (no migration).
            let elsewhere = as_job
                && WorkerThread::current()
                    .is_none_or(|me| me as *const WorkerThread as usize != owner);
            oper_b(FnContext::new(injected || elsewhere))
        },
        WorkerLatch::new(wt, false),
    );
    let b_ref = job_b.as_job_ref();
    // If `oper_a` unwinds, the guard waits for `b` (which may be running
    // elsewhere, or still on our deque: the wait runs it) first. Armed
    // before the push: once `b` is on the deque, this frame must not end
    // before `b` has run, also if the push's wake-up unwinds.
    let guard = WaitGuard {
        wt,
        latch: &job_b.latch,
    };
    wt.push(b_ref);
    let ra = oper_a(FnContext::new(injected));
    std::mem::forget(guard);
    // Take `b` back unless it was taken: jobs pushed above it (by `a`'s
    // spawns, or promoted continuations) run first, as in rayon-core.
    while !job_b.latch.probe() {
        match wt.pop_local() {
            Some(job) if JobRef::same(job, b_ref) => return (ra, job_b.run_inline(false)),
            // SAFETY: a job taken from our deque is executed once, by us.
            Some(job) => unsafe { wt.execute(job) },
            None => {
                wt.wait_until(&job_b.latch);
                break;
            }
        }
    }
    (ra, job_b.into_result())
}
