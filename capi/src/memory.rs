//! Memory on nodes: allocate (a [`NodeVec`] bound before first touch: on
//! one node, interleaved, or blocked over a list of nodes), free, find a
//! byte's node, locate, migrate.
//!
//! Every allocation is a `NodeVec` kept in a process-wide map from its
//! address, so `terroir_free` finds exactly what to unmap and reports a
//! pointer it does not know (a double free, an interior pointer, a
//! `malloc` pointer) instead of corrupting memory.

use std::cell::UnsafeCell;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::{Mutex, MutexGuard};

use super::error::{call, Error, TerroirError};
use terroir::numa::{locate, mems_allowed, migrate, Migration, NodeId, NodeSet, Sample};
use terroir::pool::{NodeVec, Placement};
use terroir::{Access, Place};

/// The element type of C memory seen from Rust: any byte (initialised or
/// not), which other threads may write at any time.
pub(crate) type Bytes = UnsafeCell<MaybeUninit<u8>>;

/// The live allocations, by address.
static ALLOCATIONS: Mutex<BTreeMap<usize, NodeVec<Bytes>>> = Mutex::new(BTreeMap::new());

fn allocations() -> MutexGuard<'static, BTreeMap<usize, NodeVec<Bytes>>> {
    ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A data place for `data .. data + len` when it is exactly one of our
/// allocations: its node is known without a system call.
pub(crate) fn whole_allocation_place(data: *const c_void, len: usize) -> Option<Place> {
    allocations()
        .get(&data.addr())
        .filter(|v| v.len() == len)
        .map(Place::data)
}

/// The declared accesses of a task that reads (or, `write`, writes)
/// `data .. data + len` when that is exactly one of our allocations: one
/// per node share of a blocked allocation, else one on its home node
/// (none for an interleaved one), without a system call.
pub(crate) fn whole_allocation_accesses(
    data: *const c_void,
    len: usize,
    write: bool,
) -> Option<Vec<Access>> {
    let map = allocations();
    let v = map.get(&data.addr()).filter(|v| v.len() == len)?;
    // A data place declares the same regions, as reads.
    Some(
        Place::data(v)
            .declared()
            .iter()
            .map(|a| Access::new(a.node(), a.bytes() as usize, write))
            .collect(),
    )
}

/// Checks that `ptr .. ptr + len`, a range a C caller names, could be an
/// object of this process before a slice is made of it: at most
/// `isize::MAX` bytes, and not past the end of the address space. (Rust's
/// slice rules; a larger `len` is undefined behaviour in
/// `slice::from_raw_parts`, which debug builds turn into an abort.)
/// `ptr_name` and `len_name` name the arguments in the message.
pub(crate) fn check_range(
    ptr: *const c_void,
    len: usize,
    ptr_name: &str,
    len_name: &str,
) -> Result<(), Error> {
    if isize::try_from(len).is_err() {
        return Err(Error::invalid(format!(
            "{len_name} = {len} is more than any object can have ({} bytes at most)",
            isize::MAX
        )));
    }
    if ptr.addr().checked_add(len).is_none() {
        return Err(Error::invalid(format!(
            "{ptr_name} = {ptr:p} with {len_name} = {len} runs past the end of the address space"
        )));
    }
    Ok(())
}

/// Counts of a page migration (`terroir_migrate`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TerroirMigration {
    /// Pages in the range.
    pub pages: usize,
    /// Pages moved to the target node.
    pub moved: usize,
    /// Pages that were on the target node already.
    pub already_there: usize,
    /// Pages that are not on the target node after the call (busy, shared,
    /// never touched, or declined by the kernel).
    pub not_moved: usize,
}

impl From<&Migration> for TerroirMigration {
    fn from(m: &Migration) -> Self {
        TerroirMigration {
            pages: m.pages(),
            moved: m.moved(),
            already_there: m.already_there(),
            not_moved: m.failed().len() + m.still_elsewhere(),
        }
    }
}

