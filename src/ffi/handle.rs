//! The handle tables behind `terroir_pool *`, `terroir_group *` and the
//! report handles.
//!
//! A handle is not a pointer to the object: it is a key, `generation << 32
//! | (slot + 1)`, carried in a pointer-sized value that is never
//! dereferenced. Each slot keeps its generation, whether it is live, and a
//! payload, behind a mutex of its own (with a condition variable beside
//! it); destroying marks the slot dead and bumps the generation, so the old
//! key no longer matches and a second destroy (or any later use) is
//! `TERROIR_ERROR_INVALID_HANDLE`, never a use after free. Slots live in
//! segments that are allocated on first need and never freed, so looking
//! up any key, even a garbage one, reads valid memory. A slot whose
//! generation would wrap around is retired, not reused.
//!
//! [`Slots`] is the table itself: a lookup returns the slot locked
//! ([`SlotGuard`]). The payload stays in the slot when its handle dies, so
//! whatever capacity it keeps (a task group's queue) serves the slot's
//! next occupant without an allocation. [`HandleTable`] is the common case
//! on top of it, an `Arc` per handle: lookups clone the `Arc` under the
//! slot's lock, so an object stays alive for a call that looked it up even
//! if another thread destroys its handle meanwhile.
//!
//! Calls on different handles never contend. Free slots are kept per
//! thread first (up to [`LOCAL_SLOTS`]), so that threads creating and
//! destroying handles at a high rate (a task group per task) do not all
//! take the table's global free-list lock.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::LocalKey;

use super::error::{Error, TerroirError};

const SEGMENT_SLOTS: usize = 1024;
const SEGMENTS: usize = 1024;

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
    wake: Condvar,
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
/// [`Slots::new`]'s `local`). Returned to the table when the thread
/// exits.
pub(crate) struct LocalFree {
    global: Option<&'static Mutex<FreeList>>,
    slots: Vec<usize>,
}

impl LocalFree {
    pub(crate) const fn new() -> LocalFree {
        LocalFree {
            global: None,
            slots: Vec::new(),
        }
    }
}

impl Drop for LocalFree {
    fn drop(&mut self) {
        if let Some(global) = self.global {
            lock(global).free.append(&mut self.slots);
        }
    }
}

/// A table of slots with a payload `P` each, addressed by handles.
pub(crate) struct Slots<P: 'static> {
    /// What the handles are, for error messages (`"pool"`, `"group"`).
    kind: &'static str,
    segments: [OnceLock<Box<[Slot<P>]>>; SEGMENTS],
    free: Mutex<FreeList>,
    local: &'static LocalKey<RefCell<LocalFree>>,
}

fn lock<S>(m: &Mutex<S>) -> MutexGuard<'_, S> {
    // A poisoned lock only means a panic elsewhere; the payloads keep
    // their invariants at every unlock (see `SlotGuard`'s users).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A live slot, locked: the payload of one live handle.
