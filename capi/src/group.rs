//! Task groups: spawn C tasks (each at a place), wait for all of them.
//!
//! The engine is terroir's task group ([`GroupCore`], the state behind
//! [`TaskGroup`](terroir::TaskGroup)): where tasks start, waits that run
//! other work instead of blocking, the refusal of a wait that could never
//! end, tasks spawned from outside the pool. This file only marshals: a
//! `terroir_group *` is a slot of [`GROUPS`] (a table of `GroupCore`s,
//! never freed) and the epoch the group was opened under; every call
//! checks the epoch (`TERROIR_ERROR_INVALID_HANDLE` for a stale or garbage
//! handle), converts the C place, and maps the engine's errors to codes.
//!
//! A group created by a worker for its own pool (NULL, or the handle of
//! the pool the calling worker belongs to) holds no reference to the pool
//! until another thread uses it, and its worker locks it without an atomic
//! read-modify-write (the owner bias). When that worker destroys it, the
//! worker keeps the slot warm, and its next create opens it again with
//! a check and two stores and no table work (`terroir::__capi::GroupCore::open_warm`);
//! the slots it keeps go back to the table when its thread stops being a
//! worker. So an empty group takes no lock, no atomic read-modify-write and
//! one thread-local read per call.

use std::ffi::{c_int, c_void};

use super::error::{call, Error, TerroirError};
use super::handle::{LocalFree, Table};
use super::memory::{check_range, whole_allocation_accesses, whole_allocation_place, Bytes};
use super::pool::{handle_ptr, with_pool, TerroirPool, TerroirTaskFn};
use super::task::CTask;
use terroir::__capi::{Closed, CoreError, GroupCore, WarmKey};
use terroir::{Access, Place, ThreadPool};

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
    /// Temporal affinity: the worker that last ran a task spawned with the
    /// same key, the pair (`data`, `len`) (`data` is never dereferenced: any
    /// pointer, or an integer cast to one). The first task with a key runs
    /// like an unplaced one. For data reused through caches rather than
    /// pinned in memory.
    After = 4,
    /// Work-pushing: `data` points to an array of `len` `terroir_access`,
    /// the regions the task reads and writes, and the task runs on the node
    /// where they cost least (Σ bytes × NUMA distance, writes counted
    /// twice; regions below the pool's threshold, 10 kB, ignored). When
    /// nothing is left, or the spawner's node is among the cheapest, it
    /// stays on the spawner's node. `len` 0 declares nothing.
    Pushed = 5,
}

/// One region a task declares for a `TERROIR_PLACE_KIND_PUSHED` place.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TerroirAccess {
    /// The first byte. A whole allocation of `terroir_alloc_*` is placed
    /// without a system call (a blocked one share by share); other memory
    /// by one page-location query (every 16th page), and memory not
    /// touched yet has no node.
    pub data: *const c_void,
    /// Its length in bytes.
    pub len: usize,
    /// The task writes the region (counted twice).
    pub write: bool,
}

/// The most regions a pushed place may declare.
const MAX_ACCESSES: usize = 1 << 16;

/// Where a task wants to run: anywhere, a node, a worker, the node of some
/// data, after the last task with the same key, or the node cheapest for
/// the data a task declares (see `terroir_place_kind`). A strict place is
/// honoured under every policy (after and pushed places once resolved); a place that is not strict is a hint, and the pool's policy says
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
    /// touched yet gives no preference. For `TERROIR_PLACE_KIND_AFTER`:
    /// half of the key. For `TERROIR_PLACE_KIND_PUSHED`: the array of
    /// `terroir_access`.
    pub data: *const c_void,
    /// For `TERROIR_PLACE_KIND_DATA`: the length of the data in bytes. For
    /// `TERROIR_PLACE_KIND_AFTER`: the other half of the key. For
    /// `TERROIR_PLACE_KIND_PUSHED`: the number of `terroir_access` in the
    /// array.
    pub len: usize,
    /// Never run the task anywhere else (under the `LOCALITY` policies).
    pub strict: bool,
}

