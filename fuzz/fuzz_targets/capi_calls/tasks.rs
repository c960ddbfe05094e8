//! The tasks of capi_calls: what they do, with the checks of the calls
//! they make from inside the pool.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use arbitrary::Arbitrary;

use crate::capi::*;
use crate::check::*;

/// What a task does (its argument is a `TaskCtx`).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub(crate) enum TaskKind {
    /// Counts one.
    Count,
    /// Waits for, then destroys, its own group: both refused (they could
    /// never end). With no group (a join's branch): NULL.
    WaitOwn,
    /// A join of two counting tasks, on its own pool (NULL).
    Join,
    /// Spawns a counting task into its own group.
    SpawnChild,
    /// Creates a group on its pool, spawns two counting tasks, waits,
    /// destroys.
    NestedGroup,
    /// A parallel loop over `0..n` on its pool.
    Loop(u8),
    /// Calls with garbage handles and NULL outputs.
    Garbage,
    /// `terroir_current_worker` and the pool's queries.
    Queries,
}

/// A task's argument: what it does, its group (0: none) and the counter of
/// the input's counting tasks.
pub(crate) struct TaskCtx {
    pub(crate) kind: TaskKind,
    pub(crate) group: usize,
    pub(crate) count: *const AtomicUsize,
}

pub(crate) unsafe extern "C" fn count_task(arg: *mut c_void) {
    // SAFETY: a counting task's argument is the input's counter, which
    // outlives every task (the input waits for all of them).
    let count = unsafe { &*(arg as *const AtomicUsize) };
    count.fetch_add(1, Ordering::Relaxed);
}

pub(crate) unsafe extern "C" fn ctx_task(arg: *mut c_void) {
    // SAFETY: the argument is a `TaskCtx` of the input's arena, which
    // outlives every task.
    let ctx = unsafe { &*(arg as *const TaskCtx) };
    run_kind(ctx.kind, ctx.group, ctx.count);
}