pub(crate) struct SlotGuard<P: 'static> {
    table: &'static Slots<P>,
    slot: &'static Slot<P>,
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
        Slots::<P>::encode(self.index, self.guard.generation)
    }

    /// Wakes every thread blocked in [`SlotGuard::wait`] on this slot.
    pub(crate) fn notify_all(&self) {
        self.slot.wake.notify_all();
    }

    /// Lets the slot's lock go through `step`, which gets the slot and its
    /// guard and returns the guard again (relocked) with a result: the
    /// guard for the same handle, or `None` if the handle died meanwhile.
    #[inline]
    fn relock_after<R>(
        self,
        step: impl FnOnce(
            &'static Slot<P>,
            MutexGuard<'static, SlotState<P>>,
        ) -> (MutexGuard<'static, SlotState<P>>, R),
    ) -> (Option<Self>, R) {
        let SlotGuard {
            table,
            slot,
            index,
            guard,
        } = self;
        let generation = guard.generation;
        let (guard, r) = step(slot, guard);
        let again = (guard.live && guard.generation == generation).then_some(SlotGuard {
            table,
            slot,
            index,
            guard,
        });
        (again, r)
    }

    /// Unlocks the slot and blocks until [`SlotGuard::notify_all`], then
    /// runs `woken` on the payload under the lock (whatever became of the
    /// handle: for counts of the slot's waiters). `None` if the handle died
    /// meanwhile (the slot may have a new occupant).
    pub(crate) fn wait(self, woken: impl FnOnce(&mut P)) -> Option<Self> {
        self.relock_after(|slot, guard| {
            let mut guard = slot.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
            woken(&mut guard.payload);
            (guard, ())
        })
        .0
    }

    /// Unlocks the slot, runs `f`, and locks it again: `None` (with `f`'s
    /// result) if the handle died meanwhile.
    #[inline]
    pub(crate) fn released<R>(self, f: impl FnOnce() -> R) -> (Option<Self>, R) {
        self.relock_after(|slot, guard| {
            drop(guard);
            let r = f();
            (lock(&slot.state), r)
        })
    }

    /// [`SlotGuard::released`] for a caller that keeps the handle from
    /// dying meanwhile (a count in the payload that removal waits for): the
    /// guard it gets back is for the same handle.
    #[inline]
    pub(crate) fn unlocked<R>(self, f: impl FnOnce() -> R) -> (Self, R) {
        let kind = self.table.kind;
        let (guard, r) = self.released(f);
        let guard =
            guard.unwrap_or_else(|| panic!("a {kind} handle died while its caller held it"));
        (guard, r)
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
            table.put_slot(index);
        }
        r
    }
}

impl<P: Default> Slots<P> {
    /// A table whose threads keep their free slots in `local` (a
    /// `thread_local!` of its own for each table).
    pub(crate) const fn new(
        kind: &'static str,
        local: &'static LocalKey<RefCell<LocalFree>>,
    ) -> Slots<P> {
        Slots {
            kind,
            segments: [const { OnceLock::new() }; SEGMENTS],
            free: Mutex::new(FreeList {
                next: 0,
                free: Vec::new(),
            }),
            local,
        }
    }

    /// A free slot: the thread's own first, else the table's.
    #[inline]
    fn take_slot(&'static self) -> Result<usize, Error> {
        let local = self
            .local
            .try_with(|l| l.borrow_mut().slots.pop())
            .ok()
            .flatten();
        match local {
            Some(i) => Ok(i),
            None => self.take_global_slot(),
        }
    }

    /// Gives a freed slot to the thread's list, or to the table's when the
    /// thread's is full (or being torn down).
    #[inline]
    fn put_slot(&'static self, index: usize) {
        let kept = self
            .local
            .try_with(|l| {
                let mut l = l.borrow_mut();
                if l.slots.len() >= LOCAL_SLOTS {
                    return false;
                }
                l.global = Some(&self.free);
                l.slots.push(index);
                true
            })
            .unwrap_or(false);
        if !kept {
            lock(&self.free).free.push(index);
        }
    }

