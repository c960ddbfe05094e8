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
//! - As with any allocator using locks, a child forked from a
//!   multithreaded process must not allocate before `exec`.

#![warn(unsafe_op_in_unsafe_fn)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::fmt;
use std::io;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use crate::numa::sys::{self, map_anonymous, page_size, unmap, NodeMask, MASK_WORDS};
use crate::numa::{current_cpu_and_node, NodeId};

#[cfg(test)]
mod tests;

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

// ------------------------------------------------------------------ errors

/// Why the slab pool could not serve a request.
///
/// It holds no heap data, so the allocator can make one while it is the
/// global allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlabError {
    /// The node does not exist, is above node 1023, or is outside the nodes
    /// this process may allocate on (`mems_allowed`).
    NodeNotAllowed {
        /// The node asked for.
        node: NodeId,
    },
    /// `mmap` refused a mapping of this many bytes.
    OutOfMemory {
        /// Bytes asked of `mmap`.
        bytes: usize,
        /// The `errno` of `mmap`.
        errno: i32,
    },
    /// `mbind` refused to bind fresh memory to the node.
    Bind {
        /// The node.
        node: NodeId,
        /// The `errno` of `mbind`.
        errno: i32,
    },
    /// The request, rounded up to whole pages and its alignment, does not
    /// fit in the address space.
    TooLarge {
        /// Bytes requested.
        size: usize,
        /// Alignment requested.
        align: usize,
    },
    /// `mmap` returned memory above the 256 TiB the pool's address table
    /// covers (only possible with 5-level page tables and an address hint).
    Unaddressable {
        /// The address of the mapping.
        addr: usize,
    },
}

impl fmt::Display for SlabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let os = |errno: i32| io::Error::from_raw_os_error(errno);
        match *self {
            SlabError::NodeNotAllowed { node } => write!(
                f,
                "{node} is not a node this process may allocate on (mems_allowed)"
            ),
            SlabError::OutOfMemory { bytes, errno } => {
                write!(f, "mmap of {bytes} bytes failed: {}", os(errno))
            }
            SlabError::Bind { node, errno } => {
                write!(f, "mbind of fresh memory to {node} failed: {}", os(errno))
            }
            SlabError::TooLarge { size, align } => write!(
                f,
                "a block of {size} bytes aligned to {align} does not fit in the address space"
            ),
            SlabError::Unaddressable { addr } => write!(
                f,
                "mmap returned {addr:#x}, above the 48-bit addresses the slab pool tracks"
            ),
        }
    }
}

impl std::error::Error for SlabError {}

// ------------------------------------------------------------------ statistics

/// A snapshot of one node's counters (relaxed atomics, so a snapshot taken
/// while other threads allocate may be slightly inconsistent).
///
/// "Shared lists" are the node's locked per-class lists; blocks move between
/// them and threads in batches, so these counters do not count every
/// allocation: a block reused within a thread's cache is never counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlabStats {
    /// 2 MiB reservations mapped and bound for this node.
    pub reservations: u64,
    /// Reservations left unbound because the kernel refuses memory policies
    /// (`ENOSYS`, `EPERM`); 0 on a normal NUMA kernel.
    pub unbound: u64,
    /// 64 KiB chunks cut from the reservations.
    pub chunks: u64,
    /// Blocks cut from chunks (each block is cut once, then reused).
    pub blocks_carved: u64,
    /// Blocks handed from the shared lists to threads (cache refills) or to
    /// callers (locked allocations).
    pub blocks_handed_out: u64,
    /// Blocks given back to the shared lists by threads of this node (cache
    /// overflow, flushes, thread exit, locked frees).
    pub blocks_returned: u64,
    /// Batches of blocks freed by threads of other nodes and given back to
    /// this node's shared lists.
    pub remote_batches: u64,
    /// Blocks in those batches.
    pub remote_blocks: u64,
    /// Large requests (above 64 KiB) mapped and bound to this node.
    pub large_allocs: u64,
}

impl SlabStats {
    /// Bytes reserved for this node's slabs.
    pub fn reserved_bytes(&self) -> u64 {
        self.reservations * RESERVATION as u64
    }
}

#[derive(Default)]
struct Counters {
    reservations: AtomicU64,
    unbound: AtomicU64,
    chunks: AtomicU64,
    blocks_carved: AtomicU64,
    blocks_handed_out: AtomicU64,
    blocks_returned: AtomicU64,
    remote_batches: AtomicU64,
    remote_blocks: AtomicU64,
    large_allocs: AtomicU64,
}

fn bump(counter: &AtomicU64, by: usize) {
    counter.fetch_add(by as u64, Ordering::Relaxed);
}

impl Counters {
    fn snapshot(&self) -> SlabStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SlabStats {
            reservations: r(&self.reservations),
            unbound: r(&self.unbound),
            chunks: r(&self.chunks),
            blocks_carved: r(&self.blocks_carved),
            blocks_handed_out: r(&self.blocks_handed_out),
            blocks_returned: r(&self.blocks_returned),
            remote_batches: r(&self.remote_batches),
            remote_blocks: r(&self.remote_blocks),
            large_allocs: r(&self.large_allocs),
        }
    }
}

// ------------------------------------------------------------------ kernel

/// The nodes this process may allocate on, as a raw mask; `None` when the
/// kernel cannot tell (no NUMA support, or the call is filtered).
fn allowed_mask() -> Option<NodeMask> {
    sys::get_mempolicy(0, sys::MPOL_F_MEMS_ALLOWED)
        .ok()
        .map(|(_, mask)| mask)
}