fn allocate(size: usize, placement: Placement, out: *mut *mut c_void) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::null("out"));
    }
    if size == 0 {
        return Err(Error::new(TerroirError::ZeroSize, "size is 0"));
    }
    let mut v = NodeVec::<Bytes>::with_capacity_on(size, placement)?;
    // SAFETY: the capacity is at least `size`, and a `Bytes` element needs
    // no initialisation.
    unsafe { v.set_len(size) };
    let p = v.as_mut_ptr().cast::<c_void>();
    allocations().insert(p.addr(), v);
    // SAFETY: non-null (checked), writable (the caller's promise).
    unsafe { out.write(p) };
    Ok(())
}

/// Allocates `size` bytes bound to NUMA node `node` (an OS node number)
/// before first touch: the pages land on `node` whichever thread writes
/// them first. The memory reads as zeros, is page-aligned, and must be
/// released with `terroir_free`.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`out`), `TERROIR_ERROR_ZERO_SIZE`,
/// `TERROIR_ERROR_INVALID_NODE` (a node this process may not allocate on;
/// the message lists the allowed ones), `TERROIR_ERROR_OUT_OF_MEMORY`.
///
/// # Safety
/// `out` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_alloc_on_node(
    size: usize,
    node: u32,
    out: *mut *mut c_void,
) -> c_int {
    call("terroir_alloc_on_node", || {
        allocate(size, Placement::Node(NodeId::new(node)), out)
    })
}

/// Allocates `size` bytes interleaved page by page over every node this
/// process may allocate on. Otherwise as `terroir_alloc_on_node`.
///
/// # Safety
/// `out` is NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_alloc_interleaved(size: usize, out: *mut *mut c_void) -> c_int {
    call("terroir_alloc_interleaved", || {
        allocate(size, Placement::Interleave(mems_allowed()?), out)
    })
}

/// The most nodes a node list may name (Linux's `MAX_NUMNODES` is at
/// most 1024).
const MAX_LIST_NODES: usize = 4096;

/// The node set a C node list names: `nodes[0 .. num_nodes)`, or every
/// node this process may allocate on for NULL and 0. Each node must be
/// one of those, and listed once.
fn node_list(nodes: *const u32, num_nodes: usize) -> Result<NodeSet, Error> {
    let allowed = mems_allowed()?;
    if nodes.is_null() {
        if num_nodes != 0 {
            return Err(Error::null("nodes"));
        }
        return Ok(allowed);
    }
    if num_nodes == 0 {
        return Err(Error::invalid(
            "num_nodes is 0 with a node list: name at least one node (or pass NULL and 0 for \
             every node this process may allocate on)",
        ));
    }
    if num_nodes > MAX_LIST_NODES {
        return Err(Error::invalid(format!(
            "num_nodes = {num_nodes} is more than any machine has (at most {MAX_LIST_NODES})"
        )));
    }
    // SAFETY: non-null, and the caller promises `num_nodes` readable
    // entries (at most MAX_LIST_NODES: no overflow).
    let list = unsafe { std::slice::from_raw_parts(nodes, num_nodes) };
    let mut set = NodeSet::new();
    for (i, &node) in list.iter().enumerate() {
        if !allowed.contains(node) {
            return Err(Error::new(
                TerroirError::InvalidNode,
                format!(
                    "nodes[{i}] = {node} is not a node this process may allocate on (allowed \
                     nodes: {allowed})"
                ),
            ));
        }
        if set.contains(node) {
            return Err(Error::invalid(format!(
                "nodes[{i}] = {node} is listed twice"
            )));
        }
        set.insert(node);
    }
    Ok(set)
}

