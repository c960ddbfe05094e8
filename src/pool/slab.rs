//! Node-local slab pools: small blocks carved from memory bound to a NUMA
//! node, cached per thread, and [`NodeLocalAlloc`], a [`GlobalAlloc`] that
//! serves each thread from its own node.
//!
//! # Design
//!
//! **Size classes.** A request of `size` bytes aligned to `align` is served
//! by the smallest power of two that is at least `max(size, align, 16)`:
//! thirteen classes, 16 B, 32 B, … 64 KiB ([`SlabPool::MIN_BLOCK`] …
//! [`SlabPool::MAX_BLOCK`]). Every block is aligned to its class size, so any
//! alignment up to 64 KiB is honoured without padding.
//!
//! **Reservations and chunks.** Each node owns *reservations* of 2 MiB
//! ([`SlabPool::RESERVATION_BYTES`]): 4 MiB are mapped and trimmed to a
//! 2 MiB-aligned 2 MiB region, which is bound to the node with
//! `mbind(MPOL_BIND)` *before any page is touched*, so every page lands on
//! the node whichever thread touches it first. A reservation is cut into
//! 64 KiB chunks, handed to the size classes on demand, and a chunk is cut
//! into blocks of its class. Because reservations are 2 MiB-aligned, the
//! home node of any block is a table lookup on `addr >> 21` (a two-level
//! radix table, filled when a reservation is made): [`SlabPool::node_of`]
//! costs two loads and no system call, and works on any pointer.
//!
//! **Magazines.** Free blocks are never linked through their own memory:
//! they move as *magazines*, arrays of up to 32 block pointers (Bonwick's
//! design), cut from the node's chunks and recycled, never freed. The
//! allocator therefore never writes into a free block: cutting a block does
//! not fault its pages in, and a free, even from another node, does not pull
//! the block's cache line to the freeing CPU (with intrusive lists it would
//! write a link into it). A *batch* is 32 blocks for classes up to 2 KiB and
//! `64 KiB / class` (at least 2) for larger ones.
//!
//! **Shared lists.** For each node and class, a mutex protects a stack of
//! full magazines, a stack of empty ones and the chunk being cut. Handing a
//! batch to a thread or taking one back is one lock held for a few pointer
//! operations: each thread keeps one empty magazine per class, filled or
//! emptied (at most 256 bytes of pointers copied) outside the lock, and
//! swapped for another under it.
//!
//! **Thread caches.** Each thread keeps, per class, a stack of up to two
//! batches of free blocks of *its* node, inline in thread-local storage.
//! Allocation pops it and a local free pushes it: no lock, no atomic
//! operation, no access to the block. An empty stack is refilled with one
//! magazine from the node's shared list (or a batch cut from a chunk); a
//! full one gives its oldest batch back.
//!
//! **Remote frees.** A block freed by a thread of another node is not
//! cached: it goes into a per-thread *remote magazine* for (class, home
//! node) — four slots per class, chosen by `node % 4` — which is handed to
//! the home node's shared list in one locked operation when it holds a
//! batch, when the slot is needed for another node, or when the thread
//! flushes. [`SlabStats::remote_batches`] and [`SlabStats::remote_blocks`]
//! count them.
//!
//! **The thread's node.** [`set_thread_node`] fixes it (the executor calls it
//! when a pinned worker starts); otherwise it is found once per thread with
//! `getcpu` and cached (a node this process may not allocate on is replaced
//! by the lowest allowed node). [`thread_node`] tells which node a thread
//! uses.
//!
//! **Thread exit.** The caches are `thread_local!` values with a `const`
//! initialiser and no destructor (so touching them never allocates or
//! registers anything). Thread exit is caught with a POSIX thread-specific
//! key whose destructor flushes the caches back to the nodes; glibc runs such
//! destructors after Rust's thread-local destructors, which may still free
//! memory into the caches. From then on (and on a thread for which no key
//! could be made) the thread uses the locked path: every allocation and free
//! is one operation on the shared list.
//!
//! **Large requests.** Blocks above 64 KiB, or aligned to more than 64 KiB,
//! are mapped directly (`mmap`, trimmed to the alignment), bound to the node
//! before first touch, and unmapped on free. Like [`NodeVec`](super::NodeVec)
//! they are mapped with `MAP_NORESERVE`, so a request larger than memory can
//! succeed and fail only when touched. Their home node is not recorded:
//! [`SlabPool::node_of`] answers `None` for them.
//!
//! **Statistics.** Relaxed atomic counters per node ([`SlabStats`]), updated
//! when memory moves between a node's shared lists and threads, never on the
//! per-allocation fast path.
//!
//! # Limits
//!
//! - Memory of the slabs is never returned to the OS: freed blocks are
//!   reused by the same class of the same node.
//! - Node numbers go up to 1023 (Linux's largest `MAX_NUMNODES`).
//! - Each thread's caches take about 7.5 KiB of thread-local storage.
//! - Should memory run out so badly that no magazine can be cut, freed
//!   blocks that need one are forgotten (never reused) rather than
//!   corrupting anything.
//! - `realloc` through [`NodeLocalAlloc`] keeps the block when the new size
//!   stays in its class, and shrinks large blocks in place; otherwise it
//!   copies, on the calling thread's node.
//! - The allocator never allocates through the global allocator and never
//!   panics, so it can be the global allocator. It binds with the raw
//!   `mbind` of `numa::sys` and a node mask built on the stack, because
//!   [`bind_memory`](crate::numa::bind_memory) allocates.
//! - If the kernel refuses memory policies altogether (`ENOSYS` without NUMA
//!   support, `EPERM` under a seccomp filter), reservations are used unbound
//!   (first touch places them) and [`SlabStats::unbound`] counts them; any
//!   other `mbind` failure is a [`SlabError::Bind`].
//! - A child forked from a multithreaded process may allocate: fork
//!   handlers take every lock of the pool before the fork and release them
//!   on both sides (`slab/fork.rs`). Blocks cached by the parent's other
//!   threads are lost to the child (it has no such threads), not reused.
//!
//! # Checking
//!
//! Miri runs this module's tests (`scripts/miri.sh`) over the stand-in
//! kernel of `numa/sys/heap.rs`: reservations, large blocks and the
//! bookkeeping come from the Rust allocator, so Miri sees every block's
//! provenance (the pool keeps pointers, never addresses turned back into
//! pointers), every use after free and every data race between threads'
//! caches and the shared lists. `fuzz/` drives the pool and `NodeVec` from
//! libFuzzer (`scripts/fuzz.sh`).