fn mask_has(mask: &NodeMask, node: u32) -> bool {
    (node as usize) < MAX_NODES && mask[node as usize / 64] >> (node % 64) & 1 == 1
}

/// Whether this process may allocate on `node`. Without an answer from the
/// kernel only node 0 is allowed.
fn node_allowed(node: u32) -> bool {
    match allowed_mask() {
        Some(mask) => mask_has(&mask, node),
        None => node == 0,
    }
}

/// The lowest node this process may allocate on (0 if the kernel cannot
/// tell), computed once.
fn default_node() -> u32 {
    const UNSET: u32 = u32::MAX;
    static DEFAULT: AtomicU32 = AtomicU32::new(UNSET);
    let n = DEFAULT.load(Ordering::Relaxed);
    if n != UNSET {
        return n;
    }
    let n = allowed_mask()
        .and_then(|mask| (0..MAX_NODES as u32).find(|&i| mask_has(&mask, i)))
        .unwrap_or(0);
    DEFAULT.store(n, Ordering::Relaxed);
    n
}

/// Binds the untouched range to `node` with the raw `mbind` (the safe
/// `bind_raw` allocates). `Ok(false)`: the kernel refuses memory policies
/// altogether, the range stays unbound.
fn bind_fresh(addr: usize, len: usize, node: u32) -> Result<bool, SlabError> {
    let mut mask: NodeMask = [0; MASK_WORDS];
    mask[node as usize / 64] |= 1 << (node % 64);
    match sys::mbind(addr, len, libc::MPOL_BIND, Some(&mask), 0) {
        Ok(()) => Ok(true),
        Err(e) => match e.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EPERM) => Ok(false),
            errno => Err(SlabError::Bind {
                node: NodeId::new(node),
                errno: errno.unwrap_or(0),
            }),
        },
    }
}

fn map(bytes: usize) -> Result<usize, SlabError> {
    map_anonymous(bytes)
        .map(|p| p.as_ptr() as usize)
        .map_err(|e| SlabError::OutOfMemory {
            bytes,
            errno: e.raw_os_error().unwrap_or(0),
        })
}

/// Unmaps `[addr, addr + len)`; nothing for `len == 0`.
///
/// # Safety
/// The range is page-aligned, part of a mapping of [`map`], and unused.
unsafe fn unmap_range(addr: usize, len: usize) {
    if len == 0 {
        return;
    }
    if let Some(p) = NonNull::new(addr as *mut u8) {
        // SAFETY: the caller's contract is unmap's.
        unsafe { unmap(p, len) };
    }
}

// ------------------------------------------------------------------ magazines and shared lists

/// Blocks a magazine holds: the largest batch.
const MAG: usize = MAX_BATCH;
/// Blocks a thread caches per class, at most: two batches.
const CACHE_CAP: usize = 2 * MAX_BATCH;

/// A magazine: an array of pointers to free blocks of one class and node,
/// the unit in which blocks move between threads and a node's shared
/// lists. Magazines are cut from reservations, never freed, and recycled
/// through the `empty` lists. The allocator never writes into a free
/// block, so freeing a block (even from another node) does not touch its
/// memory, and cutting a block does not fault its pages in.
struct Magazine {
    next: *mut Magazine,
    len: usize,
    slots: [*mut u8; MAG],
}

/// One size class of one node: magazines of free blocks, empty magazines,
/// and the chunk being cut.
struct Central {
    /// Magazines holding at least one block.
    full: *mut Magazine,
    /// Magazines holding none.
    empty: *mut Magazine,
    /// The unused part of the current chunk.
    bump: usize,
    end: usize,
}

// SAFETY: the magazines a Central points to, and the free blocks they
// hold, are referred to only by the list (behind its mutex); moving the
// list to another thread moves that ownership with it.
unsafe impl Send for Central {}

impl Central {
    const EMPTY: Central = Central {
        full: ptr::null_mut(),
        empty: ptr::null_mut(),
        bump: 0,
        end: 0,
    };

    /// # Safety
    /// `m` is a live magazine with `len >= 1` that the caller gives up.
    unsafe fn push_full(&mut self, m: *mut Magazine) {
        // SAFETY: the magazine is ours (caller).
        unsafe { (*m).next = self.full };
        self.full = m;
    }

    /// # Safety
    /// `m` is a live magazine that the caller gives up (its blocks, if
    /// any, are forgotten: the caller took them).
    unsafe fn push_empty(&mut self, m: *mut Magazine) {
        // SAFETY: the magazine is ours (caller).
        unsafe {
            (*m).len = 0;
            (*m).next = self.empty;
        }
        self.empty = m;
    }

    fn pop_full(&mut self) -> Option<*mut Magazine> {
        let m = NonNull::new(self.full)?.as_ptr();
        // SAFETY: magazines on the list are live and owned by it.
        self.full = unsafe { (*m).next };
        Some(m)
    }

    fn pop_empty(&mut self) -> Option<*mut Magazine> {
        let m = NonNull::new(self.empty)?.as_ptr();
        // SAFETY: magazines on the list are live and owned by it.
        self.empty = unsafe { (*m).next };
        Some(m)
    }
}

/// A mutex on its own cache line, so that classes do not share lines.
#[repr(align(64))]
struct CentralSlot(Mutex<Central>);

/// The current reservation of a node (chunks `next..end` are unused) and
/// the chunk magazines are cut from.
struct Reserve {
    next: usize,
    end: usize,
    mag_next: usize,
    mag_end: usize,
}