/// Allocates `size` bytes cut into one contiguous share per node of the
/// list, in ascending node order (whatever the list's order), share `i`
/// bound to the `i`-th node before first touch: terroir's
/// `Placement::Blocked`. Shares are whole pages, the last node's share
/// takes the rounding; `terroir_alloc_node_of` tells which node a byte is
/// on. `nodes[0 .. num_nodes)` lists OS node numbers; NULL and 0 name
/// every node this process may allocate on. The memory reads as zeros, is
/// page-aligned, and is freed with `terroir_free`. A data place (or a
/// `terroir_parallel_for` data range) on the whole allocation knows each
/// share's node without a system call.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`out`; `nodes` with a nonzero
/// `num_nodes`), `TERROIR_ERROR_ZERO_SIZE`, `TERROIR_ERROR_INVALID_NODE`
/// (a node this process may not allocate on; the message lists the
/// allowed ones), `TERROIR_ERROR_INVALID_ARGUMENT` (a node listed twice,
/// a list of 0 or more than 4096 nodes), `TERROIR_ERROR_OUT_OF_MEMORY`
/// (also for a size no mapping can have, such as `SIZE_MAX`).
///
/// # Safety
/// `nodes` is NULL or points to `num_nodes` readable `uint32_t`; `out` is
/// NULL or points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn terroir_alloc_blocked(
    size: usize,
    nodes: *const u32,
    num_nodes: usize,
    out: *mut *mut c_void,
) -> c_int {
    call("terroir_alloc_blocked", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        if size == 0 {
            return Err(Error::new(TerroirError::ZeroSize, "size is 0"));
        }
        allocate(size, Placement::Blocked(node_list(nodes, num_nodes)?), out)
    })
}

/// Allocates `size` bytes interleaved page by page over the nodes of the
/// list (`Placement::Interleave`); NULL and 0 name every node this process
/// may allocate on, as `terroir_alloc_interleaved` does. Otherwise as
/// `terroir_alloc_blocked`, with the same errors.
///
/// # Safety
/// As `terroir_alloc_blocked`.
#[no_mangle]
pub unsafe extern "C" fn terroir_alloc_interleaved_on(
    size: usize,
    nodes: *const u32,
    num_nodes: usize,
    out: *mut *mut c_void,
) -> c_int {
    call("terroir_alloc_interleaved_on", || {
        if out.is_null() {
            return Err(Error::null("out"));
        }
        if size == 0 {
            return Err(Error::new(TerroirError::ZeroSize, "size is 0"));
        }
        allocate(
            size,
            Placement::Interleave(node_list(nodes, num_nodes)?),
            out,
        )
    })
}

/// `*node` = the node (OS number) that byte `offset` of the allocation
/// `ptr` (as `terroir_alloc_*` returned it) is bound to: its node, or its
/// share's node for a blocked allocation; -1 for memory interleaved over
/// several nodes. No system call: it is where the pages are meant to be
/// (`terroir_locate` asks the kernel where they are).
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`ptr`, `node`),
/// `TERROIR_ERROR_UNKNOWN_POINTER` (not the start of a live allocation),
/// `TERROIR_ERROR_INVALID_ARGUMENT` (`offset` not below the allocation's
/// size).
///
/// # Safety
/// `node` is NULL or points to writable storage for an `int32_t`.
#[no_mangle]
pub unsafe extern "C" fn terroir_alloc_node_of(
    ptr: *const c_void,
    offset: usize,
    node: *mut i32,
) -> c_int {
    call("terroir_alloc_node_of", || {
        if ptr.is_null() {
            return Err(Error::null("ptr"));
        }
        if node.is_null() {
            return Err(Error::null("node"));
        }
        let found = {
            let map = allocations();
            let v = map.get(&ptr.addr()).ok_or_else(|| {
                Error::new(
                    TerroirError::UnknownPointer,
                    format!(
                        "pointer {ptr:p} is not the start of an allocation of terroir_alloc_* \
                         (or was freed already)"
                    ),
                )
            })?;
            if offset >= v.len() {
                return Err(Error::invalid(format!(
                    "offset = {offset} is not below the allocation's size ({} bytes)",
                    v.len()
                )));
            }
            v.node_of(offset)
        };
        let id = found.map_or(-1, |n| i32::try_from(n.os_index()).unwrap_or(i32::MAX));
        // SAFETY: non-null, writable (the caller's promise).
        unsafe { node.write(id) };
        Ok(())
    })
}

/// Frees memory returned by `terroir_alloc_*` (any of them: on a node,
/// interleaved, blocked). NULL is a no-op (as for `free`).
///
/// Errors: `TERROIR_ERROR_UNKNOWN_POINTER` for a pointer terroir did not
/// return or freed already (a double free is reported, not undefined).
///
/// # Safety
/// No thread may use the memory after it is freed.
#[no_mangle]
pub unsafe extern "C" fn terroir_free(ptr: *mut c_void) -> c_int {
    call("terroir_free", || {
        if ptr.is_null() {
            return Ok(());
        }
        let v = allocations().remove(&ptr.addr()).ok_or_else(|| {
            Error::new(
                TerroirError::UnknownPointer,
                format!(
                    "pointer {ptr:p} was not returned by terroir_alloc_* (or was freed already)"
                ),
            )
        })?;
        drop(v); // unmaps, outside the lock
        Ok(())
    })
}

