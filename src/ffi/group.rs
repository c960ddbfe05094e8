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
//! Tasks that run in a wait's scope are counted by the scope (they cost the
//! group no atomic operation). A wait loops: run the queue in a scope;
//! when the queue is empty, no other wait runs a batch and no task started
//! from outside is unfinished, return; when only such tasks remain, block
//! on a condition variable. A worker blocks there only while another
//! wait's batch of the same group runs (on another worker: a wait from
//! work stacked on top of the group's own batch is refused with
//! `WouldDeadlock`, since it could never end) or while tasks that a thread
//! outside the pool spawned are unfinished.
//!
//! [`ThreadPool::spawn_on`]: crate::ThreadPool::spawn_on

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::context::{with_frame, CTask, Ctx, CtxPtr};
use super::error::{call, Error, TerroirError};
use super::handle::{HandleTable, LocalFree};
use super::memory::{whole_allocation_place, Bytes};
use super::pool::{handle_ptr, resolve, PoolEntry, TerroirPool, TerroirTaskFn};
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

/// Where a task wants to run. How the pool honours it is its policy:
/// `FLAT` and `HIERARCHICAL` ignore places, `LOCALITY` treats them as hints
/// (strict ones stay strict), `STRICT_LOCALITY` makes every node or worker
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
    /// Handed to the wait's scope already (see `Group::scope_batch`).
    Taken,
}

struct GroupState {
    queue: Vec<Queued>,
    /// Waits running a batch of the queue in a scope (whose tasks are
    /// counted by the scope, not by the group).
    batches: usize,
    /// Waiters blocked on the condition variable.
    blocked: usize,
}

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

/// A live group: what a group handle stands for.
pub(crate) struct Group {
    pool: Arc<PoolEntry>,
    handle: usize,
    /// Tasks started from outside the pool and not finished. (Tasks that
    /// run in a wait's scope are counted by the scope.)
    started: AtomicUsize,
    /// Whether a task was ever spawned into the group. Set by
    /// [`Group::spawn`], which runs under the group's handle-table slot
    /// lock, so a check under that lock (or ordered after the spawn) sees
    /// it: a group that never had a task is idle without a look at its
    /// state (most groups of a task tree are a leaf's, and empty).
    used: AtomicBool,
    state: Mutex<GroupState>,
    wake: Condvar,
}

thread_local!(static FREE_GROUP_SLOTS: RefCell<LocalFree> = const { RefCell::new(LocalFree::new()) });
static GROUPS: HandleTable<Group> = HandleTable::new("group", &FREE_GROUP_SLOTS);

/// A group pointer for the tasks of a wait's scope, which need no count.
#[derive(Clone, Copy)]
struct GroupPtr(*const Group);

// SAFETY: a `GroupPtr` is only used by tasks of a wait's scope, and the
// waiter holds an `Arc` of the group until the scope (which waits for those
// tasks) has ended; the group is only accessed through `&` (it is Sync).
unsafe impl Send for GroupPtr {}

impl GroupPtr {
    fn get(&self) -> &Group {
        // SAFETY: see the `Send` impl: the group outlives the scope whose
        // task holds this pointer.
        unsafe { &*self.0 }
    }

    /// A task started from outside the pool, claimed by the scope `scope`.
    fn run_started(self, task: CTask, scope: &Scope<'_>, parent: CtxPtr) {
        self.get().run_started(task, scope_ptr(scope), parent);
    }

    /// Runs a task of the scope `scope` in a frame of this group.
    fn run(self, task: CTask, scope: &Scope<'_>, parent: CtxPtr) {
        let group = self.get();
        let frame = Ctx {
            pool: Arc::as_ptr(&group.pool),
            group: group.handle,
            scope: scope_ptr(scope),
            parent: parent.get(),
        };
        with_entered(group.handle, || with_frame(&frame, || task.run()));
    }
}

