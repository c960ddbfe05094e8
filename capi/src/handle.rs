//! The handle tables behind `terroir_pool *`, `terroir_group *` and the
//! report handles.
//!
//! [`Table`] is the common part: slots in segments allocated on first need
//! and never freed, free slot indices kept per thread first, and the
//! encoding of a handle. The group table is a `Table` of the engine's
//! `GroupCore`s, each of which keeps its own epoch and lock (`group.rs`);
//! the other tables are [`Slots`] (a payload under a mutex per slot).
//!
//! A handle is not a pointer to the object: it is a key, `generation << 32
//! | (slot + 1)`, carried in a pointer-sized value that is never
//! dereferenced. Each slot keeps its generation and whether it is live;
//! destroying marks the slot dead and bumps the generation, so the old key
//! no longer matches and a second destroy (or any later use) is
//! `TERROIR_ERROR_INVALID_HANDLE`, never a use after free. Slots live in
//! segments that are allocated on first need and never freed, so looking
//! up any key, even a garbage one, reads valid memory. A slot whose
//! generation would wrap around is retired, not reused.
//!
//! In [`Slots`] a lookup returns the slot locked ([`SlotGuard`]); the
//! payload stays in the slot when its handle dies, so whatever capacity
//! it keeps serves the slot's next occupant without an allocation.
//! [`HandleTable`] is the common case on top of it, an `Arc` per handle:
//! lookups clone the `Arc` under the slot's lock, so an object stays alive
//! for a call that looked it up even if another thread destroys its
//! handle meanwhile.
//!
//! Calls on different handles never contend. Free slots are kept per
//! thread first (up to [`LOCAL_SLOTS`]), so that threads creating and
//! destroying handles at a high rate (a task group per task) do not all
//! take the table's global free-list lock.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::LocalKey;

use super::error::{Error, TerroirError};

const SEGMENT_SLOTS: usize = 1024;
const SEGMENTS: usize = 1024;
// Slot indices fit the `u32` of a thread's free list.
const _: () = assert!(SEGMENT_SLOTS * SEGMENTS <= u32::MAX as usize);

const _: () = assert!(
    usize::BITS == 64,
    "terroir's C handles need 64-bit pointers"
);

struct SlotState<P> {
    /// The generation of the current occupant, or of the next one.
    generation: u32,
    /// Whether a handle of `generation` is live.
    live: bool,
    payload: P,
}

/// One slot of a [`Slots`] table.
pub(crate) struct Slot<P> {
    state: Mutex<SlotState<P>>,
}

impl<P: Default> Default for Slot<P> {
    fn default() -> Self {
        Slot {
            state: Mutex::new(SlotState {
                generation: 1,
                live: false,
                payload: P::default(),
            }),
        }
    }
}

pub(crate) struct FreeList {
    /// Slots never used yet start here.
    next: usize,
    /// Slots freed by `remove`.
    free: Vec<usize>,
}

/// Free slots kept by one thread; at most this many.
pub(crate) const LOCAL_SLOTS: usize = 32;

/// One thread's free slots of one table (the `thread_local!` behind
/// [`Table::new`]'s `local`): a small stack of cells, with no destructor,
/// so that reaching it costs a thread-local address and no lazy
/// registration check. The slots go back to the table when the thread
/// exits, through [`EXIT`] (registered on the thread's first free slot).
pub(crate) struct LocalFree {
    /// The table's global list, once this thread kept a slot of it.
    global: Cell<Option<&'static Mutex<FreeList>>>,
    len: Cell<usize>,
    slots: [Cell<u32>; LOCAL_SLOTS],
}

impl LocalFree {
    pub(crate) const fn new() -> LocalFree {
        LocalFree {
            global: Cell::new(None),
            len: Cell::new(0),
            slots: [const { Cell::new(0) }; LOCAL_SLOTS],
        }
    }

    /// How many slots the thread keeps (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }

    #[inline]
    fn pop(&self) -> Option<usize> {
        let n = self.len.get().checked_sub(1)?;
        self.len.set(n);
        Some(self.slots[n].get() as usize)
    }

