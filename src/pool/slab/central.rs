//! Magazines and the shared lists: each node's per-class stacks of
//! magazines behind a mutex, the chunk being cut, and the node's state.

use super::*;

/// Blocks a magazine holds: the largest batch.
pub(super) const MAG: usize = MAX_BATCH;
/// Blocks a thread caches per class, at most: two batches.
pub(super) const CACHE_CAP: usize = 2 * MAX_BATCH;

/// A magazine: an array of pointers to free blocks of one class and node,
/// the unit in which blocks move between threads and a node's shared
/// lists. Magazines are cut from reservations, never freed, and recycled
/// through the `empty` lists. The allocator never writes into a free
/// block, so freeing a block (even from another node) does not touch its
/// memory, and cutting a block does not fault its pages in.
pub(super) struct Magazine {
    next: *mut Magazine,
    pub(super) len: usize,
    pub(super) slots: [*mut u8; MAG],
}

/// One size class of one node: magazines of free blocks, empty magazines,
/// and the chunk being cut.
pub(super) struct Central {
    /// Magazines holding at least one block.
    full: *mut Magazine,
    /// Magazines holding none.
    empty: *mut Magazine,
    /// The unused part of the current chunk (null when there is none).
    bump: *mut u8,
    end: *mut u8,
}

// SAFETY: the magazines a Central points to, and the free blocks they
// hold, are referred to only by the list (behind its mutex); moving the
// list to another thread moves that ownership with it.
unsafe impl Send for Central {}

impl Central {
    const EMPTY: Central = Central {
        full: ptr::null_mut(),
        empty: ptr::null_mut(),
        bump: ptr::null_mut(),
        end: ptr::null_mut(),
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
pub(super) struct CentralSlot(pub(super) ForkLock<Central>);

/// The current reservation of a node (chunks `next..end` are unused) and
/// the chunk magazines are cut from (`mag_next..mag_end` unused); null
/// pointers before the first. Pointers, not addresses, so that the blocks
/// and magazines cut from them keep the reservation's provenance.
pub(super) struct Reserve {
    next: *mut u8,
    end: *mut u8,
    mag_next: *mut u8,
    mag_end: *mut u8,
}

// SAFETY: the unused parts of a reservation the pointers delimit are
// referred to only by this struct (behind its mutex); moving it to another
// thread moves that ownership with it.
unsafe impl Send for Reserve {}

/// Everything the pool keeps for one node. Made on first use in its own
/// mapping and never freed.
pub(super) struct NodeState {
    /// The node blocks of this state belong to.
    pub(super) id: u32,
    /// The node its memory is bound to (`id`, except for the test-only
    /// stand-in nodes of a one-node machine).
    pub(super) bind: u32,
    pub(super) classes: [CentralSlot; CLASSES],
    pub(super) reserve: ForkLock<Reserve>,
    pub(super) stats: SlabTallies,
}

const _: () = assert!(std::mem::align_of::<NodeState>() <= 4096);

impl NodeState {
    pub(super) fn new(id: u32, bind: u32) -> NodeState {
        NodeState {
            id,
            bind,
            classes: [const { CentralSlot(ForkLock::new(Central::EMPTY)) }; CLASSES],
            reserve: ForkLock::new(Reserve {
                next: ptr::null_mut(),
                end: ptr::null_mut(),
                mag_next: ptr::null_mut(),
                mag_end: ptr::null_mut(),
            }),
            stats: SlabTallies::default(),
        }
    }

    pub(super) fn central(&self, class: usize) -> MutexGuard<'_, Central> {
        self.classes[class].0.lock()
    }

    /// A fresh 64 KiB chunk, from the current reservation or a new one.
    fn take_chunk(&self, pool: &SlabPool, r: &mut Reserve) -> Result<*mut u8, SlabError> {
        if r.next == r.end {
            let base = pool.reserve(self)?;
            r.next = base;
            r.end = base.wrapping_add(RESERVATION);
        }
        let chunk = r.next;
        r.next = r.next.wrapping_add(CHUNK);
        bump(&self.stats.chunks, 1);
        Ok(chunk)
    }

    /// A new, empty magazine, cut from a chunk of this node.
    fn new_magazine(&self, pool: &SlabPool) -> Result<*mut Magazine, SlabError> {
        const SIZE: usize = std::mem::size_of::<Magazine>();
        let mut r = self.reserve.lock();
        if r.mag_end.addr() - r.mag_next.addr() < SIZE {
            let chunk = self.take_chunk(pool, &mut r)?;
            r.mag_next = chunk;
            r.mag_end = chunk.wrapping_add(CHUNK);
        }
        let m = r.mag_next.cast::<Magazine>();
        r.mag_next = r.mag_next.wrapping_add(SIZE);
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

    pub(super) fn empty_magazine(
        &self,
        pool: &SlabPool,
        c: &mut Central,
    ) -> Result<*mut Magazine, SlabError> {
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
        if c.end.addr() - c.bump.addr() < size {
            let chunk = self.take_chunk(pool, &mut self.reserve.lock())?;
            c.bump = chunk;
            c.end = chunk.wrapping_add(CHUNK);
        }
        // Chunks are aligned and a multiple of every class size: no rest.
        let n = out.len().min((c.end.addr() - c.bump.addr()) / size);
        for (i, slot) in out[..n].iter_mut().enumerate() {
            *slot = c.bump.wrapping_add(i * size);
        }
        c.bump = c.bump.wrapping_add(n * size);
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
    pub(super) fn refill(
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
    pub(super) fn give_back(
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
    pub(super) unsafe fn return_empty(&self, class: usize, m: *mut Magazine) {
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
    pub(super) unsafe fn take_magazine(
        &self,
        class: usize,
        m: *mut Magazine,
        swap: bool,
    ) -> *mut Magazine {
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
    pub(super) fn alloc_locked(
        &self,
        pool: &SlabPool,
        class: usize,
    ) -> Result<NonNull<u8>, SlabError> {
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
    pub(super) fn free_locked(&self, pool: &SlabPool, class: usize, p: *mut u8, remote: bool) {
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