    #[inline]
    fn slot(&'static self, index: usize) -> Option<&'static Slot<P>> {
        self.segments
            .get(index / SEGMENT_SLOTS)?
            .get()
            .map(|seg| &seg[index % SEGMENT_SLOTS])
    }

    #[inline]
    fn decode(handle: usize) -> (usize, u32) {
        let index = (handle & 0xFFFF_FFFF).wrapping_sub(1);
        (index, (handle >> 32) as u32)
    }

    #[inline]
    fn encode(index: usize, generation: u32) -> usize {
        ((generation as usize) << 32) | (index + 1)
    }

    fn invalid(&self, handle: usize) -> Error {
        Error::new(
            TerroirError::InvalidHandle,
            format!(
                "{} handle {handle:#x} is not live (destroyed already, or never returned by \
                 terroir)",
                self.kind
            ),
        )
    }

    fn take_global_slot(&self) -> Result<usize, Error> {
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
        self.segments[i / SEGMENT_SLOTS].get_or_init(|| {
            (0..SEGMENT_SLOTS)
                .map(|_| Slot {
                    state: Mutex::new(SlotState {
                        generation: 1,
                        live: false,
                        payload: P::default(),
                    }),
                    wake: Condvar::new(),
                })
                .collect()
        });
        free.next = i + 1;
        Ok(i)
    }

    /// Makes a free slot live, with `init(handle, payload)` run under its
    /// lock, and returns the slot locked.
    #[inline]
    pub(crate) fn insert(
        &'static self,
        init: impl FnOnce(usize, &mut P),
    ) -> Result<SlotGuard<P>, Error> {
        let index = self.take_slot()?;
        let slot = self.slot(index).expect("the segment was allocated above");
        let mut guard = lock(&slot.state);
        debug_assert!(!guard.live, "a free {} slot is live", self.kind);
        let handle = Self::encode(index, guard.generation);
        init(handle, &mut guard.payload);
        // After `init`: a slot whose `init` unwound stays free (if lost).
        guard.live = true;
        Ok(SlotGuard {
            table: self,
            slot,
            index,
            guard,
        })
    }

    /// The slot of the live `handle`, locked.
    #[inline(always)]
    pub(crate) fn lock(&'static self, handle: usize) -> Result<SlotGuard<P>, Error> {
        let (index, generation) = Self::decode(handle);
        let slot = self.slot(index).ok_or_else(|| self.invalid(handle))?;
        let guard = lock(&slot.state);
        if !guard.live || guard.generation != generation {
            return Err(self.invalid(handle));
        }
        Ok(SlotGuard {
            table: self,
            slot,
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
        local: &'static LocalKey<RefCell<LocalFree>>,
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
        thread_local!(static FREE: RefCell<LocalFree> = const { RefCell::new(LocalFree::new()) });
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
        waiting: usize,
    }

    #[test]
    fn a_removed_payload_keeps_what_clear_leaves_for_the_next_occupant() {
        thread_local!(static FREE: RefCell<LocalFree> = const { RefCell::new(LocalFree::new()) });
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

    #[test]
    fn a_waiter_learns_that_its_handle_died_and_still_counts_itself_off() {
        thread_local!(static FREE: RefCell<LocalFree> = const { RefCell::new(LocalFree::new()) });
        static S: Slots<Payload> = Slots::new("payload", &FREE);
        let handle = S.insert(|_, _| {}).unwrap().handle();
        let waiter = std::thread::spawn(move || {
            let mut g = S.lock(handle).unwrap();
            g.waiting += 1;
            g.wait(|p| p.waiting -= 1).is_none()
        });
        // Destroy once the waiter blocks (it counted itself under the lock
        // that `wait` lets go of only as it blocks).
        loop {
            let g = S.lock(handle).unwrap();
            if g.waiting == 1 {
                g.notify_all();
                g.remove(|_| ());
                break;
            }
            drop(g);
            std::thread::yield_now();
        }
        assert!(waiter.join().unwrap(), "the waiter saw its handle alive");
        let g = S.insert(|_, _| {}).unwrap();
        assert_eq!(g.waiting, 0, "the waiter did not count itself off");
    }

    #[test]
    fn unlocked_lets_other_threads_lock_the_slot_meanwhile() {
        thread_local!(static FREE: RefCell<LocalFree> = const { RefCell::new(LocalFree::new()) });
        static S: Slots<Payload> = Slots::new("payload", &FREE);
        let g = S.insert(|_, _| {}).unwrap();
        let handle = g.handle();
        let (mut g, pushed) = g.unlocked(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            // Detached: if the slot stayed locked, the thread would block
            // for ever and the test would fail on the timeout below.
            std::thread::spawn(move || {
                S.lock(handle).unwrap().items.push(9);
                let _ = tx.send(());
            });
            rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok()
        });
        assert!(pushed);
        assert_eq!(g.items, [9]);
        g.items.clear();
        g.remove(|_| ());
    }
}