    /// Keeps `index` for `global`'s table (whose thread-local list this is,
    /// `key`), unless full.
    #[inline]
    fn push(
        &self,
        index: usize,
        global: &'static Mutex<FreeList>,
        key: &'static LocalKey<LocalFree>,
    ) -> bool {
        let n = self.len.get();
        if n >= LOCAL_SLOTS {
            return false;
        }
        if self.global.get().is_none() {
            // The first slot this thread keeps of this table: have it
            // returned when the thread exits (or refuse, if it is exiting).
            if EXIT.try_with(|e| e.watch(key)).is_err() {
                return false;
            }
            self.global.set(Some(global));
        }
        self.slots[n].set(index as u32);
        self.len.set(n + 1);
        true
    }

    /// Gives this thread's slots back to the table.
    fn give_back(&self) {
        if let Some(global) = self.global.get() {
            let n = self.len.replace(0);
            lock(global)
                .free
                .extend(self.slots[..n].iter().map(|c| c.get() as usize));
        }
    }
}

/// The thread-local free lists a thread kept slots in (at most one per
/// table: pools, groups, recordings, reports), emptied into their tables
/// when the thread exits.
pub(crate) struct ExitGuard {
    keys: RefCell<Vec<&'static LocalKey<LocalFree>>>,
}

impl ExitGuard {
    /// Called once per table and thread (when its list first keeps a
    /// slot).
    fn watch(&self, key: &'static LocalKey<LocalFree>) {
        self.keys.borrow_mut().push(key);
    }
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        for key in self.keys.get_mut().drain(..) {
            // A `LocalFree` has no destructor: reachable during teardown.
            let _ = key.try_with(LocalFree::give_back);
        }
    }
}

thread_local! {
    static EXIT: ExitGuard = const {
        ExitGuard {
            keys: RefCell::new(Vec::new()),
        }
    };
}

/// Slots of type `S` addressed by index (handles encode an index and a
/// generation), with free lists.
pub(crate) struct Table<S: 'static> {
    /// What the handles are, for error messages (`"pool"`, `"group"`).
    kind: &'static str,
    /// The segments of `SEGMENT_SLOTS` slots each, null until allocated
    /// (then never freed), so that a lookup is one load.
    segments: [AtomicPtr<S>; SEGMENTS],
    free: Mutex<FreeList>,
    local: &'static LocalKey<LocalFree>,
    /// The table hands out `&S` to every thread: `Sync` only for an `S`
    /// that is (`AtomicPtr<S>` is `Sync` for every `S`).
    _slots: PhantomData<S>,
}

impl<S: Default> Table<S> {
    /// A table whose threads keep their free slots in `local` (a
    /// `thread_local!` of its own for each table).
    pub(crate) const fn new(kind: &'static str, local: &'static LocalKey<LocalFree>) -> Table<S> {
        Table {
            kind,
            segments: [const { AtomicPtr::new(ptr::null_mut()) }; SEGMENTS],
            free: Mutex::new(FreeList {
                next: 0,
                free: Vec::new(),
            }),
            local,
            _slots: PhantomData,
        }
    }

    /// A free slot: the thread's own first, else the table's.
    #[inline]
    pub(crate) fn take(&'static self) -> Result<(usize, &'static S), Error> {
        self.take_with(self.local)
    }

    /// [`take`](Self::take) with the table's own thread-local list named
    /// at the call (`local` must be the `thread_local!` the table was made
    /// with): a `LocalKey` known there is reached inline, where one read
    /// from the table is a call through a function pointer.
    #[inline(always)]
    pub(crate) fn take_with(
        &'static self,
        local: &'static LocalKey<LocalFree>,
    ) -> Result<(usize, &'static S), Error> {
        let local = local.try_with(LocalFree::pop).ok().flatten();
        let index = match local {
            Some(i) => i,
            None => self.take_global()?,
        };
        Ok((
            index,
            self.get(index).expect("a taken slot's segment exists"),
        ))
    }

    /// Gives a freed slot to the thread's list, or to the table's when the
    /// thread's is full (or being torn down).
    #[inline]
    pub(crate) fn put(&'static self, index: usize) {
        self.put_with(self.local, index);
    }

