//! Task groups: spawn C tasks (each at a place), wait for all of them.
//!
//! A group is a queue of tasks not started yet, a count of the tasks
//! started from outside the pool and not finished, and the pool. How a
//! task starts depends on who spawns it:
//!
//! - **from a task of the group while a wait runs** (the usual nested
//!   fork-join): straight into the scope of that wait, with
//!   [`Scope::spawn_on`];
//! - **from another worker of the group's pool**: queued, and started by
//!   the next `terroir_group_wait`, which runs the queue in a
//!   [`crate::scope`] on the waiting worker (tasks with no place by a tree
//!   of [`crate::join`]s, placed ones spawned): the waiter runs tasks and
//!   steals others, so nested groups never block a worker (a blocked
//!   worker in a nested wait is how task libraries deadlock on small
//!   pools). `spawn … spawn … wait` code loses little by this: its tasks
//!   become visible to thieves at the wait rather than at the spawn;
//! - **from a thread outside the pool** (the C program's main thread):
//!   started at once with the pool's [`ThreadPool::spawn_on`] (a `'static`
//!   job), counted, and also queued: the wait's scope spawns a claim for
//!   it, and whichever of the two runs first takes the task (an atomic
//!   flag), so the waiter helps with those too.
//!
//! A group lives in its handle's slot (see `handle.rs`), under the slot's
//! lock: creating or spawning takes that one lock once, and so does
//! destroying an idle group; the queue's capacity serves the slot's next
//! group (up to a small capacity). Tasks that run in a wait's scope are
//! counted by the scope (they cost the group no atomic operation). A wait
//! loops: run the queue in a scope (with the lock let go); when the queue
//! is empty, no other wait runs a batch and no task started from outside
//! is unfinished, return; when only such tasks remain (another wait's batch
//! runs, or tasks that a thread outside the pool spawned are unfinished),
//! wait for a change. A thread outside every pool blocks on the slot's
//! condition variable; a worker (of any pool) never blocks: it runs other
//! work until a latch it listed in the group is set, since the task it
//! waits for may be placed on it. (A wait from work stacked on top of the
//! group's own task or batch is refused with `WouldDeadlock`, since it
//! could never end.)
//!
//! [`ThreadPool::spawn_on`]: crate::ThreadPool::spawn_on

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::context::{with_frame, CTask, Ctx, CtxPtr};
use super::error::{call, Error, TerroirError};
use super::handle::{LocalFree, SlotGuard, Slots};
use super::memory::{whole_allocation_place, Bytes};
use super::pool::{handle_ptr, resolve, PoolEntry, TerroirPool, TerroirTaskFn};
use crate::sched::{Latch, WorkerLatch, WorkerThread};
use crate::{Place, Scope};

/// An opaque task-group handle (a key into terroir's handle table, like
/// `terroir_pool`).
pub struct TerroirGroup {
    _opaque: [u8; 0],
}

/// What a `terroir_place` names (its `kind` field).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerroirPlaceKind {
    /// No preference.
    Any = 0,
    /// The node `node` (an OS node number).
    Node = 1,
    /// The worker `worker` of the pool.
    Worker = 2,
    /// The node holding most of `data[0 .. len)`.
    Data = 3,
}

/// Where a task wants to run. A strict place is honoured under every
/// policy; a place that is not strict is a hint, and the pool's policy says
/// what happens to it: `FLAT` and `HIERARCHICAL` ignore hints, `LOCALITY`
/// honours them as hints, `STRICT_LOCALITY` makes every node or worker
/// place strict.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TerroirPlace {
    /// A `terroir_place_kind` value.
    pub kind: u32,
    /// For `TERROIR_PLACE_KIND_NODE`: the OS node number (see
    /// `terroir_pool_node_id`).
    pub node: u32,
    /// For `TERROIR_PLACE_KIND_WORKER`: the worker index.
    pub worker: usize,
    /// For `TERROIR_PLACE_KIND_DATA`: the first byte of the data. If the
    /// range is exactly an allocation of `terroir_alloc_*`, its node is
    /// known without a system call; otherwise one page-location query
    /// (every 16th page) finds the node holding most of it, and data not
    /// touched yet gives no preference.
    pub data: *const c_void,
    /// For `TERROIR_PLACE_KIND_DATA`: the length of the data in bytes.
    pub len: usize,
    /// Never run the task anywhere else (under the `LOCALITY` policies).
    pub strict: bool,
}

