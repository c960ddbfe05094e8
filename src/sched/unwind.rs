//! Where unwinding stops: a user's panic is caught ([`halt_unwinding`])
//! and handed to whoever waits for the work (or to the panic handler),
//! while a panic of the runtime itself at a spot it must not unwind from
//! aborts the process ([`AbortOnUnwind`]), naming the [`Invariant`] it
//! would break. See `README.md` beside this file, "Unwinding".

use std::any::Any;
use std::io::Write;
use std::marker::PhantomData;
use std::mem;
use std::panic::{self, AssertUnwindSafe};

/// Runs `f`, returning its value or its panic payload.
pub(crate) fn halt_unwinding<F: FnOnce() -> R, R>(f: F) -> Result<R, Box<dyn Any + Send>> {
    panic::catch_unwind(AssertUnwindSafe(f))
}

/// Something unwinding past a spot would break; the abort names it.
pub(crate) trait Invariant {
    /// What breaks, printed on stderr before the process aborts.
    const BROKEN: &'static str;
}

/// Aborts the process if dropped, naming `I`: armed at a spot of the
/// runtime that must not unwind, disarmed (forgotten) once the spot is
/// passed. It is zero-sized and never dropped on the normal path, so it
/// costs no instruction there: only the landing pad calls the abort.
///
/// It guards the runtime's own code. A user's closure runs inside
/// [`halt_unwinding`] (or with its own drop guard, as `join`'s first
/// closure), so a user's panic never reaches one of these guards.
#[must_use = "a guard aborts when it is dropped: disarm it once the spot is passed"]
pub(crate) struct AbortOnUnwind<I: Invariant>(PhantomData<I>);

impl<I: Invariant> AbortOnUnwind<I> {
    /// Arms the guard.
    #[inline(always)]
    pub(crate) fn arm() -> Self {
        AbortOnUnwind(PhantomData)
    }

    /// Disarms the guard: the guarded code did not unwind.
    #[inline(always)]
    pub(crate) fn disarm(self) {
        mem::forget(self);
    }
}

impl<I: Invariant> Drop for AbortOnUnwind<I> {
    #[inline(always)]
    fn drop(&mut self) {
        abort_unwinding(I::BROKEN)
    }
}

/// Prints which invariant an unwinding would have broken, and aborts.
#[cold]
#[inline(never)]
pub(crate) fn abort_unwinding(broken: &str) -> ! {
    abort_with(&format!(
        "unwinding out of the runtime would break: {broken}"
    ))
}

/// Prints `why` on stderr and aborts. Writing cannot panic (a closed
/// stderr is ignored), which an `eprintln!` in a landing pad could.
#[cold]
#[inline(never)]
pub(crate) fn abort_with(why: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "terroir: fatal: {why}; aborting");
    std::process::abort()
}

/// `StackJob::execute`, from taking the closure to setting the latch.
/// The job's owner waits for the latch and frees the job only once it is
/// set; if the runtime unwound in between (the closure itself cannot: its
/// panic is caught into the result), the owner would wait forever, or
/// free the job while this thread still uses it if the unwinding reached
/// the owner's frame on this thread.
pub(crate) enum StackJobSetsLatch {}

impl Invariant for StackJobSetsLatch {
    const BROKEN: &'static str = "a stack job that started running sets its latch \
        (its owner waits for it, and frees the job only then)";
}

/// `WorkerThread::wait_until`, while the latch is unset. The jobs that set
/// the latch live in the waiting frame or borrow from it (the promoted
/// second closure of a `join`, a scope's spawns, a job injected into
/// another pool), and other workers may be running them; unwinding out of
/// the wait would free that frame under them.
pub(crate) enum WaiterOutlivesJobs {}

impl Invariant for WaiterOutlivesJobs {
    const BROKEN: &'static str = "a frame that waits for a latch outlives the jobs that set \
        it (they live in it or borrow from it, and may be running on other threads)";
}