/// Everything the pool keeps for one node. Made on first use in its own
/// mapping and never freed.
struct NodeState {
    /// The node blocks of this state belong to.
    id: u32,
    /// The node its memory is bound to (`id`, except for the test-only
    /// stand-in nodes of a one-node machine).
    bind: u32,
    classes: [CentralSlot; CLASSES],
    reserve: Mutex<Reserve>,
    stats: Counters,
}

const _: () = assert!(std::mem::align_of::<NodeState>() <= 4096);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The allocator never panics while holding a lock; should a poisoned
    // lock appear anyway, its data is still consistent between operations.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl NodeState {
    fn new(id: u32, bind: u32) -> NodeState {
        NodeState {
            id,
            bind,
            classes: [const { CentralSlot(Mutex::new(Central::EMPTY)) }; CLASSES],
            reserve: Mutex::new(Reserve {
                next: 0,
                end: 0,
                mag_next: 0,
                mag_end: 0,
            }),
            stats: Counters::default(),
        }
    }

    fn central(&self, class: usize) -> MutexGuard<'_, Central> {
        lock(&self.classes[class].0)
    }

    /// A fresh 64 KiB chunk, from the current reservation or a new one.
    fn take_chunk(&self, pool: &SlabPool, r: &mut Reserve) -> Result<usize, SlabError> {
        if r.next == r.end {
            let base = pool.reserve(self)?;
            r.next = base;
            r.end = base + RESERVATION;
        }
        let chunk = r.next;
        r.next += CHUNK;
        bump(&self.stats.chunks, 1);
        Ok(chunk)
    }

    /// A new, empty magazine, cut from a chunk of this node.
    fn new_magazine(&self, pool: &SlabPool) -> Result<*mut Magazine, SlabError> {
        const SIZE: usize = std::mem::size_of::<Magazine>();
        let mut r = lock(&self.reserve);
        if r.mag_end - r.mag_next < SIZE {
            let chunk = self.take_chunk(pool, &mut r)?;
            r.mag_next = chunk;
            r.mag_end = chunk + CHUNK;
        }
        let m = r.mag_next as *mut Magazine;
        r.mag_next += SIZE;
        // SAFETY: `m` is unused, writable memory of a chunk reserved for
        // magazines, aligned (chunks are, and SIZE is a multiple of 8).
        unsafe {
            m.write(Magazine {
                next: ptr::null_mut(),
                len: 0,
                slots: [ptr::null_mut(); MAG],
            })
        };
        Ok(m)
    }

    fn empty_magazine(&self, pool: &SlabPool, c: &mut Central) -> Result<*mut Magazine, SlabError> {
        match c.pop_empty() {
            Some(m) => Ok(m),
            None => self.new_magazine(pool),
        }
    }

    /// Cuts up to `out.len()` blocks of `class` from the current chunk (a
    /// new one if it is used up) into `out`; returns how many (at least 1).
    /// The blocks' memory is not touched.
    fn carve(
        &self,
        pool: &SlabPool,
        c: &mut Central,
        class: usize,
        out: &mut [*mut u8],
    ) -> Result<usize, SlabError> {
        let size = class_size(class);
        if c.end - c.bump < size {
            let chunk = self.take_chunk(pool, &mut lock(&self.reserve))?;
            c.bump = chunk;
            c.end = chunk + CHUNK;
        }
        // Chunks are aligned and a multiple of every class size: no rest.
        let n = out.len().min((c.end - c.bump) / size);
        for (i, slot) in out[..n].iter_mut().enumerate() {
            *slot = (c.bump + i * size) as *mut u8;
        }
        c.bump += n * size;
        bump(&self.stats.blocks_carved, n);
        Ok(n)
    }

    /// Fills `out` (at least a magazine long) with free blocks of `class`:
    /// a magazine's worth from the shared list, or a batch freshly cut.
    ///
    /// `spare` is the calling thread's empty magazine for this class (or
    /// null): it goes back to the list and the magazine just emptied takes
    /// its place, so that the lock is held for pointer operations only, and
    /// the copy happens outside it.
    fn refill(
        &self,
        pool: &SlabPool,
        class: usize,
        out: &mut [*mut u8],
        spare: &mut *mut Magazine,
    ) -> Result<usize, SlabError> {
        let mut c = self.central(class);
        let Some(m) = c.pop_full() else {
            // Cutting is pointer arithmetic: no memory is touched.
            let n = self.carve(pool, &mut c, class, &mut out[..BATCH[class]])?;
            drop(c);
            bump(&self.stats.blocks_handed_out, n);
            return Ok(n);
        };
        if !spare.is_null() {
            // SAFETY: the thread's spare is an empty magazine it gives up.
            unsafe { c.push_empty(*spare) };
        }
        drop(c);
        // SAFETY: `m` came off the list: ours now, holding `len` (1..=MAG)
        // blocks in its first slots.
        let n = unsafe {
            let mag = &mut *m;
            let n = mag.len;
            out[..n].copy_from_slice(&mag.slots[..n]);
            mag.len = 0;
            n
        };
        *spare = m;
        bump(&self.stats.blocks_handed_out, n);
        Ok(n)
    }

    /// Gives at most a magazine of free blocks of `class` of this node back
    /// to the shared list, in the thread's `spare` empty magazine (fetched
    /// if null), and takes an empty one as the next spare, in one lock held
    /// for pointer operations only. Should no magazine be available (out of
    /// memory), the blocks are lost rather than reused.
    fn give_back(
        &self,
        pool: &SlabPool,
        class: usize,
        blocks: &[*mut u8],
        spare: &mut *mut Magazine,
    ) {
        debug_assert!(blocks.len() <= MAG);
        if blocks.is_empty() {
            return;
        }
        let m = match NonNull::new(*spare) {
            Some(m) => m.as_ptr(),
            None => match self.empty_magazine(pool, &mut self.central(class)) {
                Ok(m) => m,
                Err(_) => return,
            },
        };
        // SAFETY: `m` is an empty magazine this thread owns; `blocks` fits.
        unsafe {
            let mag = &mut *m;
            mag.slots[..blocks.len()].copy_from_slice(blocks);
            mag.len = blocks.len();
        }
        let mut c = self.central(class);
        // SAFETY: `m` holds `blocks.len() >= 1` free blocks of this node.
        unsafe { c.push_full(m) };
        *spare = c.pop_empty().unwrap_or(ptr::null_mut());
        drop(c);
        bump(&self.stats.blocks_returned, blocks.len());
    }

    /// Gives a thread's empty magazine back.
    ///
    /// # Safety
    /// `m` is null or an empty magazine the caller gives up.
    unsafe fn return_empty(&self, class: usize, m: *mut Magazine) {
        if !m.is_null() {
            // SAFETY: the caller's.
            unsafe { self.central(class).push_empty(m) };
        }
    }

    /// Takes a magazine (full of blocks of this node, or empty) from a
    /// thread; returns an empty one for its next remote batch, if handy.
    ///
    /// # Safety
    /// `m` is a live magazine the caller gives up; its blocks are free
    /// blocks of `class` of this node.
    unsafe fn take_magazine(&self, class: usize, m: *mut Magazine, swap: bool) -> *mut Magazine {
        let mut c = self.central(class);
        // SAFETY: the magazine is ours (caller).
        let len = unsafe { (*m).len };
        if len == 0 {
            // SAFETY: as above.
            unsafe { c.push_empty(m) };
            return ptr::null_mut();
        }
        // SAFETY: as above, with at least one block.
        unsafe { c.push_full(m) };
        let next = if swap { c.pop_empty() } else { None };
        drop(c);
        bump(&self.stats.remote_batches, 1);
        bump(&self.stats.remote_blocks, len);
        next.unwrap_or(ptr::null_mut())
    }

    /// One block, under the lock (no thread cache).
    fn alloc_locked(&self, pool: &SlabPool, class: usize) -> Result<NonNull<u8>, SlabError> {
        let mut c = self.central(class);
        let p = match NonNull::new(c.full) {
            Some(m) => {
                let m = m.as_ptr();
                // SAFETY: the list's first magazine, which holds at least
                // one block; an emptied magazine moves to `empty`.
                unsafe {
                    (*m).len -= 1;
                    let p = (*m).slots[(*m).len];
                    if (*m).len == 0 {
                        c.pop_full();
                        c.push_empty(m);
                    }
                    p
                }
            }
            None => {
                let mut one = [ptr::null_mut(); 1];
                self.carve(pool, &mut c, class, &mut one)?;
                one[0]
            }
        };
        drop(c);
        bump(&self.stats.blocks_handed_out, 1);
        // Blocks are never null (they are inside mappings).
        Ok(NonNull::new(p).unwrap_or(NonNull::dangling()))
    }

    /// Frees one block under the lock (no thread cache). Should no magazine
    /// be available (out of memory), the block is lost rather than reused.
    fn free_locked(&self, pool: &SlabPool, class: usize, p: *mut u8, remote: bool) {
        let mut c = self.central(class);
        // SAFETY: magazines of the lists are ours under the lock.
        unsafe {
            let m = match NonNull::new(c.full) {
                Some(m) if (*m.as_ptr()).len < MAG => m.as_ptr(),
                _ => {
                    let Ok(m) = self.empty_magazine(pool, &mut c) else {
                        return;
                    };
                    c.push_full(m);
                    m
                }
            };
            (*m).slots[(*m).len] = p;
            (*m).len += 1;
        }
        drop(c);
        if remote {
            bump(&self.stats.remote_batches, 1);
            bump(&self.stats.remote_blocks, 1);
        } else {
            bump(&self.stats.blocks_returned, 1);
        }
    }
}