/// The Rust place for a C place on `pool`.
fn to_place(pool: &PoolEntry, place: Option<&TerroirPlace>) -> Result<Place, Error> {
    let Some(p) = place else {
        return Ok(Place::anywhere());
    };
    let made = match p.kind {
        k if k == TerroirPlaceKind::Any as u32 => Place::anywhere(),
        k if k == TerroirPlaceKind::Node as u32 => {
            let nodes = pool.pool.topology().nodes();
            let index = nodes
                .iter()
                .position(|n| n.id().os_index() == p.node)
                .ok_or_else(|| {
                    let ids: Vec<String> = nodes
                        .iter()
                        .map(|n| n.id().os_index().to_string())
                        .collect();
                    Error::new(
                        TerroirError::InvalidNode,
                        format!(
                            "place->node = {} is not a node of the pool (its nodes: {})",
                            p.node,
                            ids.join(", ")
                        ),
                    )
                })?;
            pool.pool.node(index)?
        }
        k if k == TerroirPlaceKind::Worker as u32 => pool.pool.worker(p.worker)?,
        k if k == TerroirPlaceKind::Data as u32 => {
            if p.data.is_null() {
                return Err(Error::null("place->data"));
            }
            if p.len == 0 {
                return Err(Error::new(TerroirError::ZeroSize, "place->len is 0"));
            }
            match whole_allocation_place(p.data, p.len) {
                Some(place) => place,
                None => {
                    // SAFETY: non-null, and the C caller promises that
                    // `data .. data + len` is memory of this process. The
                    // element type allows uninitialised bytes and writes
                    // by other threads meanwhile; `Place::slice` reads no
                    // element, only the address and length.
                    let bytes =
                        unsafe { std::slice::from_raw_parts(p.data.cast::<Bytes>(), p.len) };
                    Place::slice(bytes)?
                }
            }
        }
        k => {
            return Err(Error::invalid(format!(
                "place->kind = {k} is not a terroir_place_kind (0 to 3)"
            )))
        }
    };
    Ok(if p.strict { made.strict() } else { made })
}

/// A task started at once (spawned from outside the pool), which the
/// wait's scope may also claim.
struct Started {
    task: CTask,
    place: Place,
    taken: AtomicBool,
}

impl Started {
    fn take(&self) -> bool {
        !self.taken.swap(true, Ordering::AcqRel)
    }
}

enum Queued {
    /// Not started: the next wait starts it.
    Later(CTask, Place),
    /// Started with a `'static` job; the wait claims it if that job has not.
    Started(Arc<Started>),
    /// Handed to the wait's scope already (see `GroupRef::scope_batch`).
    Taken,
}

/// A group's slot payload: the group itself, under its slot's lock (one
/// lock per call, and a queue whose capacity the slot's next group reuses).
#[derive(Default)]
struct GroupState {
    /// The group's pool; `None` while the slot is free.
    pool: Option<Arc<PoolEntry>>,
    queue: Vec<Queued>,
    /// Waits running a batch of the queue in a scope (whose tasks are
    /// counted by the scope, not by the group).
    batches: usize,
    /// Tasks started from outside the pool and not finished.
    started: usize,
    /// Whether a task was ever spawned into the group: most groups of a
    /// task tree are a leaf's, and empty.
    used: bool,
    /// Threads blocked on the slot's condition variable. A count of the
    /// slot, not of the group: a waiter woken after its group was
    /// destroyed (and the slot reused) still takes itself off it.
    blocked: usize,
    /// The latches of pool workers that wait for the group while running
    /// other work (a worker never blocks on the condition variable). Set
    /// and emptied by every change that may let a waiter go on, so it is
    /// empty whenever the group is idle.
    latches: Vec<WaiterLatch>,
}