impl Group {
    fn state(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn spawn(self: &Arc<Self>, task: CTask, place: Place) {
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        let here = CtxPtr::current();
        // Inside a task of this group that runs in a wait's scope: spawn
        // into that scope.
        if let Some(frame) = here
            .chain()
            .find(|c| c.group == self.handle && !c.scope.is_null())
        {
            // SAFETY: the frame's task runs in this scope and is not done
            // (it is running this code, or waiting for the join branch that
            // does), so the scope, which waits for it, is alive.
            let scope = unsafe { &*frame.scope };
            self.spawn_in(scope, task, &place, CtxPtr::from_raw(frame.parent));
            return;
        }
        // C code in a frame runs on a worker of the frame's pool.
        if here
            .pool()
            .is_some_and(|p| ptr::eq(p, Arc::as_ptr(&self.pool)))
            || self.pool.pool.current_thread_index().is_some()
        {
            self.enqueue(Queued::Later(task, place));
        } else {
            self.started.fetch_add(1, Ordering::AcqRel);
            let started = Arc::new(Started {
                task,
                place,
                taken: AtomicBool::new(false),
            });
            self.enqueue(Queued::Started(Arc::clone(&started)));
            let group = Arc::clone(self);
            let place = started.place.clone();
            self.pool.pool.spawn_on(&place, move || {
                if started.take() {
                    group.run_started(started.task, ptr::null(), CtxPtr::NULL);
                }
            });
        }
    }

    fn enqueue(&self, q: Queued) {
        let mut st = self.state();
        st.queue.push(q);
        if st.blocked > 0 {
            self.wake.notify_all();
        }
    }

    /// Spawns `task` into `scope` (a wait's scope of this group); its frame
    /// gets `parent` (the waiter's frame) as parent.
    fn spawn_in(&self, scope: &Scope<'_>, task: CTask, place: &Place, parent: CtxPtr) {
        let group = GroupPtr(self);
        scope.spawn_on(place, move |s| group.run(task, s, parent));
    }

    /// Runs a task started from outside the pool in a frame of this group
    /// (in `scope` when a wait claimed it), then counts it done.
    fn run_started(&self, task: CTask, scope: *const Scope<'static>, parent: CtxPtr) {
        struct Done<'a>(&'a Group);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                if self.0.started.fetch_sub(1, Ordering::AcqRel) == 1 {
                    let st = self.0.state();
                    if st.blocked > 0 {
                        self.0.wake.notify_all();
                    }
                }
            }
        }
        let _done = Done(self);
        let frame = Ctx {
            pool: Arc::as_ptr(&self.pool),
            group: self.handle,
            scope,
            parent: parent.get(),
        };
        with_entered(self.handle, || with_frame(&frame, || task.run()));
    }

    /// Whether no task of the group is queued, running in a wait's scope,
    /// or started from outside: then no task of it can be running either.
    fn idle(st: &GroupState, started: &AtomicUsize) -> bool {
        st.queue.is_empty() && st.batches == 0 && started.load(Ordering::Acquire) == 0
    }

    fn is_idle(&self) -> bool {
        !self.used.load(Ordering::Relaxed) || Self::idle(&self.state(), &self.started)
    }

    fn wait(self: &Arc<Self>) -> Result<(), Error> {
        // Nothing to wait for, and the caller cannot be one of the group's
        // tasks (none is running).
        if !self.used.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut st = self.state();
        if Self::idle(&st, &self.started) {
            return Ok(());
        }
        let here = CtxPtr::current();
        if here.chain().any(|c| c.group == self.handle) {
            return Err(Error::new(
                TerroirError::WouldDeadlock,
                format!(
                    "group {:#x} is waited for from inside one of its own tasks (or from work \
                     such a task waits for): the wait could never end",
                    self.handle
                ),
            ));
        }
        // Work this thread took while one of the group's tasks or batches
        // waited lower on its own stack (for a stolen join branch or a
        // scope): that task or batch cannot end before this wait does.
        if entered(self.handle) {
            return Err(Error::new(
                TerroirError::WouldDeadlock,
                format!(
                    "group {:#x} is waited for by work that this worker runs on top of one of \
                     the group's own tasks or batches (it took the work while they waited): \
                     they cannot end before this wait does",
                    self.handle
                ),
            ));
        }
        loop {
            if !st.queue.is_empty() {
                let batch = std::mem::take(&mut st.queue);
                st.batches += 1;
                drop(st);
                let done = BatchDone(self);
                self.run_batch(batch, here);
                std::mem::forget(done);
                st = self.state();
                BatchDone::finish(self, &mut st);
                continue;
            }
            if Self::idle(&st, &self.started) {
                return Ok(());
            }
            st.blocked += 1;
            st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            st.blocked -= 1;
        }
    }

    /// Whether the waiter whose frame is `here` is a worker of the group's
    /// pool, so that a batch runs on its own stack.
    fn runs_here(&self, here: CtxPtr) -> bool {
        here.pool()
            .is_some_and(|p| ptr::eq(p, Arc::as_ptr(&self.pool)))
    }

    /// Starts (or claims) the queued tasks in a scope on a worker of the
    /// pool, and returns when they and everything spawned into the scope
    /// are done. `here` is the waiter's frame.
    fn run_batch(&self, batch: Vec<Queued>, here: CtxPtr) {
        if self.runs_here(here) {
            // On a worker of the pool already, in a frame of it.
            with_entered(self.handle, || self.scope_batch(batch, here));
        } else {
            super::pool::enter(&self.pool, here, || {
                with_entered(self.handle, || self.scope_batch(batch, CtxPtr::current()))
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
    fn scope_batch(&self, mut batch: Vec<Queued>, here: CtxPtr) {
        crate::scope(|s| {
            for q in &mut batch {
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
                        let group = GroupPtr(self);
                        let place = started.place.clone();
                        s.spawn_on(&place, move |s| {
                            if started.take() {
                                group.run_started(started.task, s, here);
                            }
                        });
                    }
                    Queued::Taken => {}
                }
            }
            self.join_batch(&batch, s, here);
        });
    }

    /// Runs the plain `Later` tasks of `batch` in the scope `s` (the wait's)
    /// by halving the slice with `join`.
    fn join_batch(&self, batch: &[Queued], s: &Scope<'_>, here: CtxPtr) {
        match batch {
            [] => {}
            [Queued::Later(task, _)] => GroupPtr(self).run(*task, s, here),
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

/// Counts a batch done if it unwinds (the normal path calls
/// [`BatchDone::finish`] itself, with the lock it takes anyway) and wakes
/// other waiters.
struct BatchDone<'a>(&'a Group);

impl BatchDone<'_> {
    fn finish(group: &Group, st: &mut GroupState) {
        st.batches -= 1;
        if st.blocked > 0 {
            group.wake.notify_all();
        }
    }
}

impl Drop for BatchDone<'_> {
    fn drop(&mut self) {
        let mut st = self.0.state();
        BatchDone::finish(self.0, &mut st);
    }
}

/// A scope pointer for a frame. Only `'static` closures are ever spawned
/// through it (see `Group::spawn`), so forgetting the lifetime is harmless;
/// it is dereferenced only while the scope is alive.
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
        let handle = GROUPS.insert(|handle| Group {
            pool,
            handle,
            started: AtomicUsize::new(0),
            used: AtomicBool::new(false),
            state: Mutex::new(GroupState {
                queue: Vec::new(),
                batches: 0,
                blocked: 0,
            }),
            wake: Condvar::new(),
        })?;
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
        GROUPS.with(group.addr(), |group| {
            let place = to_place(&group.pool, place)?;
            group.spawn(CTask::new(f, arg), place);
            Ok(())
        })
    })
}

/// Waits until every task spawned into `group` (including tasks spawned by
/// its tasks) is done. A worker that waits runs the group's tasks and
/// steals other work meanwhile; it never blocks a worker for tasks spawned
/// from inside the pool.
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
        GROUPS.get(group.addr())?.wait()
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
        let handle = group.addr();
        // A group with nothing to wait for goes at once (one lookup); the
        // others are waited for, then removed once idle (under the slot
        // lock: a racing thread that spawned between the wait and the
        // removal makes us wait again).
        let mut removed = GROUPS.remove_if(handle, Group::is_idle)?;
        while let Err(group) = removed {
            group.wait()?;
            removed = GROUPS.remove_if(handle, Group::is_idle)?;
        }
        Ok(())
    })
}