// ------------------------------------------------------------------ thread caches

/// Free blocks of one class of the thread's node, a stack of pointers.
#[derive(Clone, Copy)]
struct ClassCache {
    len: usize,
    /// An empty magazine for the next give-back, or null.
    mag: *mut Magazine,
    slots: [*mut u8; CACHE_CAP],
}

/// A magazine being filled with blocks of one class freed by this thread
/// whose home is `node`, another node.
#[derive(Clone, Copy)]
struct RemoteSlot {
    mag: *mut Magazine,
    node: u32,
}

/// Not yet used: the node may be unknown and no exit hook is armed.
const UNINIT: u8 = 0;
/// Finding the node and arming the exit hook; a reentrant call (an
/// allocation in the error path of `getcpu`) uses the locked path.
const INITIALIZING: u8 = 1;
/// The caches are in use.
const ACTIVE: u8 = 2;
/// No caches: the exit hook ran, or could not be armed.
const LOCKED: u8 = 3;

const NODE_UNKNOWN: u32 = u32::MAX;

/// A thread's caches. Every function touching it takes a raw pointer and
/// holds no reference to it across a call that could allocate, so a
/// reentrant allocation (only possible while `INITIALIZING`) sees a
/// consistent state.
struct ThreadCache {
    state: u8,
    /// The thread's node: set by `set_thread_node`, or found at init.
    node: u32,
    classes: [ClassCache; CLASSES],
    remote: [[RemoteSlot; REMOTE_SLOTS]; CLASSES],
}