/// A waiting worker's latch, on that worker's stack.
struct WaiterLatch(*const WorkerLatch);

// SAFETY: the latch is only set (an atomic operation on a `Sync` latch),
// from any thread, while its worker waits for it; see `wake_waiters`.
unsafe impl Send for WaiterLatch {}

impl GroupState {
    /// Whether no task of the group is queued, running in a wait's scope,
    /// or started from outside: then no task of it can be running either.
    /// While it is not idle, the group cannot be destroyed, so its slot
    /// (and the pool it holds) stays put for the tasks that refer to it.
    fn idle(&self) -> bool {
        !self.used || (self.queue.is_empty() && self.batches == 0 && self.started == 0)
    }

    /// Wakes every waiter: the threads blocked on the condition variable,
    /// and the workers working while they wait (their latches are set and
    /// taken off the list, once each).
    fn wake_waiters(g: &mut SlotGuard<GroupState>) {
        if g.blocked > 0 {
            g.notify_all();
        }
        for latch in g.latches.drain(..) {
            // SAFETY: a listed latch is unset and its worker waits for it in
            // `wait_busy` (which unlists it itself only if that wait
            // unwinds, under this lock), so it is alive until this set.
            unsafe { WorkerLatch::set(latch.0) };
        }
    }
}

/// The most queue capacity a group's slot keeps for its next group: enough
/// for a task tree's fan-out; a group that queued more gives it back.
const KEPT_CAPACITY: usize = 64;

/// One group on a thread's list of entered groups (see [`ENTERED`]): a
/// node on the stack of the function that runs the group's task or batch.
struct Entered {
    group: usize,
    below: *const Entered,
}

thread_local! {
    /// The innermost of the groups whose tasks or batches run on this
    /// thread: one node per task of a group that this thread runs, and per
    /// batch of a group whose wait runs here, linked to the one below. A
    /// wait for a group listed here could never end (the task or batch is
    /// lower on this very stack and cannot return before the wait does),
    /// whichever way the work that waits got onto this stack (stolen while
    /// a join or scope waited, or run inline).
    static ENTERED: Cell<*const Entered> = const { Cell::new(ptr::null()) };
}

/// Runs `f` with `group` listed in [`ENTERED`] (a thread-local read and two
/// writes: no lock, no allocation), and unlisted after, also if `f`
/// unwinds.
#[inline]
fn with_entered<R>(group: usize, f: impl FnOnce() -> R) -> R {
    struct Unlink<'a>(&'a Cell<*const Entered>, *const Entered);
    impl Drop for Unlink<'_> {
        fn drop(&mut self) {
            self.0.set(self.1);
        }
    }
    // One thread-local access: the cell's address serves link and unlink.
    ENTERED.with(|head| {
        let below = head.get();
        let node = Entered { group, below };
        head.set(&node);
        // Declared after `node`, so dropped (unlinking it) before `node` is.
        let _unlink = Unlink(head, below);
        f()
    })
}

/// Whether a task or batch of `group` runs lower on this thread's stack.
fn entered(group: usize) -> bool {
    let mut p = ENTERED.try_with(Cell::get).unwrap_or(ptr::null());
    // SAFETY: every node in the list is a local of a `with_entered` call
    // that is still running on this thread (each unlinks its node before
    // the node goes out of scope, also on unwinding), so it is alive.
    while let Some(node) = unsafe { p.as_ref() } {
        if node.group == group {
            return true;
        }
        p = node.below;
    }
    false
}

thread_local!(static FREE_GROUP_SLOTS: RefCell<LocalFree> = const { RefCell::new(LocalFree::new()) });
static GROUPS: Slots<GroupState> = Slots::new("group", &FREE_GROUP_SLOTS);

/// What the group's tasks need to know of it without its lock: its handle
/// (for frames) and its pool.
#[derive(Clone, Copy)]
struct GroupRef {
    handle: usize,
    pool: *const PoolEntry,
}

