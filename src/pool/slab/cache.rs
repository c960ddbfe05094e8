//! Thread caches: per-thread stacks of free blocks and remote magazines,
//! the exit hook, the cached allocation and free paths, and the thread's
//! node.

use super::*;

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
pub(super) const UNINIT: u8 = 0;
/// Finding the node and arming the exit hook; a reentrant call (an
/// allocation in the error path of `getcpu`) uses the locked path.
pub(super) const INITIALIZING: u8 = 1;
/// The caches are in use.
pub(super) const ACTIVE: u8 = 2;
/// No caches: the exit hook ran, or could not be armed.
pub(super) const LOCKED: u8 = 3;

pub(super) const NODE_UNKNOWN: u32 = u32::MAX;

/// A thread's caches. Every function touching it takes a raw pointer and
/// holds no reference to it across a call that could allocate, so a
/// reentrant allocation (only possible while `INITIALIZING`) sees a
/// consistent state.
pub(super) struct ThreadCache {
    pub(super) state: u8,
    /// The thread's node: set by `set_thread_node`, or found at init.
    pub(super) node: u32,
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
pub(super) fn with_cache<R>(f: impl FnOnce(*mut ThreadCache) -> R) -> R {
    CACHE.with(|c| f(c.get()))
}

/// The key whose destructor flushes a thread's caches at thread exit.
pub(super) fn exit_key() -> Option<libc::pthread_key_t> {
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

impl SlabPool {
    // -------------------------------------------------------------- small blocks

    /// Pops a block from the calling thread's cache; null when the cache is
    /// empty or not active.
    #[inline(always)]
    pub(super) fn pop_cached(class: usize) -> *mut u8 {
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
    pub(super) fn alloc_small(&self, class: usize) -> Result<NonNull<u8>, SlabError> {
        match NonNull::new(Self::pop_cached(class)) {
            Some(p) => Ok(p),
            None => self.alloc_small_slow(class),
        }
    }

    /// An empty cache, or a thread without caches.
    #[cold]
    #[inline(never)]
    pub(super) fn alloc_small_slow(&self, class: usize) -> Result<NonNull<u8>, SlabError> {
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
    pub(super) unsafe fn dealloc_small(&self, ptr: NonNull<u8>, class: usize) {
        let home = self.home_of(ptr.as_ptr().addr());
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
pub(super) fn thread_node_raw() -> u32 {
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

pub(super) fn set_node_of_thread(node: u32) {
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