    /// [`put`](Self::put) with the table's own thread-local list named at
    /// the call (see [`take_with`](Self::take_with)).
    #[inline(always)]
    pub(crate) fn put_with(&'static self, local: &'static LocalKey<LocalFree>, index: usize) {
        let kept = local
            .try_with(|l| l.push(index, &self.free, local))
            .unwrap_or(false);
        if !kept {
            lock(&self.free).free.push(index);
        }
    }

    /// Gives a freed slot to the table's list (from a thread that is
    /// exiting, or no longer uses the table).
    pub(crate) fn put_global(&'static self, index: usize) {
        lock(&self.free).free.push(index);
    }

    /// The slot `index`, if its segment exists (any index is accepted).
    #[inline]
    pub(crate) fn get(&'static self, index: usize) -> Option<&'static S> {
        let seg = self.segments.get(index / SEGMENT_SLOTS)?;
        // Acquire: the slots' initialisation, published by `take_global`'s
        // Release store.
        let seg = seg.load(Ordering::Acquire);
        if seg.is_null() {
            return None;
        }
        // SAFETY: a segment is `SEGMENT_SLOTS` initialised slots, never
        // freed (`take_global`), and `index % SEGMENT_SLOTS` is within it.
        Some(unsafe { &*seg.add(index % SEGMENT_SLOTS) })
    }

    /// The slot index and generation of `handle`.
    #[inline]
    pub(crate) fn decode(handle: usize) -> (usize, u32) {
        let index = (handle & 0xFFFF_FFFF).wrapping_sub(1);
        (index, (handle >> 32) as u32)
    }

    /// The handle of slot `index` at `generation`.
    #[inline]
    pub(crate) fn encode(index: usize, generation: u32) -> usize {
        ((generation as usize) << 32) | (index + 1)
    }

    /// The error for a handle that is not live.
    #[cold]
    pub(crate) fn invalid(&self, handle: usize) -> Error {
        Error::new(
            TerroirError::InvalidHandle,
            format!(
                "{} handle {handle:#x} is not live (destroyed already, or never returned by \
                 terroir)",
                self.kind
            ),
        )
    }

    #[cold]
    fn take_global(&self) -> Result<usize, Error> {
        let mut free = lock(&self.free);
        if let Some(i) = free.free.pop() {
            return Ok(i);
        }
        let i = free.next;
        if i >= SEGMENTS * SEGMENT_SLOTS {
            return Err(Error::new(
                TerroirError::OutOfMemory,
                format!("more than {} live {} handles", i, self.kind),
            ));
        }
        let seg = &self.segments[i / SEGMENT_SLOTS];
        if seg.load(Ordering::Relaxed).is_null() {
            // Under the free list's lock: this thread alone allocates it.
            let slots: Box<[S]> = (0..SEGMENT_SLOTS).map(|_| S::default()).collect();
            seg.store(Box::leak(slots).as_mut_ptr(), Ordering::Release);
        }
        free.next = i + 1;
        Ok(i)
    }
}

/// A table of slots with a payload `P` each, addressed by handles.
pub(crate) struct Slots<P: 'static> {
    table: Table<Slot<P>>,
}

fn lock<S>(m: &Mutex<S>) -> MutexGuard<'_, S> {
    // A poisoned lock only means a panic elsewhere; the payloads keep
    // their invariants at every unlock (see `SlotGuard`'s users).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A live slot, locked: the payload of one live handle.
pub(crate) struct SlotGuard<P: 'static> {
    table: &'static Slots<P>,
    index: usize,
    guard: MutexGuard<'static, SlotState<P>>,
}

impl<P> Deref for SlotGuard<P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.guard.payload
    }
}

impl<P> DerefMut for SlotGuard<P> {
    fn deref_mut(&mut self) -> &mut P {
        &mut self.guard.payload
    }
}

impl<P: Default> SlotGuard<P> {
    /// The handle this guard is for.
    #[inline]
    pub(crate) fn handle(&self) -> usize {
        Table::<Slot<P>>::encode(self.index, self.guard.generation)
    }