// SAFETY: a `GroupRef` is only used while its group cannot be destroyed
// (a batch of it runs, or a task started from outside is counted; see
// `GroupState::idle`), so the pool that the group's slot holds an `Arc`
// of is alive; the pool is only accessed through `&` (it is Sync).
unsafe impl Send for GroupRef {}
// SAFETY: as for `Send`; a `GroupRef` is a copy of two plain values.
unsafe impl Sync for GroupRef {}

impl GroupRef {
    fn of(g: &SlotGuard<GroupState>) -> GroupRef {
        GroupRef {
            handle: g.handle(),
            pool: g.pool.as_ref().map_or(ptr::null(), Arc::as_ptr),
        }
    }

    fn pool(&self) -> &PoolEntry {
        // SAFETY: see the `Send` impl: the group, and so its pool, outlives
        // every use of this `GroupRef`.
        unsafe { &*self.pool }
    }

    /// Runs a task in a frame of this group, in `scope` (a wait's scope of
    /// the group, or null for a task started from outside the pool).
    fn run(self, task: CTask, scope: *const Scope<'static>, parent: CtxPtr) {
        let frame = Ctx {
            pool: self.pool,
            group: self.handle,
            scope,
            parent: parent.get(),
        };
        with_entered(self.handle, || with_frame(&frame, || task.run()));
    }

    /// Runs a task started from outside the pool (in `scope` when a wait
    /// claimed it), then counts it done.
    fn run_started(self, task: CTask, scope: *const Scope<'static>, parent: CtxPtr) {
        struct Done(usize);
        impl Drop for Done {
            fn drop(&mut self) {
                // Live: the task was counted, so the group is not idle.
                if let Ok(mut g) = GROUPS.lock(self.0) {
                    g.started -= 1;
                    // Only the last one can make the group idle.
                    if g.started == 0 {
                        GroupState::wake_waiters(&mut g);
                    }
                }
            }
        }
        let _done = Done(self.handle);
        self.run(task, scope, parent);
    }

    /// Spawns `task` into `scope` (a wait's scope of this group); its frame
    /// gets `parent` (the waiter's frame) as parent.
    fn spawn_in(self, scope: &Scope<'_>, task: CTask, place: &Place, parent: CtxPtr) {
        scope.spawn_on(place, move |s| self.run(task, scope_ptr(s), parent));
    }

    /// Whether the waiter whose frame is `here` is a worker of the group's
    /// pool, so that a batch runs on its own stack.
    fn runs_here(self, here: CtxPtr) -> bool {
        here.pool().is_some_and(|p| ptr::eq(p, self.pool))
    }

    /// Starts (or claims) the queued tasks in a scope on a worker of the
    /// pool, and returns when they and everything spawned into the scope
    /// are done. `here` is the waiter's frame.
    fn run_batch(self, batch: &mut [Queued], here: CtxPtr) {
        if self.runs_here(here) {
            // On a worker of the pool already, in a frame of it.
            with_entered(self.handle, || self.scope_batch(batch, here));
        } else {
            // Listed on both stacks: the waiting thread (a worker of
            // another pool) runs other work while its install waits, and a
            // wait for this group from that work could never end.
            with_entered(self.handle, || {
                super::pool::enter(self.pool(), here, || {
                    with_entered(self.handle, || self.scope_batch(batch, CtxPtr::current()))
                })
            });
        }
    }

    /// `run_batch` on a worker of the pool; `here` is the waiter's frame.
    ///
    /// Placed tasks and claims are spawned into the scope first (a place
    /// needs a spawn to be honoured). The tasks with no place are then run
    /// by a tree of `join`s inside the scope's body: a join branch costs a
    /// few nanoseconds where a spawned job costs an allocation and a deque
    /// round trip, and an idle worker still takes half of what is left.
    /// Their frames name the scope, so what they spawn into the group goes
    /// into it as before.
    fn scope_batch(self, batch: &mut [Queued], here: CtxPtr) {
        crate::scope(|s| {
            for q in batch.iter_mut() {
                match q {
                    Queued::Later(_, place) if place.is_plain() => {}
                    Queued::Later(task, place) => {
                        self.spawn_in(s, *task, place, here);
                        *q = Queued::Taken;
                    }
                    Queued::Started(_) => {
                        let Queued::Started(started) = std::mem::replace(q, Queued::Taken) else {
                            unreachable!("matched Started above");
                        };
                        let place = started.place.clone();
                        s.spawn_on(&place, move |s| {
                            if started.take() {
                                self.run_started(started.task, scope_ptr(s), here);
                            }
                        });
                    }
                    Queued::Taken => {}
                }
            }
            self.join_batch(batch, s, here);
        });
    }