/// The Rust place for a C place on `pool`.
pub(crate) fn to_place(pool: &ThreadPool, place: Option<&TerroirPlace>) -> Result<Place, Error> {
    let Some(p) = place else {
        return Ok(Place::anywhere());
    };
    let made = match p.kind {
        k if k == TerroirPlaceKind::Any as u32 => Place::anywhere(),
        k if k == TerroirPlaceKind::Node as u32 => {
            let nodes = pool.topology().nodes();
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
            pool.node(index)?
        }
        k if k == TerroirPlaceKind::Worker as u32 => pool.worker(p.worker)?,
        k if k == TerroirPlaceKind::Data as u32 => {
            if p.data.is_null() {
                return Err(Error::null("place->data"));
            }
            if p.len == 0 {
                return Err(Error::new(TerroirError::ZeroSize, "place->len is 0"));
            }
            check_range(p.data, p.len, "place->data", "place->len")?;
            match whole_allocation_place(p.data, p.len) {
                Some(place) => place,
                None => {
                    // SAFETY: non-null, at most isize::MAX bytes within the
                    // address space (checked), and the C caller promises that
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
        k if k == TerroirPlaceKind::After as u32 => Place::after((p.data.addr(), p.len)),
        k if k == TerroirPlaceKind::Pushed as u32 => Place::pushed(accesses(p)?),
        k => {
            return Err(Error::invalid(format!(
                "place->kind = {k} is not a terroir_place_kind (0 to 5)"
            )))
        }
    };
    Ok(if p.strict { made.strict() } else { made })
}

/// The regions a pushed place declares (`place->data`, `place->len`
/// entries), checked.
fn accesses(p: &TerroirPlace) -> Result<Vec<Access>, Error> {
    if p.len == 0 {
        return Ok(Vec::new());
    }
    if p.data.is_null() {
        return Err(Error::null("place->data"));
    }
    if p.len > MAX_ACCESSES {
        return Err(Error::invalid(format!(
            "place->len = {} regions: a pushed place declares at most {MAX_ACCESSES}",
            p.len
        )));
    }
    // SAFETY: non-null, and the C caller promises `len` readable
    // `terroir_access` entries there (at most MAX_ACCESSES: no overflow).
    let list = unsafe { std::slice::from_raw_parts(p.data.cast::<TerroirAccess>(), p.len) };
    let mut out = Vec::with_capacity(list.len());
    for (i, a) in list.iter().enumerate() {
        if a.data.is_null() {
            return Err(Error::null(&format!("place->data[{i}].data")));
        }
        if a.len == 0 {
            return Err(Error::new(
                TerroirError::ZeroSize,
                format!("place->data[{i}].len is 0"),
            ));
        }
        check_range(
            a.data,
            a.len,
            &format!("place->data[{i}].data"),
            &format!("place->data[{i}].len"),
        )?;
        match whole_allocation_accesses(a.data, a.len, a.write) {
            Some(found) => out.extend(found),
            None => {
                // SAFETY: as for a data place: non-null, checked range,
                // memory of this process (the caller's promise); only the
                // address and length are read.
                let bytes = unsafe { std::slice::from_raw_parts(a.data.cast::<Bytes>(), a.len) };
                out.push(Access::slice(bytes, a.write)?);
            }
        }
    }
    Ok(out)
}

thread_local!(static FREE_GROUP_SLOTS: LocalFree = const { LocalFree::new() });
/// The group table: one `GroupCore` per slot, reused by the slot's next
/// group under the next epoch.
static GROUPS: Table<GroupCore> = Table::new("group", &FREE_GROUP_SLOTS);

/// The group behind `handle` (its core and the epoch the handle names).
/// Any value is accepted: a garbage handle names an unopened epoch, or a
/// slot that does not exist.
#[inline]
fn lookup(handle: *mut TerroirGroup) -> Result<(&'static GroupCore, u32), Error> {
    let (index, epoch) = Table::<GroupCore>::decode(handle.addr());
    match GROUPS.get(index) {
        Some(core) => Ok((core, epoch)),
        None => Err(GROUPS.invalid(handle.addr())),
    }
}

/// The C error for an engine error on `handle`.
#[cold]
fn group_error(handle: *mut TerroirGroup, e: CoreError) -> Error {
    match e {
        CoreError::Dead | CoreError::ClosedMeanwhile => GROUPS.invalid(handle.addr()),
        CoreError::WouldDeadlock(why) => Error::new(
            TerroirError::WouldDeadlock,
            format!("group {:#x}: {why}", handle.addr()),
        ),
        CoreError::PoolGone => Error::new(
            TerroirError::InvalidHandle,
            format!("group {:#x}: {e}", handle.addr()),
        ),
        CoreError::Place(p) => Error::from(p),
        // A kind terroir added since: its message says what it is.
        e => Error::new(
            TerroirError::InvalidArgument,
            format!("group {:#x}: {e}", handle.addr()),
        ),
    }
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
    // The common case, a worker's group for its own pool, opened again
    // from the groups the worker keeps warm, outside `call`: nothing in it
    // can fail or panic.
    if !out.is_null() {
        let tag = (!pool.is_null()).then(|| pool.addr());
        if let Some(token) = GroupCore::open_warm(tag) {
            // A group's token is its handle (`handle_is_the_token`).
            // SAFETY: non-null, writable (the caller's promise).
            unsafe { out.write(handle_ptr(token as usize)) };
            return TerroirError::Ok as c_int;
        }
    }
    // SAFETY: forwarded.
    unsafe { create_slow(pool, out) }
}

/// How a slot that a worker kept warm goes back to the table (as the
/// worker's thread stops being one).
fn drain_warm(index: u32) {
    GROUPS.put_global(index as usize);
}

/// [`terroir_group_create`] for every other case, and its errors.
///
/// `extern "C"`, so that it cannot unwind (`call` catches every panic
/// anyway): the fast path then jumps to it, with no frame of its own to
/// abort an unwinding from (two instructions a create).
///
/// # Safety
/// As `terroir_group_create`.
#[cold]
#[inline(never)]
unsafe extern "C" fn create_slow(pool: *mut TerroirPool, out: *mut *mut TerroirGroup) -> c_int {
    call("terroir_group_create", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        // A worker that the fast path did not find (`open_warm`): its
        // warm groups all the same.
        if let Some(token) = GroupCore::open_warm_slow((!pool.is_null()).then(|| pool.addr())) {
            // SAFETY: non-null, writable (the caller's promise).
            unsafe { out.write(handle_ptr(token as usize)) };
            return Ok(());
        }
        let (index, core) = GROUPS.take_with(&FREE_GROUP_SLOTS)?;
        // The calling worker's own pool (NULL, or its handle): no lookup,
        // no reference. Otherwise the pool that `pool` stands for.
        let tag = (!pool.is_null()).then(|| pool.addr());
        // Kept warm by the worker when it closes the group: the slot is
        // never freed.
        let warm = u32::try_from(index).ok().map(|key| WarmKey {
            key,
            drain: drain_warm,
        });
        // SAFETY: a free slot, taken by this thread alone; the table's
        // slots are never freed.
        let opened = match unsafe { core.open_here(tag, warm) } {
            Some(epoch) => Ok(Some(epoch)),
            // SAFETY: as above (still closed).
            None => with_pool(pool, |p| Ok(unsafe { core.open_counted(p) })),
        };
        let epoch = match opened {
            Ok(Some(epoch)) => epoch,
            Ok(None) => unreachable!("a free group slot could not be opened"),
            Err(e) => {
                GROUPS.put_with(&FREE_GROUP_SLOTS, index);
                return Err(e);
            }
        };
        let handle = Table::<GroupCore>::encode(index, epoch);
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
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`group`, `f`, `place->data` of a
/// data place or of a pushed place with regions, a region's `data`),
/// `TERROIR_ERROR_INVALID_HANDLE`, `TERROIR_ERROR_INVALID_ARGUMENT` (an
/// unknown place kind; a data place or region whose `len` is above
/// `PTRDIFF_MAX` or runs past the end of the address space; a pushed place
/// of more than 65536 regions), `TERROIR_ERROR_INVALID_NODE` (a node the
/// pool has no worker on), `TERROIR_ERROR_INVALID_WORKER`,
/// `TERROIR_ERROR_ZERO_SIZE` (`place->len` of a data place, a region's
/// `len`), `TERROIR_ERROR_SYSTEM` (the page-location query of a data
/// place or region).
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
    // The common case, a task with no place spawned by the worker that
    // created the group, before its wait, outside `call`: nothing in it
    // can fail or panic.
    if let (Some(f), true) = (f, place.is_null()) {
        let (index, epoch) = Table::<GroupCore>::decode(group.addr());
        if let Some(core) = GROUPS.get(index) {
            let task = CTask::new(f, arg);
            if core.spawn_here(epoch, move |_| task.run()).is_ok() {
                return TerroirError::Ok as c_int;
            }
        }
    }
    // SAFETY: forwarded.
    unsafe { spawn_slow(group, f, arg, place) }
}

/// [`terroir_group_spawn`] for every other case, and its errors.
///
/// # Safety
/// As `terroir_group_spawn`.
#[cold]
#[inline(never)]
unsafe fn spawn_slow(
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
        let (core, epoch) = lookup(group)?;
        // SAFETY: NULL or a valid place (the caller's promise).
        let place = match unsafe { place.as_ref() } {
            None => None,
            Some(p) => Some(
                core.with_pool(epoch, |pool| to_place(pool, Some(p)))
                    .map_err(|e| group_error(group, e))??,
            ),
        };
        let task = CTask::new(f, arg);
        core.spawn(epoch, place, false, move |_| task.run())
            .map_err(|e| group_error(group, e))
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
/// the group's waits ran its tasks on that worker, or from a task of a
/// group whose wait runs, on another worker, on top of such work: the
/// wait could never end, so it is refused before it runs anything, and
/// nothing changes.
///
/// # Safety
/// Any pointer value is accepted: handles are never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn terroir_group_wait(group: *mut TerroirGroup) -> c_int {
    call("terroir_group_wait", || {
        if group.is_null() {
            return Err(Error::null("group"));
        }
        let (core, epoch) = lookup(group)?;
        core.wait(epoch).map_err(|e| group_error(group, e))
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
    // The common case, an idle group closed by the worker that created it
    // for its own pool, outside `call`: nothing in it can fail or panic.
    // The worker's hot group (no table lookup), else the slot the handle
    // names.
    let lookup = || GROUPS.get(Table::<GroupCore>::decode(group.addr()).0);
    match GroupCore::close_warm(group.addr() as u64, lookup) {
        Some(Closed::Warm | Closed::Retired) => TerroirError::Ok as c_int,
        Some(Closed::Free) => free_slot(Table::<GroupCore>::decode(group.addr()).0),
        None => destroy_slow(group),
    }
}

/// Gives the slot of a group closed by [`terroir_group_destroy`]'s fast
/// path to the thread's free list (the worker keeps enough groups warm
/// already), out of the fast path's way.
///
/// `extern "C"`, as [`create_slow`]: it cannot unwind (`put_with` does
/// not panic), so the fast path jumps to it.
#[cold]
#[inline(never)]
extern "C" fn free_slot(index: usize) -> c_int {
    GROUPS.put_with(&FREE_GROUP_SLOTS, index);
    TerroirError::Ok as c_int
}

/// [`terroir_group_destroy`] for every other case, and its errors;
/// `extern "C"` as [`create_slow`] (four instructions a destroy: the
/// register the result was kept in across a call).
#[cold]
#[inline(never)]
extern "C" fn destroy_slow(group: *mut TerroirGroup) -> c_int {
    call("terroir_group_destroy", || {
        if group.is_null() {
            return Err(Error::null("group"));
        }
        let (core, epoch) = lookup(group)?;
        // Waited for and closed under the group's lock, which is let go
        // only while a batch runs or the waiter waits, and closed while
        // still held once idle: a racing spawn either lands before (and is
        // waited for) or finds the handle dead.
        match core.close(epoch) {
            Ok(closed) => {
                if closed == Closed::Free {
                    GROUPS.put_with(
                        &FREE_GROUP_SLOTS,
                        Table::<GroupCore>::decode(group.addr()).0,
                    );
                }
                Ok(())
            }
            // Another thread destroyed it while this one waited.
            Err(CoreError::ClosedMeanwhile) => Err(Error::new(
                TerroirError::InvalidHandle,
                format!(
                    "group handle {:#x} was destroyed by another thread during this destroy",
                    group.addr()
                ),
            )),
            Err(e) => Err(group_error(group, e)),
        }
    })
}

/// The owner's fast paths on handles: a slot kept warm by its worker and
/// opened again keeps every old handle of it dead, nested groups beyond
/// what a worker keeps warm come from the table, and a group with tasks
/// closes as an empty one does.
#[cfg(all(test, not(miri)))]
mod tests {
    use std::ptr;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;

    fn create() -> *mut TerroirGroup {
        let mut g = ptr::null_mut();
        // SAFETY: `g` is writable.
        assert_eq!(unsafe { terroir_group_create(ptr::null_mut(), &mut g) }, 0);
        g
    }

    fn destroy(g: *mut TerroirGroup) -> c_int {
        // SAFETY: any value is accepted.
        unsafe { terroir_group_destroy(g) }
    }

    extern "C" fn noop(_: *mut c_void) {}

    const INVALID: c_int = TerroirError::InvalidHandle as c_int;

    #[test]
    fn a_slot_opened_again_keeps_its_old_handles_dead() {
        let pool = terroir::ThreadPoolBuilder::new()
            .num_threads(1)
            .pin(false)
            .build()
            .unwrap();
        let local = || FREE_GROUP_SLOTS.with(LocalFree::len);
        pool.install(|| {
            let a = create();
            let free = local();
            assert_eq!(destroy(a), 0);
            assert_eq!(local(), free, "kept warm, not in the thread's free list");
            let b = create();
            assert_eq!(local(), free, "opened warm, not from the free list");
            assert_ne!(a, b, "a new handle");
            assert_eq!(
                a.addr() & 0xFFFF_FFFF,
                b.addr() & 0xFFFF_FFFF,
                "the same slot"
            );
            assert_eq!(destroy(a), INVALID, "a double destroy");
            // SAFETY: any handle value is accepted.
            unsafe {
                assert_eq!(
                    terroir_group_spawn(a, Some(noop), ptr::null_mut(), ptr::null()),
                    INVALID
                );
                assert_eq!(terroir_group_wait(a), INVALID);
                assert_eq!(
                    terroir_group_spawn(b, Some(noop), ptr::null_mut(), ptr::null()),
                    0
                );
                assert_eq!(terroir_group_wait(b), 0);
            }
            // With a task: the slow close, and the slot kept warm again.
            assert_eq!(destroy(b), 0);
            assert_eq!(destroy(b), INVALID);
            let c = create();
            assert_eq!(c.addr() & 0xFFFF_FFFF, b.addr() & 0xFFFF_FFFF);
            assert_eq!(destroy(c), 0);
            // Nested past what a worker keeps: all distinct, all live.
            let open: Vec<_> = (0..40).map(|_| create()).collect();
            let mut slots: Vec<_> = open.iter().map(|g| g.addr() & 0xFFFF_FFFF).collect();
            slots.sort_unstable();
            slots.dedup();
            assert_eq!(slots.len(), 40, "40 slots for 40 open groups");
            for &g in open.iter().rev() {
                assert_eq!(destroy(g), 0);
            }
            for &g in &open {
                assert_eq!(destroy(g), INVALID);
            }
            let again: Vec<_> = (0..40).map(|_| create()).collect();
            for &g in &again {
                assert!(!open.contains(&g), "a reused handle {g:p}");
                assert_eq!(destroy(g), 0);
            }
        });
    }

    /// The warm paths name a group by `GroupCore::token`, which must be
    /// its handle.
    #[test]
    fn handle_is_the_token() {
        for (index, epoch) in [(0, 1), (5, 7), (1023, u32::MAX), (0xFFFF_FFFE, 1 << 31)] {
            assert_eq!(
                Table::<GroupCore>::encode(index as usize, epoch) as u64,
                GroupCore::token(index, epoch)
            );
        }
    }

    static SPAWNED: AtomicUsize = AtomicUsize::new(0);
    static RAN: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn ran(_: *mut c_void) {
        RAN.fetch_add(1, Ordering::Relaxed);
    }

    /// A caller's race the C API must still answer cleanly: a thread
    /// outside the pool destroys the groups that the two workers are
    /// using (spawning into and destroying), so owners come late to
    /// groups closed and reopened meanwhile, by the other worker too
    /// (`terroir::__capi`'s bias docs, "Stale threads"). Every call
    /// returns success or `InvalidHandle`, every create succeeds, and
    /// every task spawned runs once. (A review's stress program of this
    /// shape failed 3 runs in 8 before the revoke named its epoch: an
    /// `unreachable!` in the create, two threads in a group's lock. This
    /// one, shorter, did not catch that race in 12 runs: the late owner
    /// needs a preemption inside a few instructions, which loom's
    /// `a_late_owner_neither_enters_nor_clears_a_later_owners_bias`
    /// explores instead; this test covers the rest of the race.)
    #[test]
    fn destroys_from_outside_racing_the_owners_use_of_their_handles() {
        const ROUNDS: usize = 10_000;
        const KILLERS: usize = 2;
        // Between the owner's calls: the killers' window (with it, 2700 to
        // 3000 of the 20 000 groups were destroyed from outside, on the
        // test machine).
        const SPIN: usize = 500;
        let pool = terroir::ThreadPoolBuilder::new()
            .num_threads(2)
            .pin(false)
            .build()
            .unwrap();
        let current = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let killers: Vec<_> = (0..KILLERS)
                .map(|_| {
                    s.spawn(|| {
                        let mut killed = 0usize;
                        while !stop.load(Ordering::Relaxed) {
                            let g = current.load(Ordering::Relaxed);
                            if g != 0 {
                                match destroy(ptr::without_provenance_mut(g)) {
                                    0 => killed += 1,
                                    INVALID => {}
                                    r => panic!("a destroy from outside returned {r}"),
                                }
                            }
                        }
                        killed
                    })
                })
                .collect();
            // Stops the killers however the workers' loops end: a failed
            // assertion in them must fail the test, not hang it in the
            // scope's join.
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let stopper = Stop(&stop);
            pool.broadcast(|_| {
                for _ in 0..ROUNDS {
                    let g = create();
                    assert!(!g.is_null());
                    current.store(g.addr(), Ordering::Relaxed);
                    for _ in 0..2 {
                        for _ in 0..SPIN {
                            std::hint::spin_loop();
                        }
                        // SAFETY: any handle value is accepted.
                        match unsafe {
                            terroir_group_spawn(g, Some(ran), ptr::null_mut(), ptr::null())
                        } {
                            0 => {
                                SPAWNED.fetch_add(1, Ordering::Relaxed);
                            }
                            INVALID => {}
                            r => panic!("a spawn returned {r}"),
                        }
                    }
                    match destroy(g) {
                        0 | INVALID => {}
                        r => panic!("the owner's destroy returned {r}"),
                    }
                }
            });
            drop(stopper);
            let killed: usize = killers.into_iter().map(|k| k.join().unwrap()).sum();
            // Some destroys from outside won (not asserted: a scheduler may
            // run the workers' loops without one).
            eprintln!("destroyed from outside: {killed} of {}", 2 * ROUNDS);
        });
        assert_eq!(
            RAN.load(Ordering::Relaxed),
            SPAWNED.load(Ordering::Relaxed),
            "every task spawned ran once"
        );
    }
}