pub(crate) unsafe extern "C" fn loop_body(begin: usize, end: usize, arg: *mut c_void) {
    assert!(
        begin < end,
        "a loop body got the empty range {begin}..{end}"
    );
    // SAFETY: the argument is the loop's coverage array, alive until the
    // loop returns.
    let cover = unsafe { &*(arg as *const Vec<AtomicUsize>) };
    for c in &cover[begin..end] {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs a parallel loop over `begin..end` with `options` on `pool` and
/// checks its code against `errors`; when it succeeded, that it covered
/// every index exactly once.
pub(crate) fn run_loop(
    pool: *mut TerroirPool,
    begin: usize,
    end: usize,
    grain: usize,
    options: *const TerroirForOptions,
    errors: &[(bool, c_int)],
    null_fn: bool,
) {
    let cover: Vec<AtomicUsize> = (0..end.max(begin)).map(|_| AtomicUsize::new(0)).collect();
    let f: TerroirRangeFn = if null_fn { None } else { Some(loop_body) };
    let mut errors = errors.to_vec();
    errors.push((null_fn, NULL_POINTER));
    errors.push((begin > end, INVALID_ARGUMENT));
    // SAFETY: the body is safe to call on any sub-range from any thread;
    // `options` is NULL or a struct of its `size` bytes (the caller's).
    let code = unsafe {
        terroir_parallel_for(
            pool,
            begin,
            end,
            grain,
            f,
            &cover as *const Vec<AtomicUsize> as *mut c_void,
            options,
        )
    };
    expect("terroir_parallel_for", code, &allowed(&errors));
    if code == OK {
        for (i, c) in cover.iter().enumerate() {
            let want = usize::from(i >= begin && i < end);
            assert_eq!(
                c.load(Ordering::Relaxed),
                want,
                "index {i} of {begin}..{end}"
            );
        }
    }
}

/// A join of two counting tasks on `pool`: both ran when it returns OK.
pub(crate) fn join_counts(pool: *mut TerroirPool, errors: &[(bool, c_int)]) {
    let count = AtomicUsize::new(0);
    let arg = &count as *const AtomicUsize as *mut c_void;
    // SAFETY: counting tasks are safe to call from any thread.
    let code = unsafe { terroir_join(pool, Some(count_task), arg, Some(count_task), arg) };
    expect("terroir_join", code, &allowed(errors));
    if code == OK {
        assert_eq!(
            count.load(Ordering::Relaxed),
            2,
            "a join returned before its tasks ran"
        );
    }
}

pub(crate) fn run_kind(kind: TaskKind, group: usize, count: *const AtomicUsize) {
    let g = group as *mut TerroirGroup;
    match kind {
        TaskKind::Count => {
            // SAFETY: `count` is the input's counter.
            unsafe { count_task(count as *mut c_void) };
        }
        TaskKind::WaitOwn => {
            // A group's own task: the wait could never end. (While the
            // input destroys the group, its handle may be gone already.)
            let own = [WOULD_DEADLOCK, INVALID_HANDLE];
            let code = group_wait(g);
            expect(
                "terroir_group_wait (own task)",
                code,
                if g.is_null() { &[NULL_POINTER] } else { &own },
            );
            let code = group_destroy(g);
            expect(
                "terroir_group_destroy (own task)",
                code,
                if g.is_null() { &[NULL_POINTER] } else { &own },
            );
        }
        TaskKind::Join => join_counts(std::ptr::null_mut(), &[]),
        TaskKind::SpawnChild => {
            if g.is_null() {
                return;
            }
            // SAFETY: a counting task; the counter outlives it.
            let code = unsafe {
                terroir_group_spawn(g, Some(count_task), count as *mut c_void, std::ptr::null())
            };
            // OK, or the handle is gone (the input destroys the group).
            expect(
                "terroir_group_spawn (own task)",
                code,
                &[OK, INVALID_HANDLE],
            );
        }
        TaskKind::NestedGroup => {
            let mut inner: *mut TerroirGroup = std::ptr::null_mut();
            // SAFETY: `inner` is writable.
            let code = unsafe { terroir_group_create(std::ptr::null_mut(), &mut inner) };
            expect("terroir_group_create (in a task)", code, &[OK]);
            for _ in 0..2 {
                // SAFETY: a counting task; the counter outlives it.
                let code = unsafe {
                    terroir_group_spawn(
                        inner,
                        Some(count_task),
                        count as *mut c_void,
                        std::ptr::null(),
                    )
                };
                expect("terroir_group_spawn (in a task)", code, &[OK]);
            }
            expect("terroir_group_wait (in a task)", group_wait(inner), &[OK]);
            expect(
                "terroir_group_destroy (in a task)",
                group_destroy(inner),
                &[OK],
            );
            expect(
                "terroir_group_destroy (twice)",
                group_destroy(inner),
                &[INVALID_HANDLE],
            );
        }
        TaskKind::Loop(n) => {
            run_loop(
                std::ptr::null_mut(),
                0,
                usize::from(n),
                0,
                std::ptr::null(),
                &[],
                false,
            );
        }
        TaskKind::Garbage => {
            for h in GARBAGE_IN_TASK {
                expect(
                    "terroir_group_wait (garbage)",
                    group_wait(h as *mut _),
                    &[INVALID_HANDLE],
                );
                expect(
                    "terroir_group_destroy (garbage)",
                    group_destroy(h as *mut _),
                    &[INVALID_HANDLE],
                );
                let mut out = 0usize;
                // SAFETY: `out` is writable.
                let code = unsafe { terroir_pool_num_workers(h as *mut _, &mut out) };
                expect(
                    "terroir_pool_num_workers (garbage)",
                    code,
                    &[INVALID_HANDLE],
                );
                join_counts(h as *mut _, &[(true, INVALID_HANDLE)]);
            }
            // SAFETY: NULL outputs are reported, never written.
            let code = unsafe { terroir_current_worker(std::ptr::null_mut()) };
            expect("terroir_current_worker (NULL)", code, &[NULL_POINTER]);
        }
        TaskKind::Queries => {
            let (mut index, mut workers) = (usize::MAX, 0usize);
            // SAFETY: both outputs are writable.
            unsafe {
                expect(
                    "terroir_current_worker (in a task)",
                    terroir_current_worker(&mut index),
                    &[OK],
                );
                expect(
                    "terroir_pool_num_workers (in a task)",
                    terroir_pool_num_workers(std::ptr::null_mut(), &mut workers),
                    &[OK],
                );
            }
            assert!(index < workers, "worker {index} of {workers}");
        }
    }
}