#![warn(unsafe_op_in_unsafe_fn)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::fmt;
use std::io;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use crate::numa::sys::{self, page_size, NodeMask, MASK_WORDS};
use crate::numa::{current_cpu_and_node, NodeId};

mod cache;
mod central;
mod error;
mod fork;
mod global;
mod pages;
mod stats;
#[cfg(test)]
mod tests;

use cache::*;
pub use cache::{flush_thread_cache, set_thread_node, thread_node};
use central::*;
pub use error::SlabError;
use fork::*;
pub use global::NodeLocalAlloc;
use pages::*;
pub use stats::SlabStats;
use stats::*;

// ------------------------------------------------------------------ sizes

const MIN_SHIFT: u32 = 4;
const MAX_SHIFT: u32 = 16;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;
const RESERVATION: usize = 2 << 20;
const CHUNK: usize = 64 << 10;
/// Linux's largest `MAX_NUMNODES`: every node of a [`NodeMask`].
const MAX_NODES: usize = MASK_WORDS * 64;
/// Remote batches a thread keeps per class (direct-mapped by node).
const REMOTE_SLOTS: usize = 4;
/// Largest batch, in blocks.
const MAX_BATCH: usize = 32;

/// Radix table of reservations: 2 MiB regions of a 48-bit address space.
const REGION_SHIFT: u32 = 21;
const LEAF_BITS: u32 = 14;
const TOP_BITS: u32 = 13;
const LEAF_LEN: usize = 1 << LEAF_BITS;
const TOP_LEN: usize = 1 << TOP_BITS;