    /// Kills the handle (later uses are `InvalidHandle`) and frees the slot
    /// for a new occupant. `clear` takes from the payload what must not
    /// outlive the handle (returned, for the caller to drop outside the
    /// lock), leaving what the next occupant may reuse.
    #[inline]
    pub(crate) fn remove<R>(mut self, clear: impl FnOnce(&mut P) -> R) -> R {
        let r = clear(&mut self.guard.payload);
        self.guard.live = false;
        self.guard.generation = self.guard.generation.wrapping_add(1);
        let reusable = self.guard.generation != 0;
        let (table, index) = (self.table, self.index);
        drop(self);
        if reusable {
            table.table.put(index);
        }
        r
    }
}

impl<P: Default> Slots<P> {
    /// A table whose threads keep their free slots in `local` (a
    /// `thread_local!` of its own for each table).
    pub(crate) const fn new(kind: &'static str, local: &'static LocalKey<LocalFree>) -> Slots<P> {
        Slots {
            table: Table::new(kind, local),
        }
    }

    /// Makes a free slot live, with `init(handle, payload)` run under its
    /// lock, and returns the slot locked.
    #[inline]
    pub(crate) fn insert(
        &'static self,
        init: impl FnOnce(usize, &mut P),
    ) -> Result<SlotGuard<P>, Error> {
        let (index, slot) = self.table.take()?;
        let mut guard = lock(&slot.state);
        debug_assert!(!guard.live, "a free {} slot is live", self.table.kind);
        let handle = Table::<Slot<P>>::encode(index, guard.generation);
        init(handle, &mut guard.payload);
        // After `init`: a slot whose `init` unwound stays free (if lost).
        guard.live = true;
        Ok(SlotGuard {
            table: self,
            index,
            guard,
        })
    }

    /// The slot of the live `handle`, locked.
    #[inline(always)]
    pub(crate) fn lock(&'static self, handle: usize) -> Result<SlotGuard<P>, Error> {
        let (index, generation) = Table::<Slot<P>>::decode(handle);
        let slot = self
            .table
            .get(index)
            .ok_or_else(|| self.table.invalid(handle))?;
        let guard = lock(&slot.state);
        if !guard.live || guard.generation != generation {
            return Err(self.table.invalid(handle));
        }
        Ok(SlotGuard {
            table: self,
            index,
            guard,
        })
    }
}

/// A table of live objects of type `T`, addressed by handles.
pub(crate) struct HandleTable<T: 'static> {
    slots: Slots<Option<Arc<T>>>,
}

impl<T> HandleTable<T> {
    /// A table whose threads keep their free slots in `local` (a
    /// `thread_local!` of its own for each table).
    pub(crate) const fn new(
        kind: &'static str,
        local: &'static LocalKey<LocalFree>,
    ) -> HandleTable<T> {
        HandleTable {
            slots: Slots::new(kind, local),
        }
    }

    /// Stores the object `make(handle)` and returns its handle.
    pub(crate) fn insert(&'static self, make: impl FnOnce(usize) -> T) -> Result<usize, Error> {
        let slot = self.slots.insert(|handle, value| {
            *value = Some(Arc::new(make(handle)));
        })?;
        Ok(slot.handle())
    }

    /// The live object behind `handle`.
    pub(crate) fn get(&'static self, handle: usize) -> Result<Arc<T>, Error> {
        let slot = self.slots.lock(handle)?;
        Ok(Arc::clone(
            slot.as_ref().expect("a live slot holds its object"),
        ))
    }