impl ThreadCache {
    const EMPTY_CLASS: ClassCache = ClassCache {
        len: 0,
        mag: ptr::null_mut(),
        slots: [ptr::null_mut(); CACHE_CAP],
    };
    const NEW: ThreadCache = ThreadCache {
        state: UNINIT,
        node: NODE_UNKNOWN,
        classes: [ThreadCache::EMPTY_CLASS; CLASSES],
        remote: [[RemoteSlot {
            mag: ptr::null_mut(),
            node: 0,
        }; REMOTE_SLOTS]; CLASSES],
    };
}

thread_local! {
    // `const` and no `Drop`: plain thread-local storage, which never
    // allocates nor registers a destructor (see the exit key below).
    static CACHE: UnsafeCell<ThreadCache> = const { UnsafeCell::new(ThreadCache::NEW) };
}

#[inline(always)]
fn with_cache<R>(f: impl FnOnce(*mut ThreadCache) -> R) -> R {
    CACHE.with(|c| f(c.get()))
}

/// The key whose destructor flushes a thread's caches at thread exit.
fn exit_key() -> Option<libc::pthread_key_t> {
    static KEY: OnceLock<Option<libc::pthread_key_t>> = OnceLock::new();
    *KEY.get_or_init(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is writable; the destructor is a valid
        // `extern "C" fn(*mut c_void)` that never unwinds.
        let rc = unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) };
        (rc == 0).then_some(key)
    })
}

/// Runs at thread exit (after Rust's thread-local destructors): hands the
/// caches back and switches the thread to the locked path.
unsafe extern "C" fn on_thread_exit(_: *mut libc::c_void) {
    with_cache(|tc| {
        // SAFETY: `tc` is this thread's cache; nothing else uses it while
        // this destructor runs.
        unsafe {
            let was = (*tc).state;
            (*tc).state = LOCKED;
            if was == ACTIVE {
                POOL.flush(tc);
            }
        }
    });
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
    nodes: [AtomicPtr<NodeState>; MAX_NODES],
    regions: [AtomicPtr<Leaf>; TOP_LEN],
}