const _: () = assert!(RESERVATION == 1 << REGION_SHIFT);
const _: () = assert!(CHUNK >= 1 << MAX_SHIFT && RESERVATION % CHUNK == 0);
const _: () = assert!(MAX_NODES < u16::MAX as usize);

/// Block size of class `class`.
#[inline]
const fn class_size(class: usize) -> usize {
    1 << (class as u32 + MIN_SHIFT)
}

/// Blocks per batch for a class: 32 for small blocks, fewer for large ones
/// (`64 KiB / size`, at least 2), so that a thread caches at most a few
/// hundred KiB of one class.
const BATCH: [usize; CLASSES] = {
    let mut t = [0; CLASSES];
    let mut c = 0;
    while c < CLASSES {
        let n = CHUNK / class_size(c);
        t[c] = if n > MAX_BATCH {
            MAX_BATCH
        } else if n < 2 {
            2
        } else {
            n
        };
        c += 1;
    }
    t
};

/// The size class serving `layout`, or `None` for a large request.
#[inline]
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size().max(layout.align());
    if size > 1 << MAX_SHIFT {
        return None;
    }
    let size = size.max(1 << MIN_SHIFT);
    Some((usize::BITS - (size - 1).leading_zeros() - MIN_SHIFT) as usize)
}

fn round_up(n: usize, to: usize) -> Option<usize> {
    debug_assert!(to.is_power_of_two());
    Some(n.checked_add(to - 1)? & !(to - 1))
}

// ------------------------------------------------------------------ the pool

/// A radix-table leaf: per 2 MiB region, 0 or its home node + 1.
struct Leaf {
    entries: [AtomicU16; LEAF_LEN],
}

/// The process's node-local slab pool (there is one: [`SlabPool::global`]).
///
/// ```
/// use std::alloc::Layout;
/// use terroir::numa::{mems_allowed, NodeId};
/// use terroir::pool::SlabPool;
///
/// let node = NodeId::new(mems_allowed().unwrap().iter().next().unwrap());
/// let pool = SlabPool::global();
/// let layout = Layout::from_size_align(100, 8).unwrap();
/// let p = pool.alloc_on(node, layout).unwrap();
/// assert_eq!(pool.node_of(p.as_ptr()), Some(node)); // no system call
/// // SAFETY: `p` came from this pool with this layout and is not used again.
/// unsafe { pool.dealloc(p, layout) };
/// assert!(pool.stats(node).reservations >= 1);
/// ```
pub struct SlabPool {
    _private: (),
}

static POOL: SlabPool = SlabPool { _private: () };

// The pool's tables are statics of their own rather than fields of
// `SlabPool`, so that a `&SlabPool` refers to no memory: Miri's borrow
// checks retag the reference every method takes, and would walk the 9,216
// atomics of these tables each time (a 6x slowdown of the Miri tests).
// Entries are reached by indexing (a reference to the one entry), never
// through a slice of the table.

/// Node states by node number; null until made.
static NODES: [AtomicPtr<NodeState>; MAX_NODES] =
    [const { AtomicPtr::new(ptr::null_mut()) }; MAX_NODES];

/// The top level of the address table: a leaf per 2^(21 + LEAF_BITS) bytes
/// of address space; null until a reservation there is recorded.
static REGIONS: [AtomicPtr<Leaf>; TOP_LEN] = [const { AtomicPtr::new(ptr::null_mut()) }; TOP_LEN];

/// The table entry of node `node`, if the number is in range.
#[inline]
fn node_slot(node: u32) -> Option<&'static AtomicPtr<NodeState>> {
    let i = node as usize;
    (i < MAX_NODES).then(|| &NODES[i])
}

