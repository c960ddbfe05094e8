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

use std::mem::ManuallyDrop;

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
/// once, or a [`scope`](crate::scope) for that. A worker that already
/// keeps three such continuations runs `oper_a` and then `oper_b` as plain
/// calls (thieves are served the older, bigger ones): deep in a recursion
/// a `join` costs little more than the two calls.
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
#[inline]
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
#[inline(always)]
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
///
/// Inlined into its caller: a `join` deep in a recursion is then the
/// caller's two calls behind a check and a poll ([`join_elided`]), and
/// only a `join` that keeps a continuation calls out of line.
#[inline]
pub(crate) fn join_flagged_in<A, B, RA, RB>(wt: &WorkerThread, oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce(bool) -> RB + Send,
    RA: Send,
    RB: Send,
{
    if wt.private.private_len() >= ELIDE_AT {
        join_elided(wt, oper_a, oper_b)
    } else {
        join_private(wt, oper_a, oper_b)
    }
}

/// A `join` that keeps `oper_b` as a private continuation, which a thief
/// may have promoted by the time `oper_a` returns.
#[inline(never)]
fn join_private<A, B, RA, RB>(wt: &WorkerThread, oper_a: A, oper_b: B) -> (RA, RB)
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

/// How many private continuations a worker keeps before `join` stops
/// making new ones: from then on a `join` runs its closures as two plain
/// calls (after its poll), and a thief is served the oldest of the ones
/// kept, the biggest pieces of work this worker has. See
/// [`join_elided`].
pub(crate) const ELIDE_AT: usize = 3;

/// `join` on a worker that already keeps [`ELIDE_AT`] private
/// continuations: `oper_a`, then `oper_b`, as plain calls, with no job and
/// no node. A thief asking now is served one of the older continuations
/// (`poll`), which are bigger than this `oper_b` in a recursion (each
/// older one is a call higher up); once it took one, the next `join` here
/// keeps a continuation again. chili (after Spice) skips its heartbeat
/// `join` the same way once three jobs are queued.
///
/// What this gives up: `oper_b` itself can never be taken, only the work
/// its own `join`s expose once older continuations are gone. What it
/// saves is the job, the node and their links: on one worker a `join`
/// went from 37.0 to 21.5 instructions over the sequential recursion in
/// fib(32), and from 35.5 to 11.1 in a tree sum (callgrind, `README.md`
/// §1).
#[inline(always)]
fn join_elided<A, B, RA, RB>(wt: &WorkerThread, oper_a: A, oper_b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce(bool) -> RB + Send,
    RA: Send,
    RB: Send,
{
    // Armed before `poll`, as in `join_private`: both closures run
    // however this frame is left.
    let mut guard = RunOnUnwind {
        oper_b: ManuallyDrop::new(oper_b),
        _result: std::marker::PhantomData,
    };
    wt.poll();
    let ra = oper_a();
    // SAFETY: taken once; the guard is forgotten right after, so its drop
    // never takes it again.
    let oper_b = unsafe { ManuallyDrop::take(&mut guard.oper_b) };
    std::mem::forget(guard);
    (ra, oper_b(false))
}

/// Runs an elided `join`'s `oper_b` when `oper_a` (or the poll before it)
/// unwinds: rayon's contract that both closures run.
struct RunOnUnwind<F: FnOnce(bool) -> R, R> {
    oper_b: ManuallyDrop<F>,
    _result: std::marker::PhantomData<fn() -> R>,
}

impl<F: FnOnce(bool) -> R, R> Drop for RunOnUnwind<F, R> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the normal path takes `oper_b` and forgets the guard, so
        // a guard that drops still holds it, and drops once.
        let oper_b = unsafe { ManuallyDrop::take(&mut self.oper_b) };
        run_after_unwind(oper_b);
    }
}