/// `*node` = the NUMA node (OS number) holding most pages of `ptr .. ptr +
/// len` (every page is asked), or -1 when none of them is backed by memory
/// yet (never touched). Works on any memory of the process.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`ptr`, `node`),
/// `TERROIR_ERROR_ZERO_SIZE`, `TERROIR_ERROR_INVALID_ARGUMENT` (`len` above
/// `PTRDIFF_MAX`, or `ptr + len` past the end of the address space),
/// `TERROIR_ERROR_SYSTEM`.
///
/// # Safety
/// `node` is NULL or points to writable storage for an `int32_t`.
#[no_mangle]
pub unsafe extern "C" fn terroir_locate(ptr: *const c_void, len: usize, node: *mut i32) -> c_int {
    call("terroir_locate", || {
        if ptr.is_null() {
            return Err(Error::null("ptr"));
        }
        if node.is_null() {
            return Err(Error::null("node"));
        }
        if len == 0 {
            return Err(Error::new(TerroirError::ZeroSize, "len is 0"));
        }
        check_range(ptr, len, "ptr", "len")?;
        // SAFETY: non-null, at most isize::MAX bytes within the address
        // space (checked), and the C caller gives memory of this process.
        // The element type allows uninitialised bytes and writes by other
        // threads meanwhile; `locate` reads no element, only the address and
        // length.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<Bytes>(), len) };
        let loc = locate(bytes, Sample::All)?;
        let majority = loc
            .majority()
            .map_or(-1, |n| i32::try_from(n.os_index()).unwrap_or(i32::MAX));
        // SAFETY: non-null, writable (the caller's promise).
        unsafe { node.write(majority) };
        Ok(())
    })
}

/// Moves the pages of `ptr .. ptr + len` to node `node` (OS number),
/// contents intact. When the range is exactly an allocation of
/// `terroir_alloc_*`, the allocation is also rebound to `node`, so pages
/// touched later land there too; otherwise only existing pages move.
/// `*result` (if not NULL) receives the per-page counts; pages that could
/// not move are not an error.
///
/// Errors: `TERROIR_ERROR_NULL_POINTER` (`ptr`), `TERROIR_ERROR_ZERO_SIZE`,
/// `TERROIR_ERROR_INVALID_ARGUMENT` (`len` above `PTRDIFF_MAX`, or `ptr +
/// len` past the end of the address space), `TERROIR_ERROR_INVALID_NODE`,
/// `TERROIR_ERROR_SYSTEM`.
///
/// # Safety
/// `ptr .. ptr + len` is memory of this process; `result` is NULL or points
/// to writable storage for a `terroir_migration`.
#[no_mangle]
pub unsafe extern "C" fn terroir_migrate(
    ptr: *mut c_void,
    len: usize,
    node: u32,
    result: *mut TerroirMigration,
) -> c_int {
    call("terroir_migrate", || {
        if ptr.is_null() {
            return Err(Error::null("ptr"));
        }
        if len == 0 {
            return Err(Error::new(TerroirError::ZeroSize, "len is 0"));
        }
        check_range(ptr, len, "ptr", "len")?;
        let to = NodeId::new(node);
        let migration = {
            let mut map = allocations();
            match map.get_mut(&ptr.addr()).filter(|v| v.len() == len) {
                Some(v) => v.migrate_to(to)?,
                None => {
                    drop(map);
                    // SAFETY: as in `terroir_locate` (the range checked
                    // above): `migrate` reads no element (the kernel moves
                    // the pages, contents intact).
                    let bytes = unsafe {
                        std::slice::from_raw_parts(ptr.cast_const().cast::<Bytes>(), len)
                    };
                    migrate(bytes, to)?
                }
            }
        };
        if !result.is_null() {
            // SAFETY: non-null, writable (the caller's promise).
            unsafe { result.write(TerroirMigration::from(&migration)) };
        }
        Ok(())
    })
}