/// The top-level entry `top` of the address table, if in range.
#[inline]
fn region_slot(top: usize) -> Option<&'static AtomicPtr<Leaf>> {
    (top < TOP_LEN).then(|| &REGIONS[top])
}

/// Returned for an address the pool does not know.
const NO_NODE: u32 = u32::MAX;

impl SlabPool {
    /// Smallest block: smaller requests are rounded up to it.
    pub const MIN_BLOCK: usize = 1 << MIN_SHIFT;
    /// Largest block cut from the slabs; larger requests (or alignments) are
    /// mapped directly.
    pub const MAX_BLOCK: usize = 1 << MAX_SHIFT;
    /// Bytes of one node reservation (2 MiB, 2 MiB-aligned).
    pub const RESERVATION_BYTES: usize = RESERVATION;

    /// The process's pool (a static: nothing is allocated until used).
    pub fn global() -> &'static SlabPool {
        &POOL
    }

    /// The block size that serves `layout`: the smallest power of two of at
    /// least `max(size, align, 16)`; `None` for a request above
    /// [`MAX_BLOCK`](Self::MAX_BLOCK), which is mapped directly.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// use terroir::pool::SlabPool;
    /// let l = |s, a| Layout::from_size_align(s, a).unwrap();
    /// assert_eq!(SlabPool::block_size(l(1, 1)), Some(16));
    /// assert_eq!(SlabPool::block_size(l(100, 8)), Some(128));
    /// assert_eq!(SlabPool::block_size(l(8, 4096)), Some(4096));
    /// assert_eq!(SlabPool::block_size(l(65537, 8)), None);
    /// ```
    pub fn block_size(layout: Layout) -> Option<usize> {
        class_of(layout).map(class_size)
    }

    /// A block for `layout` on the calling thread's node ([`thread_node`]),
    /// from the thread's cache when it can.
    ///
    /// # Errors
    /// [`SlabError::OutOfMemory`] or [`SlabError::Bind`] when a new
    /// reservation (or a large block) cannot be mapped or bound;
    /// [`SlabError::TooLarge`].
    pub fn alloc(&self, layout: Layout) -> Result<NonNull<u8>, SlabError> {
        match class_of(layout) {
            Some(class) => self.alloc_small(class),
            None => self.alloc_large(thread_node_raw(), layout),
        }
    }

    /// A block for `layout` on `node`, whichever thread calls. From the
    /// calling thread's cache when `node` is the thread's node, else one
    /// locked operation on the node's shared list.
    ///
    /// # Errors
    /// [`SlabError::NodeNotAllowed`] for a node this process may not
    /// allocate on; otherwise as [`alloc`](Self::alloc).
    pub fn alloc_on(&self, node: NodeId, layout: Layout) -> Result<NonNull<u8>, SlabError> {
        let st = self.state_or_create(node.os_index())?;
        let Some(class) = class_of(layout) else {
            return self.alloc_large(st.id, layout);
        };
        let cached = with_cache(|tc| {
            // SAFETY: reading two fields of this thread's cache.
            unsafe { (*tc).state == ACTIVE && (*tc).node == st.id }
        });
        if cached {
            self.alloc_small(class)
        } else {
            st.alloc_locked(self, class)
        }
    }

    /// Frees a block of this pool, from any thread. A block of the calling
    /// thread's node goes to the thread's cache; a block of another node to
    /// the thread's remote magazine for that node, handed to it in one
    /// locked operation when it holds a batch.
    ///
    /// # Safety
    /// `ptr` was returned by [`alloc`](Self::alloc) or
    /// [`alloc_on`](Self::alloc_on) of this pool (or by [`NodeLocalAlloc`])
    /// with this `layout`, and is not used afterwards.
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        match class_of(layout) {
            // SAFETY: forwarded from the caller.
            Some(class) => unsafe { self.dealloc_small(ptr, class) },
            // SAFETY: a large layout means `ptr` is a direct mapping of
            // that layout (caller), unused from now on.
            None => unsafe { dealloc_large(ptr, layout) },
        }
    }

    /// The home node of the slab block holding `ptr` (the node its
    /// reservation is bound to), from a table in memory: no system call.
    /// `None` for an address outside the slabs, including large blocks.
    /// Freed blocks keep their home node (slab memory is reused, never
    /// returned to the OS).
    pub fn node_of(&self, ptr: *const u8) -> Option<NodeId> {
        match self.home_of(ptr.addr()) {
            NO_NODE => None,
            n => Some(NodeId::new(n)),
        }
    }

    /// The counters of `node` (all zero for a node the pool never used).
    pub fn stats(&self, node: NodeId) -> SlabStats {
        self.state(node.os_index())
            .map(|st| st.stats.snapshot())
            .unwrap_or_default()
    }

    /// The nodes the pool has served so far, in node order.
    pub fn nodes(&self) -> Vec<NodeId> {
        (0..MAX_NODES as u32)
            .filter(|&n| self.state(n).is_some())
            .map(NodeId::new)
            .collect()
    }

    // -------------------------------------------------------------- nodes

    #[inline]
    fn state(&self, node: u32) -> Option<&NodeState> {
        let p = node_slot(node)?.load(Ordering::Acquire);
        // SAFETY: a non-null entry points to a NodeState written before it
        // was published (Release/Acquire) and never freed.
        unsafe { p.as_ref() }
    }

    fn state_or_create(&self, node: u32) -> Result<&NodeState, SlabError> {
        if let Some(st) = self.state(node) {
            return Ok(st);
        }
        if !node_allowed(node) {
            return Err(SlabError::NodeNotAllowed {
                node: NodeId::new(node),
            });
        }
        self.install(node, node)
    }

    /// Makes and publishes the state of node `id`, bound to node `bind`,
    /// under the install lock (the fork handlers hold it, so that no state
    /// appears while a fork is under way); registers the fork handlers
    /// with the first state.
    fn install(&self, id: u32, bind: u32) -> Result<&NodeState, SlabError> {
        let slot = node_slot(id).ok_or(SlabError::NodeNotAllowed {
            node: NodeId::new(id),
        })?;
        let _installing = INSTALL.lock();
        register_fork_handlers();
        // SAFETY: a non-null entry points to a NodeState written before it
        // was published and never freed.
        if let Some(st) = unsafe { slot.load(Ordering::Acquire).as_ref() } {
            return Ok(st);
        }
        let bytes = round_up(std::mem::size_of::<NodeState>(), page_size()).unwrap_or(usize::MAX);
        let p = map(bytes)?.as_ptr().cast::<NodeState>();
        // SAFETY: a fresh, writable, page-aligned mapping of at least
        // size_of::<NodeState>() bytes (its alignment is at most a page).
        unsafe { p.write(NodeState::new(id, bind)) };
        // Only this thread publishes (the install lock).
        slot.store(p, Ordering::Release);
        // SAFETY: just written, now published and never freed.
        Ok(unsafe { &*p })
    }

    // -------------------------------------------------------------- reservations

    /// Maps a 2 MiB-aligned reservation, binds it to the node before any
    /// touch, and records it in the address table.
    fn reserve(&self, st: &NodeState) -> Result<*mut u8, SlabError> {
        let base = map_reservation()?;
        let fail = |e| {
            // SAFETY: the reservation was never handed out.
            unsafe { unmap_range(base, RESERVATION) };
            Err(e)
        };
        let bound = match bind_fresh(base, RESERVATION, st.bind) {
            Ok(b) => b,
            Err(e) => return fail(e),
        };
        if let Err(e) = self.record(base.as_ptr().addr(), st.id) {
            return fail(e);
        }
        bump(&st.stats.reservations, 1);
        if !bound {
            bump(&st.stats.unbound, 1);
        }
        Ok(base.as_ptr())
    }

    /// Records `node` as the home of the 2 MiB region at `base`.
    fn record(&self, base: usize, node: u32) -> Result<(), SlabError> {
        let region = base >> REGION_SHIFT;
        let top = region >> LEAF_BITS;
        let Some(slot) = region_slot(top) else {
            return Err(SlabError::Unaddressable { addr: base });
        };
        let mut leaf = slot.load(Ordering::Acquire);
        if leaf.is_null() {
            let bytes = std::mem::size_of::<Leaf>();
            // Zeroed memory is a valid Leaf (atomics of 0: no region).
            let fresh = map(bytes)?;
            leaf = match slot.compare_exchange(
                ptr::null_mut(),
                fresh.as_ptr().cast::<Leaf>(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => fresh.as_ptr().cast::<Leaf>(),
                Err(winner) => {
                    // SAFETY: `fresh` was never published.
                    unsafe { unmap_range(fresh, bytes) };
                    winner
                }
            };
        }
        // SAFETY: published leaves are never freed. (A reference to the
        // one entry, as in `home_of`.)
        let entry = unsafe { &(*leaf).entries[region & (LEAF_LEN - 1)] };
        entry.store(node as u16 + 1, Ordering::Release);
        Ok(())
    }

    #[inline]
    fn home_of(&self, addr: usize) -> u32 {
        let region = addr >> REGION_SHIFT;
        let Some(slot) = region_slot(region >> LEAF_BITS) else {
            return NO_NODE;
        };
        let leaf = slot.load(Ordering::Acquire);
        if leaf.is_null() {
            return NO_NODE;
        }
        // SAFETY: published leaves are never freed.
        let e = unsafe { &(*leaf).entries[region & (LEAF_LEN - 1)] };
        match e.load(Ordering::Acquire) {
            0 => NO_NODE,
            n => u32::from(n) - 1,
        }
    }

    // -------------------------------------------------------------- large blocks

    fn alloc_large(&self, node: u32, layout: Layout) -> Result<NonNull<u8>, SlabError> {
        let st = self.state_or_create(node)?;
        let ps = page_size();
        let too_large = SlabError::TooLarge {
            size: layout.size(),
            align: layout.align(),
        };
        let align = layout.align().max(ps);
        let size = round_up(layout.size().max(1), ps).ok_or(too_large)?;
        // The mapping is trimmed from `size + align - page` bytes.
        size.checked_add(align - ps).ok_or(too_large)?;
        let start = map_large(size, align)?;
        match bind_fresh(start, size, st.bind) {
            Ok(_) => {
                bump(&st.stats.large_allocs, 1);
                Ok(start)
            }
            Err(e) => {
                // SAFETY: never handed out.
                unsafe { unmap_range(start, size) };
                Err(e)
            }
        }
    }
}

/// # Safety
/// `ptr` is a large block of `layout` from [`SlabPool::alloc_large`], unused.
unsafe fn dealloc_large(ptr: NonNull<u8>, layout: Layout) {
    let size = round_up(layout.size().max(1), page_size()).unwrap_or(0);
    // SAFETY: the block is exactly the page-rounded mapping made for it.
    unsafe { unmap_range(ptr, size) };
}

// ------------------------------------------------------------------ test hooks

/// A stand-in node for tests on machines with fewer nodes: its blocks have
/// home `id` but its memory is bound to `bind`. Lets a one-node machine
/// exercise remote frees.
#[cfg(test)]
fn stand_in_node(id: u32, bind: u32) -> NodeId {
    if POOL.state(id).is_none() {
        let _ = POOL.install(id, bind);
    }
    NodeId::new(id)
}

/// [`set_thread_node`] without the `mems_allowed` check, for stand-ins.
#[cfg(test)]
fn set_thread_node_unchecked(node: NodeId) {
    set_node_of_thread(node.os_index());
}