/// `WorkerThread::run`'s main loop. The pool counts on each of its
/// workers until it terminates: for the tasks only that worker may run
/// (its strict inbox, broadcasts), and in the sleep protocol's counts (a
/// worker that vanished while counted as a searcher would make producers
/// skip wake-ups for good). Jobs catch their closures' panics, so only a
/// bug of the runtime unwinds here.
pub(crate) enum WorkerLoopRuns {}

impl Invariant for WorkerLoopRuns {
    const BROKEN: &'static str = "a worker's main loop runs until its pool terminates \
        (the pool counts on it for its inboxes and in the sleep protocol)";
}

/// The pool's panic handler, called with a spawned job's panic: nobody
/// waits for a spawned job, so its panic has nowhere else to go.
pub(crate) enum PanicHandlerReturns {}

impl Invariant for PanicHandlerReturns {
    const BROKEN: &'static str = "the panic handler returns \
        (a spawned job's panic has nowhere else to go)";
}

/// Test hooks: make the runtime itself unwind where it otherwise only
/// could through a bug, to check what the guards do. Per thread, so that
/// tests running at the same time do not see each other's.
#[cfg(test)]
pub(crate) mod hooks {
    use std::cell::Cell;

    thread_local! {
        /// `promote` panics after publishing the continuation.
        pub(crate) static PANIC_IN_PROMOTE: Cell<bool> = const { Cell::new(false) };
        /// `WorkerThread::run` panics after its main loop (outside
        /// [`WorkerLoopRuns`](super::WorkerLoopRuns)'s guard, with the
        /// thread still a worker).
        pub(crate) static PANIC_AFTER_MAIN_LOOP: Cell<bool> = const { Cell::new(false) };
    }