    /// Runs the plain `Later` tasks of `batch` in the scope `s` (the wait's)
    /// by halving the slice with `join`.
    fn join_batch(self, batch: &[Queued], s: &Scope<'_>, here: CtxPtr) {
        match batch {
            [] => {}
            [Queued::Later(task, _)] => self.run(*task, scope_ptr(s), here),
            [_] => {}
            _ => {
                let (a, b) = batch.split_at(batch.len() / 2);
                crate::join(
                    || self.join_batch(a, s, here),
                    || self.join_batch(b, s, here),
                );
            }
        }
    }
}

/// Spawns `task` at `place` into the locked group `g`.
fn spawn(g: &mut SlotGuard<GroupState>, task: CTask, place: Place) {
    g.used = true;
    let group = GroupRef::of(g);
    let here = CtxPtr::current();
    // Inside a task of this group that runs in a wait's scope: spawn into
    // that scope.
    if let Some(frame) = here
        .chain()
        .find(|c| c.group == group.handle && !c.scope.is_null())
    {
        // SAFETY: the frame's task runs in this scope and is not done (it
        // is running this code, or waiting for the join branch that does),
        // so the scope, which waits for it, is alive.
        let scope = unsafe { &*frame.scope };
        group.spawn_in(scope, task, &place, CtxPtr::from_raw(frame.parent));
        return;
    }
    let pool = group.pool();
    // C code in a frame runs on a worker of the frame's pool.
    if here.pool().is_some_and(|p| ptr::eq(p, pool)) || pool.pool.current_thread_index().is_some() {
        g.queue.push(Queued::Later(task, place));
    } else {
        g.started += 1;
        let started = Arc::new(Started {
            task,
            place,
            taken: AtomicBool::new(false),
        });
        g.queue.push(Queued::Started(Arc::clone(&started)));
        let place = started.place.clone();
        pool.pool.spawn_on(&place, move || {
            // Not taken: still counted, so the group is alive.
            if started.take() {
                group.run_started(started.task, ptr::null(), CtxPtr::NULL);
            }
        });
    }
    GroupState::wake_waiters(g);
}

/// Runs the locked group's queue until the group is idle, and returns it
/// locked and idle; `None` if another thread destroyed it meanwhile
/// (which it does only once the group is idle).
#[inline(always)]
fn wait_idle(g: SlotGuard<GroupState>) -> Result<Option<SlotGuard<GroupState>>, Error> {
    // Nothing to wait for, and the caller cannot be one of the group's
    // tasks (none is running).
    if g.idle() {
        return Ok(Some(g));
    }
    wait_busy(g)
}