/// The landing pad of [`RunOnUnwind`], out of line: runs `oper_b` as a
/// job would after `oper_a` unwound (`true`), and drops a second panic
/// (the first one wins, as in rayon).
#[cold]
#[inline(never)]
fn run_after_unwind<F: FnOnce(bool) -> R, R>(oper_b: F) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| oper_b(true)));
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::sched::worker::ASKED;
    use crate::ThreadPool;

    fn one_worker() -> ThreadPool {
        crate::sched::test_pool(1)
    }

    /// Clears the calling worker's request byte: a one-worker pool's
    /// worker that parked left `UNWATCHED` on itself (`watch_sleepers`),
    /// and the first `join` would promote for it, shifting every count of
    /// the tests below by one.
    fn no_request() {
        let wt = WorkerThread::current().expect("a worker");
        wt.info().request.store(0, Ordering::Relaxed);
    }

    /// The private continuations a worker keeps at each depth of a
    /// recursion: one per `join` up to [`ELIDE_AT`], none below (a `join`
    /// there is two plain calls).
    fn kept_at_each_depth(depth: usize, seen: &mut Vec<usize>) {
        let wt = WorkerThread::current().expect("a worker");
        seen.push(wt.private.private_len());
        if depth > 0 {
            let mut left = Vec::new();
            let mut right = Vec::new();
            join(
                || kept_at_each_depth(depth - 1, &mut left),
                || kept_at_each_depth(depth - 1, &mut right),
            );
            // Both halves see the same counts: `b` runs after `a` unlinked
            // its node (or ran elided).
            assert_eq!(left.len(), right.len());
            seen.extend(left);
        }
    }

    #[test]
    fn joins_keep_at_most_elide_at_continuations() {
        let depth = ELIDE_AT + 4;
        let seen = one_worker().install(|| {
            no_request();
            let mut seen = Vec::new();
            kept_at_each_depth(depth, &mut seen);
            seen
        });
        // `seen[d]`: what the left-most call at depth `d` saw.
        let want: Vec<usize> = (0..=depth).map(|d| d.min(ELIDE_AT)).collect();
        assert_eq!(seen, want);
    }

    /// A thief's request deep in a recursion is served the oldest
    /// continuation; the next `join` then keeps one again, at its depth.
    #[test]
    fn a_promotion_makes_the_next_join_keep_a_continuation() {
        fn descend(depth: usize, ask_at: usize, seen: &mut Vec<usize>) -> usize {
            let wt = WorkerThread::current().expect("a worker");
            if depth == ask_at {
                // As a thief would (the owner serves it at its next poll).
                wt.info().request.store(ASKED, Ordering::Relaxed);
            }
            seen.push(wt.private.private_len());
            if depth == 0 {
                return 1;
            }
            let (a, b) = join(
                || descend(depth - 1, ask_at, seen),
                || 1, // no joins: nothing to record
            );
            a + b
        }
        let depth = ELIDE_AT + 4;
        let (sum, seen) = one_worker().install(|| {
            no_request();
            let mut seen = Vec::new();
            let sum = descend(depth, depth - ELIDE_AT - 1, &mut seen);
            (sum, seen)
        });
        assert_eq!(sum, depth + 1);
        // Down to the request, as above; the request's `join` (elided)
        // promotes the oldest, so the next one keeps a continuation.
        let mut want: Vec<usize> = (0..=ELIDE_AT + 1).map(|d| d.min(ELIDE_AT)).collect();
        want.extend([ELIDE_AT - 1, ELIDE_AT, ELIDE_AT]);
        assert_eq!(seen, want);
    }

    /// A `join` below [`ELIDE_AT`] whose first closure panics still runs
    /// its second closure before the panic goes on (rayon's contract),
    /// and a panic of that second closure is dropped: the first wins.
    #[test]
    fn an_elided_join_runs_b_when_a_panics() {
        fn nest(depth: usize, b_runs: &AtomicUsize, b_panics: bool) {
            if depth == 0 {
                let wt = WorkerThread::current().expect("a worker");
                assert!(wt.private.private_len() >= ELIDE_AT, "elided here");
                join(
                    || panic!("expected: a panics"),
                    || {
                        b_runs.fetch_add(1, Ordering::SeqCst);
                        if b_panics {
                            panic!("expected: b panics too");
                        }
                    },
                );
                return;
            }
            join(|| nest(depth - 1, b_runs, b_panics), || ());
        }
        let pool = one_worker();
        for b_panics in [false, true] {
            let b_runs = AtomicUsize::new(0);
            let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| nest(ELIDE_AT + 2, &b_runs, b_panics))
            }))
            .expect_err("a's panic propagates");
            assert_eq!(
                err.downcast_ref::<&str>().copied(),
                Some("expected: a panics")
            );
            assert_eq!(b_runs.load(Ordering::SeqCst), 1, "b ran once");
            assert_eq!(pool.install(|| join(|| 1, || 2)), (1, 2));
        }
    }
}