    /// Removes the object behind `handle` (the caller drops it, outside
    /// any lock) and makes the handle stale.
    pub(crate) fn remove(&'static self, handle: usize) -> Result<Arc<T>, Error> {
        let slot = self.slots.lock(handle)?;
        Ok(slot
            .remove(Option::take)
            .expect("a live slot holds its object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_and_garbage_handles_are_errors() {
        thread_local!(static FREE: LocalFree = const { LocalFree::new() });
        static T: HandleTable<u32> = HandleTable::new("test", &FREE);
        let a = T.insert(|_| 7).unwrap();
        assert_eq!(*T.get(a).unwrap(), 7);
        assert_eq!(*T.remove(a).unwrap(), 7);
        let e = T.remove(a).unwrap_err();
        assert_eq!(e.code, TerroirError::InvalidHandle);
        assert!(e.message.contains("test handle"), "{}", e.message);
        assert!(T.get(a).is_err());
        // The slot is reused with a new generation: the old handle stays dead.
        let b = T.insert(|h| h as u32).unwrap();
        assert_ne!(a, b);
        assert_eq!(a & 0xFFFF_FFFF, b & 0xFFFF_FFFF);
        assert!(T.get(a).is_err());
        assert!(T.get(b).is_ok());
        for garbage in [0, 1, usize::MAX, 0xdead_beef, (5 << 32) | 3] {
            assert!(T.get(garbage).is_err(), "{garbage:#x}");
            assert!(T.remove(garbage).is_err(), "{garbage:#x}");
        }
    }

    #[derive(Default)]
    struct Payload {
        items: Vec<u32>,
    }

    #[test]
    fn a_removed_payload_keeps_what_clear_leaves_for_the_next_occupant() {
        thread_local!(static FREE: LocalFree = const { LocalFree::new() });
        static S: Slots<Payload> = Slots::new("payload", &FREE);
        let mut g = S.insert(|_, p| p.items.push(1)).unwrap();
        g.items.extend([2, 3, 4]);
        let handle = g.handle();
        let cap = g.items.capacity();
        let taken = g.remove(|p| {
            p.items.clear();
            7
        });
        assert_eq!(taken, 7);
        assert_eq!(
            S.lock(handle).err().map(|e| e.code),
            Some(TerroirError::InvalidHandle)
        );
        // This thread's freed slot comes back first, with its capacity.
        let g = S.insert(|_, p| assert!(p.items.is_empty())).unwrap();
        assert_ne!(g.handle(), handle);
        assert_eq!(g.handle() & 0xFFFF_FFFF, handle & 0xFFFF_FFFF);
        assert_eq!(g.items.capacity(), cap);
    }
}

/// Handles used from several threads at once (plain threads: no pool, so
/// under Miri too, `scripts/miri.sh`): creations, lookups of live, stale
/// and garbage handles, and removals race, and threads exit with free
/// slots in their own lists, which go back to the table.
#[cfg(test)]
mod threaded_tests {
    use super::*;

    #[test]
    fn threads_race_on_live_stale_and_garbage_handles() {
        thread_local!(static FREE: LocalFree = const { LocalFree::new() });
        static T: HandleTable<Vec<u64>> = HandleTable::new("raced", &FREE);
        let (threads, rounds) = if cfg!(miri) { (3, 12) } else { (8, 2000) };
        // A handle every thread looks up while its owner destroys it.
        let shared = T.insert(|h| vec![h as u64]).unwrap();
        // Plain spawns, not a scope: `join` waits for a thread's exit,
        // thread-locals included (a scope may end before them).
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for r in 0..rounds {
                        let h = T.insert(|h| vec![h as u64, t, r]).unwrap();
                        mine.push(h);
                        // Live: the object carries its own handle.
                        assert_eq!(T.get(h).unwrap()[0], h as u64);
                        if let Ok(v) = T.get(shared) {
                            assert_eq!(v[0], shared as u64);
                        }
                        for garbage in [0, usize::MAX, h ^ (1 << 40), h + 1] {
                            if let Ok(v) = T.get(garbage) {
                                // Another thread's live handle, by chance.
                                assert_eq!(v[0], garbage as u64);
                            }
                        }
                        if r % 3 == 2 {
                            let old = mine.remove(0);
                            assert_eq!(T.remove(old).unwrap()[0], old as u64);
                            assert!(T.get(old).is_err(), "stale handle {old:#x}");
                        }
                    }
                    for h in mine {
                        assert_eq!(T.remove(h).unwrap()[1], t);
                        assert!(T.remove(h).is_err());
                    }
                })
            })
            .collect();
        assert_eq!(T.remove(shared).unwrap()[0], shared as u64);
        for h in handles {
            h.join().unwrap();
        }
        assert!(T.get(shared).is_err());
        // The exited threads gave the slots they kept back to the table
        // (`shared`'s is in this thread's list).
        // Every slot ever taken is free again: in the table's list, or
        // (one) in this thread's.
        let mine = FREE.with(|l| l.len.get());
        assert_eq!(mine, 1);
        let list = T.slots.table.free.lock().unwrap();
        assert_eq!(list.free.len() + mine, list.next);
    }
}