/// [`wait_idle`] for a group that has tasks.
fn wait_busy(mut g: SlotGuard<GroupState>) -> Result<Option<SlotGuard<GroupState>>, Error> {
    let handle = g.handle();
    let here = CtxPtr::current();
    if here.chain().any(|c| c.group == handle) {
        return Err(Error::new(
            TerroirError::WouldDeadlock,
            format!(
                "group {handle:#x} is waited for from inside one of its own tasks (or from work \
                 such a task waits for): the wait could never end"
            ),
        ));
    }
    // Work this thread took while one of the group's tasks or batches
    // waited lower on its own stack (for a stolen join branch or a scope):
    // that task or batch cannot end before this wait does.
    if entered(handle) {
        return Err(Error::new(
            TerroirError::WouldDeadlock,
            format!(
                "group {handle:#x} is waited for by work that this worker runs on top of one of \
                 the group's own tasks or batches (it took the work while they waited): they \
                 cannot end before this wait does"
            ),
        ));
    }
    loop {
        if !g.queue.is_empty() {
            let mut batch = std::mem::take(&mut g.queue);
            g.batches += 1;
            let group = GroupRef::of(&g);
            let (back, mut batch) = g.unlocked(move || {
                let done = BatchDone(handle);
                group.run_batch(&mut batch, here);
                std::mem::forget(done);
                batch
            });
            g = back;
            g.batches -= 1;
            GroupState::wake_waiters(&mut g);
            // The batch's capacity serves the next spawns.
            if g.queue.capacity() == 0 && batch.capacity() <= KEPT_CAPACITY {
                batch.clear();
                g.queue = batch;
            }
            continue;
        }
        if g.idle() {
            return Ok(Some(g));
        }
        // A worker (of any pool) runs other work while it waits: it might
        // be the very worker that a task of the group is placed on.
        if let Some(worker) = WorkerThread::current() {
            let latch = WorkerLatch::new(worker, true);
            g.latches.push(WaiterLatch(&latch));
            let unlist = Unlist(handle, &latch);
            let (back, ()) = g.released(|| worker.wait_until(&latch));
            std::mem::forget(unlist);
            match back {
                Some(woken) => g = woken,
                None => return Ok(None),
            }
            continue;
        }
        g.blocked += 1;
        match g.wait(|g| g.blocked -= 1) {
            Some(woken) => g = woken,
            None => return Ok(None),
        }
    }
}

/// Takes a waiting worker's latch off its group's list if the wait
/// unwinds before the latch was set (the latch is about to be freed).
struct Unlist(usize, *const WorkerLatch);

impl Drop for Unlist {
    fn drop(&mut self) {
        if let Ok(mut g) = GROUPS.lock(self.0) {
            g.latches.retain(|l| !ptr::eq(l.0, self.1));
        }
    }
}

/// Counts a batch done if it unwinds (the normal path does it under the
/// lock it takes anyway) and wakes other waiters.
struct BatchDone(usize);

impl Drop for BatchDone {
    fn drop(&mut self) {
        // Live: the batch was counted, so the group is not idle.
        if let Ok(mut g) = GROUPS.lock(self.0) {
            g.batches -= 1;
            GroupState::wake_waiters(&mut g);
        }
    }
}

/// A scope pointer for a frame. Only `'static` closures are ever spawned
/// through it (see `spawn`), so forgetting the lifetime is harmless; it is
/// dereferenced only while the scope is alive.
fn scope_ptr(s: &Scope<'_>) -> *const Scope<'static> {
    (s as *const Scope<'_>).cast()
}

/// Creates an empty task group on `pool` (NULL: the current pool, or the
/// global pool outside every pool); `*out` is its handle.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`out`),
/// `TERROIR_ERROR_INVALID_HANDLE` (`pool`).
///
/// # Safety
/// `out` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_group_create(
    pool: *mut TerroirPool,
    out: *mut *mut TerroirGroup,
) -> c_int {
    call("terroir_group_create", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let pool = resolve(pool)?.to_arc();
        let handle = GROUPS
            .insert(|_, g| {
                debug_assert!(g.idle() && g.queue.is_empty() && g.pool.is_none());
                g.pool = Some(pool);
                g.used = false;
            })?
            .handle();
        // SAFETY: non-null, writable (the caller's promise).
        unsafe { out.write(handle_ptr(handle)) };
        Ok(())
    })
}