static POOL: SlabPool = SlabPool {
    nodes: [const { AtomicPtr::new(ptr::null_mut()) }; MAX_NODES],
    regions: [const { AtomicPtr::new(ptr::null_mut()) }; TOP_LEN],
};

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
        match self.home_of(ptr as usize) {
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
        let p = self.nodes.get(node as usize)?.load(Ordering::Acquire);
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

    /// Makes and publishes the state of node `id`, bound to node `bind`.
    fn install(&self, id: u32, bind: u32) -> Result<&NodeState, SlabError> {
        let slot = self
            .nodes
            .get(id as usize)
            .ok_or(SlabError::NodeNotAllowed {
                node: NodeId::new(id),
            })?;
        let bytes = round_up(std::mem::size_of::<NodeState>(), page_size()).unwrap_or(usize::MAX);
        let p = map(bytes)? as *mut NodeState;
        // SAFETY: a fresh, writable, page-aligned mapping of at least
        // size_of::<NodeState>() bytes (its alignment is at most a page).
        unsafe { p.write(NodeState::new(id, bind)) };
        match slot.compare_exchange(ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: just written, now published and never freed.
            Ok(_) => Ok(unsafe { &*p }),
            Err(winner) => {
                // SAFETY: our copy was never published; NodeState owns no
                // heap memory, so unmapping it is all its drop needs. The
                // winner is published and never freed.
                unsafe {
                    unmap_range(p as usize, bytes);
                    Ok(&*winner)
                }
            }
        }
    }

    // -------------------------------------------------------------- reservations

    /// Maps a 2 MiB-aligned reservation, binds it to the node before any
    /// touch, and records it in the address table.
    fn reserve(&self, st: &NodeState) -> Result<usize, SlabError> {
        let raw = map(2 * RESERVATION)?;
        let base = (raw + RESERVATION - 1) & !(RESERVATION - 1);
        // SAFETY: head and tail are page-aligned parts of our fresh mapping
        // (both ends are page-aligned), which nothing uses.
        unsafe {
            unmap_range(raw, base - raw);
            unmap_range(
                base + RESERVATION,
                raw + 2 * RESERVATION - (base + RESERVATION),
            );
        }
        let fail = |e| {
            // SAFETY: the reservation was never handed out.
            unsafe { unmap_range(base, RESERVATION) };
            Err(e)
        };
        let bound = match bind_fresh(base, RESERVATION, st.bind) {
            Ok(b) => b,
            Err(e) => return fail(e),
        };
        if let Err(e) = self.record(base, st.id) {
            return fail(e);
        }
        bump(&st.stats.reservations, 1);
        if !bound {
            bump(&st.stats.unbound, 1);
        }
        Ok(base)
    }

    /// Records `node` as the home of the 2 MiB region at `base`.
    fn record(&self, base: usize, node: u32) -> Result<(), SlabError> {
        let region = base >> REGION_SHIFT;
        let top = region >> LEAF_BITS;
        let Some(slot) = self.regions.get(top) else {
            return Err(SlabError::Unaddressable { addr: base });
        };
        let mut leaf = slot.load(Ordering::Acquire);
        if leaf.is_null() {
            let bytes = std::mem::size_of::<Leaf>();
            // Zeroed memory is a valid Leaf (atomics of 0: no region).
            let fresh = map(bytes)? as *mut Leaf;
            leaf = match slot.compare_exchange(
                ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => fresh,
                Err(winner) => {
                    // SAFETY: `fresh` was never published.
                    unsafe { unmap_range(fresh as usize, bytes) };
                    winner
                }
            };
        }
        // SAFETY: published leaves are never freed.
        let leaf = unsafe { &*leaf };
        leaf.entries[region & (LEAF_LEN - 1)].store(node as u16 + 1, Ordering::Release);
        Ok(())
    }

    #[inline]
    fn home_of(&self, addr: usize) -> u32 {
        let region = addr >> REGION_SHIFT;
        let Some(slot) = self.regions.get(region >> LEAF_BITS) else {
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

    // -------------------------------------------------------------- small blocks

    /// Pops a block from the calling thread's cache; null when the cache is
    /// empty or not active.
    #[inline(always)]
    fn pop_cached(class: usize) -> *mut u8 {
        with_cache(|tc| {
            // SAFETY: `tc` is this thread's cache with no reference live
            // (see ThreadCache); the popped pointer is a free block of the
            // thread's node, now the caller's.
            unsafe {
                if (*tc).state != ACTIVE {
                    return ptr::null_mut();
                }
                let cc = &mut (*tc).classes[class];
                if cc.len == 0 {
                    return ptr::null_mut();
                }
                cc.len -= 1;
                cc.slots[cc.len]
            }
        })
    }

    #[inline(always)]
    fn alloc_small(&self, class: usize) -> Result<NonNull<u8>, SlabError> {
        match NonNull::new(Self::pop_cached(class)) {
            Some(p) => Ok(p),
            None => self.alloc_small_slow(class),
        }
    }

    /// An empty cache, or a thread without caches.
    #[cold]
    #[inline(never)]
    fn alloc_small_slow(&self, class: usize) -> Result<NonNull<u8>, SlabError> {
        with_cache(|tc| {
            // SAFETY: `tc` is this thread's cache with no reference live
            // across a call that may allocate (only `init_thread` may, and
            // it holds none); the cache's blocks are free blocks of its node.
            unsafe {
                if (*tc).state == UNINIT {
                    self.init_thread(tc);
                }
                if (*tc).state != ACTIVE {
                    let st = self.state_or_create(locked_node(tc))?;
                    return st.alloc_locked(self, class);
                }
                let st = self.state((*tc).node).ok_or(SlabError::NodeNotAllowed {
                    node: NodeId::new((*tc).node),
                })?;
                let cc = &mut (*tc).classes[class];
                if cc.len == 0 {
                    cc.len = st.refill(self, class, &mut cc.slots, &mut cc.mag)?;
                }
                cc.len -= 1;
                Ok(NonNull::new(cc.slots[cc.len]).unwrap_or(NonNull::dangling()))
            }
        })
    }

    /// # Safety
    /// `ptr` is a live block of class `class` of this pool, unused from now.
    #[inline(always)]
    unsafe fn dealloc_small(&self, ptr: NonNull<u8>, class: usize) {
        let home = self.home_of(ptr.as_ptr() as usize);
        if home == NO_NODE {
            // Not a slab block: a broken caller contract. Leaking it is the
            // only answer that cannot corrupt a list.
            return;
        }
        let p = ptr.as_ptr();
        let cached = with_cache(|tc| {
            // SAFETY: `tc` is this thread's cache with no reference live;
            // the block is free now (caller) and belongs to its node.
            unsafe {
                if (*tc).state == ACTIVE && (*tc).node == home {
                    let cc = &mut (*tc).classes[class];
                    if cc.len < 2 * BATCH[class] {
                        cc.slots[cc.len] = p;
                        cc.len += 1;
                        return true;
                    }
                }
                false
            }
        });
        if !cached {
            // SAFETY: forwarded.
            unsafe { self.dealloc_small_slow(p, class, home) };
        }
    }

    /// A free that is not a push on a cache with room: a full cache, a
    /// remote block, or a thread without caches.
    ///
    /// # Safety
    /// `p` is a freed block of `class` whose home is `home`.
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_small_slow(&self, p: *mut u8, class: usize, home: u32) {
        let Some(home_st) = self.state(home) else {
            return;
        };
        with_cache(|tc| {
            // SAFETY: `tc` is this thread's cache with no reference live
            // across a call that may allocate (only `init_thread`).
            unsafe {
                if (*tc).state == UNINIT {
                    self.init_thread(tc);
                }
                if (*tc).state != ACTIVE {
                    home_st.free_locked(self, class, p, (*tc).node != home);
                    return;
                }
                if (*tc).node != home {
                    self.free_remote(tc, p, class, home_st);
                    return;
                }
                // A full cache: its oldest batch goes back to the node.
                let cc = &mut (*tc).classes[class];
                let batch = BATCH[class];
                if cc.len >= 2 * batch {
                    home_st.give_back(self, class, &cc.slots[..batch], &mut cc.mag);
                    cc.slots.copy_within(batch..cc.len, 0);
                    cc.len -= batch;
                }
                cc.slots[cc.len] = p;
                cc.len += 1;
            }
        });
    }

    /// Adds a block of another node to the thread's remote magazine for
    /// that node, handing the magazine home when it holds a batch.
    ///
    /// # Safety
    /// `tc` is this thread's cache, active, with no reference live; `p` a
    /// freed block of `class` of `home`, not the thread's node.
    unsafe fn free_remote(&self, tc: *mut ThreadCache, p: *mut u8, class: usize, home: &NodeState) {
        // SAFETY: see the contract; a slot's magazine is this thread's.
        unsafe {
            let slot = &mut (*tc).remote[class][home.id as usize % REMOTE_SLOTS];
            if !slot.mag.is_null() && slot.node != home.id && (*slot.mag).len > 0 {
                self.flush_remote(slot, class, true);
            }
            if slot.mag.is_null() {
                let m = home.empty_magazine(self, &mut home.central(class));
                match m {
                    Ok(m) => slot.mag = m,
                    Err(_) => {
                        home.free_locked(self, class, p, true);
                        return;
                    }
                }
            }
            slot.node = home.id;
            let m = slot.mag;
            (*m).slots[(*m).len] = p;
            (*m).len += 1;
            if (*m).len >= BATCH[class] {
                self.flush_remote(slot, class, true);
            }
        }
    }

    /// Hands a remote magazine to its home node; with `swap`, keeps an
    /// empty magazine of that node's for the next batch.
    ///
    /// # Safety
    /// `slot` is a slot of this thread's cache.
    unsafe fn flush_remote(&self, slot: &mut RemoteSlot, class: usize, swap: bool) {
        if slot.mag.is_null() {
            return;
        }
        if let Some(st) = self.state(slot.node) {
            // SAFETY: the slot's magazine is this thread's; its blocks are
            // freed blocks of `class` of `slot.node`.
            slot.mag = unsafe { st.take_magazine(class, slot.mag, swap) };
        }
    }

    /// Hands every cached block back to its node.
    ///
    /// # Safety
    /// `tc` is this thread's cache with no reference live.
    unsafe fn flush(&self, tc: *mut ThreadCache) {
        // SAFETY: see the contract; the local stacks hold blocks of the
        // thread's node, the remote slots blocks of their recorded nodes.
        unsafe {
            let local = self.state((*tc).node);
            for class in 0..CLASSES {
                let cc = &mut (*tc).classes[class];
                if let Some(st) = local {
                    for part in cc.slots[..cc.len].chunks(MAG) {
                        st.give_back(self, class, part, &mut cc.mag);
                    }
                    st.return_empty(class, cc.mag);
                    cc.mag = ptr::null_mut();
                }
                cc.len = 0;
                for slot in (*tc).remote[class].iter_mut() {
                    self.flush_remote(slot, class, false);
                }
            }
        }
    }

    /// First use of the caches on this thread: find the node, make its
    /// state, arm the exit hook.
    ///
    /// # Safety
    /// `tc` is this thread's cache in state `UNINIT`, with no reference live.
    #[cold]
    unsafe fn init_thread(&self, tc: *mut ThreadCache) {
        // SAFETY: field accesses through the raw pointer; `resolve_node`
        // may reenter the allocator, which then sees INITIALIZING and does
        // not touch the caches.
        unsafe {
            (*tc).state = INITIALIZING;
            let mut node = match (*tc).node {
                NODE_UNKNOWN => resolve_node(),
                n => n,
            };
            if self.state_or_create(node).is_err() {
                node = default_node();
                if self.state_or_create(node).is_err() {
                    // No memory for the node's state: try again next time.
                    (*tc).state = UNINIT;
                    return;
                }
            }
            (*tc).node = node;
            let armed = exit_key().is_some_and(|key| {
                libc::pthread_setspecific(key, NonNull::<u8>::dangling().as_ptr().cast()) == 0
            });
            (*tc).state = if armed { ACTIVE } else { LOCKED };
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
        let len = size.checked_add(align - ps).ok_or(too_large)?;
        let raw = map(len)?;
        let start = (raw + align - 1) & !(align - 1);
        // SAFETY: page-aligned head and tail of our fresh mapping, unused.
        unsafe {
            unmap_range(raw, start - raw);
            unmap_range(start + size, raw + len - (start + size));
        }
        match bind_fresh(start, size, st.bind) {
            Ok(_) => {
                bump(&st.stats.large_allocs, 1);
                // `start` is inside a successful mapping: not null.
                Ok(NonNull::new(start as *mut u8).unwrap_or(NonNull::dangling()))
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
    unsafe { unmap_range(ptr.as_ptr() as usize, size) };
}

/// The node for the locked path of a thread without active caches.
///
/// # Safety
/// `tc` is this thread's cache with no reference live.
unsafe fn locked_node(tc: *mut ThreadCache) -> u32 {
    // SAFETY: reading two fields.
    unsafe {
        match ((*tc).state, (*tc).node) {
            (INITIALIZING, _) | (_, NODE_UNKNOWN) => default_node(),
            (_, n) => n,
        }
    }
}

/// The node of the CPU this thread runs on, if this process may allocate
/// there; else the lowest allowed node.
fn resolve_node() -> u32 {
    match current_cpu_and_node() {
        Ok((_, node)) if node_allowed(node.os_index()) => node.os_index(),
        _ => default_node(),
    }
}

/// The calling thread's node, found (and its caches set up) if needed.
fn thread_node_raw() -> u32 {
    with_cache(|tc| {
        // SAFETY: `tc` is this thread's cache with no reference live.
        unsafe {
            if (*tc).state == UNINIT {
                POOL.init_thread(tc);
            }
            locked_node(tc)
        }
    })
}

/// The node whose memory the calling thread's allocations come from: the
/// node given to [`set_thread_node`], else the node of the CPU the thread
/// ran on when it first used the pool (one `getcpu`, then cached).
///
/// ```
/// let node = terroir::pool::thread_node();
/// assert!(terroir::numa::mems_allowed().unwrap().contains(node.os_index()));
/// ```
pub fn thread_node() -> NodeId {
    NodeId::new(thread_node_raw())
}

/// Makes `node` the calling thread's node for the slab pool: later
/// allocations through [`NodeLocalAlloc`] and [`SlabPool::alloc`] come from
/// it. The executor calls it when a worker pinned to a node starts. Blocks
/// the thread had cached for its previous node are handed back first.
///
/// ```
/// use terroir::numa::{mems_allowed, NodeId};
/// use terroir::pool::{set_thread_node, thread_node, SlabError};
/// std::thread::spawn(|| {
///     let node = NodeId::new(mems_allowed().unwrap().iter().next().unwrap());
///     set_thread_node(node).unwrap();
///     assert_eq!(thread_node(), node);
///     let bad = NodeId::new(5000);
///     assert_eq!(set_thread_node(bad), Err(SlabError::NodeNotAllowed { node: bad }));
/// }).join().unwrap();
/// ```
///
/// # Errors
/// [`SlabError::NodeNotAllowed`] for a node this process may not allocate
/// on (the thread's node is unchanged); [`SlabError::OutOfMemory`] if the
/// node's bookkeeping cannot be mapped.
pub fn set_thread_node(node: NodeId) -> Result<(), SlabError> {
    let st = POOL.state_or_create(node.os_index())?;
    set_node_of_thread(st.id);
    Ok(())
}

fn set_node_of_thread(node: u32) {
    with_cache(|tc| {
        // SAFETY: `tc` is this thread's cache with no reference live.
        unsafe {
            if (*tc).state == ACTIVE && (*tc).node != node {
                POOL.flush(tc);
            }
            (*tc).node = node;
        }
    });
}

/// Hands every block cached by the calling thread back to its node's shared
/// lists (the caches fill again on the next allocations). Useful before a
/// thread sleeps for long, and for tests that read [`SlabStats`].
pub fn flush_thread_cache() {
    with_cache(|tc| {
        // SAFETY: `tc` is this thread's cache with no reference live.
        unsafe {
            if (*tc).state == ACTIVE {
                POOL.flush(tc);
            }
        }
    });
}

// ------------------------------------------------------------------ GlobalAlloc

/// A [`GlobalAlloc`] serving each thread from its node's slab pool
/// ([`SlabPool::global`]): blocks up to 64 KiB from the thread's cache,
/// larger ones mapped and bound to the thread's node. It never panics and
/// never allocates through the global allocator, so it can be the process
/// allocator; a failure is a null pointer.
///
/// ```
/// use terroir::pool::{thread_node, NodeLocalAlloc, SlabPool};
///
/// #[global_allocator]
/// static ALLOC: NodeLocalAlloc = NodeLocalAlloc;
///
/// fn main() {
///     let v: Vec<u64> = (0..1000).collect(); // 8000 bytes: a slab block
///     assert_eq!(SlabPool::global().node_of(v.as_ptr().cast()), Some(thread_node()));
///     let words = std::thread::spawn(|| "on another thread".split(' ').count());
///     assert_eq!(words.join().unwrap(), 3);
/// }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeLocalAlloc;

// SAFETY: blocks are at least `layout.size()` bytes and aligned to
// `layout.align()` (class sizes are powers of two of at least both, and
// blocks are aligned to their class size; large blocks are aligned
// mappings); a block is handed out once until freed; nothing here unwinds.
unsafe impl GlobalAlloc for NodeLocalAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(class) = class_of(layout) {
            let p = SlabPool::pop_cached(class);
            if !p.is_null() {
                return p;
            }
            return POOL
                .alloc_small_slow(class)
                .map_or(ptr::null_mut(), NonNull::as_ptr);
        }
        POOL.alloc_large(thread_node_raw(), layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: GlobalAlloc's contract: `ptr` came from `alloc` with
            // this layout.
            unsafe { POOL.dealloc(p, layout) };
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match POOL.alloc(layout) {
            Ok(p) => {
                if class_of(layout).is_some() {
                    // SAFETY: the block holds at least `layout.size()` bytes.
                    unsafe { ptr::write_bytes(p.as_ptr(), 0, layout.size()) };
                }
                // A large block is a fresh mapping: already zero.
                p.as_ptr()
            }
            Err(_) => ptr::null_mut(),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return ptr::null_mut();
        };
        match (class_of(layout), class_of(new_layout)) {
            (Some(a), Some(b)) if a == b => return ptr,
            (None, None) => {
                let ps = page_size();
                let old = round_up(layout.size().max(1), ps);
                let new = round_up(new_size.max(1), ps);
                if let (Some(old), Some(new)) = (old, new) {
                    if new <= old {
                        // SAFETY: the tail pages of our mapping, no longer
                        // part of the block.
                        unsafe { unmap_range(ptr as usize + new, old - new) };
                        return ptr;
                    }
                }
            }
            _ => {}
        }
        // SAFETY: as in `alloc`, `new_layout` is a valid layout.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct, and at least the
            // smaller size long; the old block is then freed as the
            // caller's contract allows.
            unsafe {
                ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
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