    /// Panics if `hook` is set on this thread (and clears it).
    pub(crate) fn fire(hook: &'static std::thread::LocalKey<Cell<bool>>, what: &str) {
        if hook.with(|h| h.replace(false)) {
            panic!("expected: test hook: {what}");
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each guard is checked in a child process (this test binary run
    //! again on one test, with [`CHILD`] set) that breaks an invariant of
    //! the runtime for real, or through a [`hooks`](super::hooks) entry,
    //! and must abort with the guard's message rather than unwind.

    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::{Duration, Instant};

    use super::{hooks, Invariant};
    use crate::sched::job::{HeapJob, JobFifo, JobRef, StackJob};
    #[cfg(debug_assertions)]
    use crate::sched::join::PrivateJob;
    use crate::sched::latch::{LockLatch, WorkerLatch};
    use crate::sched::{ThreadPoolBuilder, WorkerThread};

    /// Set in the child process: run the breaking half of the test.
    const CHILD: &str = "TERROIR_UNWIND_TEST_CHILD";

    use crate::sched::test_pool as pool;

    /// In the child (`CHILD` set), runs `breaks`, which must abort the
    /// process; in the parent, runs test `name` of this module in a child
    /// and checks that it aborted, saying `message` on stderr.
    fn aborts_with(name: &str, message: &str, breaks: impl FnOnce()) {
        if std::env::var_os(CHILD).is_some() {
            breaks();
            // Not reached when the guard works: the child aborted.
            return;
        }
        let path = module_path!().split_once("::").expect("crate::path").1;
        let exe = std::env::current_exe().expect("the test binary");
        let out = Command::new(exe)
            .args([&format!("{path}::{name}"), "--exact", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .expect("the test binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("running 1 test"),
            "the child ran no test {name}: {stdout}"
        );
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGABRT),
            "the child must abort, not unwind or exit ({}); stderr:\n{stderr}",
            out.status
        );
        assert!(
            stderr.contains(&format!("terroir: fatal: {message}")) && stderr.contains("; aborting"),
            "stderr must name the invariant ({message}):\n{stderr}"
        );
    }

    fn broken(invariant: &str) -> String {
        format!("unwinding out of the runtime would break: {invariant}")
    }

    /// A stand-in of a FIFO that is empty: running it panics inside the
    /// runtime ("a FIFO stand-in found its FIFO empty"), a bug no user
    /// code can cause. The FIFO is leaked, so the stand-in stays valid.
    fn empty_fifo_stand_in() -> JobRef {
        let fifo: &'static JobFifo = Box::leak(Box::new(JobFifo::new()));
        // SAFETY: the job is 'static.
        let job = unsafe { HeapJob::new(|| ()).into_job_ref(None) };
        // SAFETY: the FIFO is leaked, alive for ever.
        let stand_in = unsafe { fifo.push(job) };
        // SAFETY: the stand-in runs its one queued job, once; the FIFO is
        // then empty, as the tests want.
        unsafe { stand_in.execute() };
        stand_in
    }

    /// A stack job run a second time panics in the runtime (its closure
    /// is gone) between starting and setting its latch: abort.
    #[test]
    fn a_stack_job_that_unwinds_before_its_latch_aborts() {
        aborts_with(
            "a_stack_job_that_unwinds_before_its_latch_aborts",
            &broken(super::StackJobSetsLatch::BROKEN),
            || {
                let latch = LockLatch::default();
                let job = StackJob::new(|_| (), &latch);
                // SAFETY: the job is alive; the second run breaks the
                // "executed once" contract on purpose, which the job
                // detects (`expect`) without touching freed memory.
                unsafe {
                    job.as_job_ref().execute();
                    job.as_job_ref().execute();
                }
            },
        );
    }

    /// A wait whose latch is unset runs a job that unwinds in the runtime:
    /// abort rather than leave the waiting frame.
    #[test]
    fn a_wait_that_unwinds_aborts() {
        aborts_with(
            "a_wait_that_unwinds_aborts",
            &broken(super::WaiterOutlivesJobs::BROKEN),
            || {
                pool(1).install(|| {
                    let wt = WorkerThread::current().expect("a worker");
                    wt.push(empty_fifo_stand_in());
                    let latch = WorkerLatch::new(wt, false);
                    wt.wait_until(&latch);
                });
            },
        );
    }

    /// A worker's main loop runs a job that unwinds in the runtime: abort
    /// rather than lose the worker.
    #[test]
    fn a_main_loop_that_unwinds_aborts() {
        aborts_with(
            "a_main_loop_that_unwinds_aborts",
            &broken(super::WorkerLoopRuns::BROKEN),
            || {
                let pool = pool(1);
                pool.registry.inject(empty_fifo_stand_in());
                // The worker aborts the process meanwhile.
                std::thread::sleep(Duration::from_secs(20));
            },
        );
    }

    /// The panic handler itself panics: abort.
    #[test]
    fn a_panic_handler_that_unwinds_aborts() {
        aborts_with(
            "a_panic_handler_that_unwinds_aborts",
            &broken(super::PanicHandlerReturns::BROKEN),
            || {
                let pool = ThreadPoolBuilder::new()
                    .num_threads(1)
                    .pin(false)
                    .panic_handler(|_| panic!("expected: the panic handler panics"))
                    .build()
                    .expect("a pool");
                pool.spawn(|| panic!("expected: a spawned job panics"));
                std::thread::sleep(Duration::from_secs(20));
            },
        );
    }

    /// Unlinking an older private continuation before a newer one aborts
    /// in debug builds (release builds rely on the argument at
    /// `pop_private`).
    #[cfg(debug_assertions)]
    #[test]
    fn private_continuations_unlinked_out_of_order_abort() {
        aborts_with(
            "private_continuations_unlinked_out_of_order_abort",
            "private join continuations unlinked out of order",
            || {
                pool(1).install(|| {
                    let wt = WorkerThread::current().expect("a worker");
                    let latch = LockLatch::default();
                    let job = StackJob::new(|_| (), &latch);
                    let mut older = PrivateJob::new(job.as_job_ref());
                    let mut newer = PrivateJob::new(job.as_job_ref());
                    wt.push_private(&mut older);
                    wt.push_private(&mut newer);
                    wt.pop_private(&older);
                });
            },
        );
    }

    /// `poll` unwinds after it published `b` (the hook makes `promote`
    /// panic after its push): `join`'s guard, armed before `poll`, still
    /// takes `b` back and finishes it before the panic leaves the frame
    /// that `b` lives in. With the guard armed after `poll`, the frame
    /// was gone while `b` sat on the deque.
    #[test]
    fn join_finishes_b_when_poll_unwinds_after_publishing_it() {
        let pool = pool(1);
        let a_ran = AtomicBool::new(false);
        let b_ran = AtomicUsize::new(0);
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                let wt = WorkerThread::current().expect("a worker");
                // As a thief would: ask for a continuation.
                wt.info()
                    .request
                    .store(crate::sched::worker::ASKED, Ordering::Relaxed);
                hooks::PANIC_IN_PROMOTE.with(|h| h.set(true));
                crate::join(
                    || a_ran.store(true, Ordering::SeqCst),
                    || b_ran.fetch_add(1, Ordering::SeqCst),
                );
            })
        }));
        let err = res.expect_err("the hook's panic propagates");
        assert_eq!(
            err.downcast_ref::<String>().map(String::as_str),
            Some("expected: test hook: promote unwinds after publishing a continuation")
        );
        assert_eq!(
            b_ran.load(Ordering::SeqCst),
            1,
            "b ran once, before the panic left join"
        );
        assert!(!a_ran.load(Ordering::SeqCst), "a never started");
        assert_eq!(
            pool.install(|| crate::join(|| 1, || 2)),
            (1, 2),
            "the pool still works"
        );
    }

    /// A worker whose `run` unwinds (here after its main loop, through a
    /// hook) stops being a worker: a spawn handler's thread that catches
    /// the unwinding does not see the dead worker as its own.
    #[test]
    fn a_worker_that_unwinds_out_of_run_stops_being_current() {
        let (tx, rx) = mpsc::channel();
        let pool = ThreadPoolBuilder::new()
            .num_threads(1)
            .pin(false)
            .spawn_handler(move |builder| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    hooks::PANIC_AFTER_MAIN_LOOP.with(|h| h.set(true));
                    let unwound =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.run()))
                            .is_err();
                    let _ = tx.send((unwound, crate::current_thread_index()));
                });
                Ok(())
            })
            .build()
            .expect("a pool");
        assert_eq!(pool.install(crate::current_thread_index), Some(0));
        drop(pool);
        let (unwound, index) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the worker exits");
        assert!(unwound, "the hook made run unwind");
        assert_eq!(index, None, "the thread is no longer a worker");
    }

    /// A user's panic in a `b` that another worker runs (promoted from
    /// `join`, or `join_context`'s) is caught where it runs and reaches
    /// the caller; nothing aborts, the pool keeps working.
    #[test]
    fn a_user_panic_in_a_stolen_b_propagates() {
        let pool = pool(2);
        let owner_index = Arc::new(AtomicUsize::new(usize::MAX));
        for context in [false, true] {
            let b_ran_on = AtomicUsize::new(usize::MAX);
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| {
                    let me = crate::current_thread_index().expect("a worker");
                    owner_index.store(me, Ordering::SeqCst);
                    let b = || {
                        b_ran_on.store(
                            crate::current_thread_index().expect("a worker"),
                            Ordering::SeqCst,
                        );
                        panic!("expected: b panics")
                    };
                    // `a` joins (and so polls) until `b` has started,
                    // elsewhere: a thief must have asked for it.
                    let a = || {
                        let start = Instant::now();
                        while b_ran_on.load(Ordering::SeqCst) == usize::MAX
                            && start.elapsed() < Duration::from_secs(30)
                        {
                            crate::join(|| (), || ());
                            std::thread::yield_now();
                        }
                    };
                    if context {
                        crate::join_context(|_| a(), |_| b());
                    } else {
                        crate::join(a, b);
                    }
                })
            }));
            let err = res.expect_err("b's panic propagates");
            assert_eq!(err.downcast_ref::<&str>(), Some(&"expected: b panics"));
            let ran_on = b_ran_on.load(Ordering::SeqCst);
            assert_ne!(ran_on, usize::MAX, "b ran");
            assert_ne!(
                ran_on,
                owner_index.load(Ordering::SeqCst),
                "b ran on the other worker (context: {context})"
            );
            assert_eq!(pool.install(|| crate::join(|| 1, || 2)), (1, 2));
        }
    }
}