/// Spawns the task `f(arg)` into `group`, at `place` (NULL: anywhere).
///
/// From a thread outside the pool the task starts at once; from inside the
/// pool it starts at once when spawned by a task of the group during a
/// wait, and otherwise at the next `terroir_group_wait` (which is where
/// `spawn … spawn … wait` code waits anyway). A task may spawn into its
/// own group.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`group`, `f`, `place->data`),
/// `TERROIR_ERROR_INVALID_HANDLE`, `TERROIR_ERROR_INVALID_ARGUMENT` (an
/// unknown place kind), `TERROIR_ERROR_INVALID_NODE` (a node the pool has
/// no worker on), `TERROIR_ERROR_INVALID_WORKER`,
/// `TERROIR_ERROR_ZERO_SIZE` (`place->len`), `TERROIR_ERROR_SYSTEM` (the
/// page-location query of a data place).
///
/// # Safety
/// `f` must be safe to call with `arg` on any thread until the group has
/// been waited for; `place` is NULL or points to a `terroir_place`, whose
/// `data .. data + len` (for a data place) is memory of this process.
#[no_mangle]
pub unsafe extern "C" fn terroir_group_spawn(
    group: *mut TerroirGroup,
    f: TerroirTaskFn,
    arg: *mut c_void,
    place: *const TerroirPlace,
) -> c_int {
    call("terroir_group_spawn", || {
        if group.is_null() {
            return Err(Error::null("group"));
        }
        let f = f.ok_or_else(|| Error::null("f"))?;
        // SAFETY: NULL or a valid place (the caller's promise).
        let place = unsafe { place.as_ref() };
        // Under the slot's lock: spawning calls no C code.
        let mut g = GROUPS.lock(group.addr())?;
        let pool = g.pool.as_ref().expect("a live group has its pool");
        let place = to_place(pool, place)?;
        spawn(&mut g, CTask::new(f, arg), place);
        Ok(())
    })
}

/// Waits until every task spawned into `group` (including tasks spawned by
/// its tasks) is done. A worker that waits runs the group's tasks and
/// steals other work meanwhile: it never blocks, also while the group's
/// tasks run elsewhere. A thread outside the pool runs the group's queued
/// tasks on the pool and blocks only while other threads run the rest.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER`, `TERROIR_ERROR_INVALID_HANDLE`,
/// `TERROIR_ERROR_WOULD_DEADLOCK` when called from one of the group's own
/// tasks (or from a branch of a `terroir_join`, or a task of a group, that
/// such a task waits for), or from work that a worker took while one of
/// the group's waits ran its tasks on that worker: the wait could never
/// end, so it is refused and nothing changes.
///
/// # Safety
/// Any pointer value is accepted: handles are never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn terroir_group_wait(group: *mut TerroirGroup) -> c_int {
    call("terroir_group_wait", || {
        if group.is_null() {
            return Err(Error::null("group"));
        }
        wait_idle(GROUPS.lock(group.addr())?)?;
        Ok(())
    })
}

/// Waits for `group` (as `terroir_group_wait`) and destroys its handle.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER`; `TERROIR_ERROR_INVALID_HANDLE` for
/// a group destroyed already (a double destroy) or a garbage handle;
/// `TERROIR_ERROR_WOULD_DEADLOCK` where `terroir_group_wait` gives it
/// (the group is then not destroyed).
///
/// # Safety
/// Any pointer value is accepted: handles are never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn terroir_group_destroy(group: *mut TerroirGroup) -> c_int {
    call("terroir_group_destroy", || {
        if group.is_null() {
            return Err(Error::null("group"));
        }
        // Waited for under its slot's lock, which is let go only while a
        // batch runs or the waiter blocks, and removed while still held
        // once idle: a racing spawn either lands before (and is waited for)
        // or finds the handle dead.
        let Some(g) = wait_idle(GROUPS.lock(group.addr())?)? else {
            // Another thread destroyed it while this one waited.
            return Err(Error::new(
                TerroirError::InvalidHandle,
                format!(
                    "group handle {:#x} was destroyed by another thread during this destroy",
                    group.addr()
                ),
            ));
        };
        // The pool's `Arc` is dropped outside the lock; a small queue's
        // capacity stays for the slot's next group.
        drop(g.remove(|g| {
            debug_assert!(g.latches.is_empty(), "an idle group has waiting workers");
            if g.queue.capacity() > KEPT_CAPACITY {
                g.queue = Vec::new();
            }
            g.pool.take()
        }));
        Ok(())
    })
}
