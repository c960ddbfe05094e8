//! The handle table behind `terroir_pool *` and `terroir_group *`.
//!
//! A handle is not a pointer to the object: it is a key, `generation << 32
//! | (slot + 1)`, carried in a pointer-sized value that is never
//! dereferenced. Each slot keeps its generation and the object (an `Arc`),
//! behind a mutex of its own; destroying removes the object and bumps the
//! generation, so the old key no longer matches and a second destroy (or
//! any later use) is `TERROIR_ERROR_INVALID_HANDLE`, never a use after
//! free. Slots live in segments that are allocated on first need and never
//! freed, so looking up any key, even a garbage one, reads valid memory. A
//! slot whose generation would wrap around is retired, not reused.
//!
//! Lookups clone the `Arc` under the slot's own mutex: calls on different
//! objects never contend, and an object stays alive for a call that looked
//! it up even if another thread destroys its handle meanwhile. Free slots
//! are kept per thread first (up to [`LOCAL_SLOTS`]), so that threads
//! creating and destroying handles at a high rate (a task group per task)
//! do not all take the table's global free-list lock.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::LocalKey;

use super::error::{Error, TerroirError};

const SEGMENT_SLOTS: usize = 1024;
const SEGMENTS: usize = 1024;

const _: () = assert!(
    usize::BITS == 64,
    "terroir's C handles need 64-bit pointers"
);

struct SlotState<T> {
    /// The generation of the current occupant, or of the next one.
    generation: u32,
    value: Option<Arc<T>>,
}

struct Slot<T> {
    state: Mutex<SlotState<T>>,
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
/// [`HandleTable::new`]'s `local`). Returned to the table when the thread
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

/// A table of live objects of type `T`, addressed by handles.
pub(crate) struct HandleTable<T: 'static> {
    /// What the handles are, for error messages (`"pool"`, `"group"`).
    kind: &'static str,
    segments: [OnceLock<Box<[Slot<T>]>>; SEGMENTS],
    free: Mutex<FreeList>,
    local: &'static LocalKey<RefCell<LocalFree>>,
}

fn lock<S>(m: &Mutex<S>) -> MutexGuard<'_, S> {
    // A poisoned slot only means a panic elsewhere; its state is still
    // consistent (every update is a single assignment).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T> HandleTable<T> {
    /// A table whose threads keep their free slots in `local` (a
    /// `thread_local!` of its own for each table).
    pub(crate) const fn new(
        kind: &'static str,
        local: &'static LocalKey<RefCell<LocalFree>>,
    ) -> HandleTable<T> {
        HandleTable {
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

    fn slot(&self, index: usize) -> Option<&Slot<T>> {
        self.segments
            .get(index / SEGMENT_SLOTS)?
            .get()
            .map(|seg| &seg[index % SEGMENT_SLOTS])
    }

    fn decode(handle: usize) -> (usize, u32) {
        let index = (handle & 0xFFFF_FFFF).wrapping_sub(1);
        (index, (handle >> 32) as u32)
    }

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
                        value: None,
                    }),
                })
                .collect()
        });
        free.next = i + 1;
        Ok(i)
    }

    /// Stores the object `make(handle)` and returns its handle.
    pub(crate) fn insert(&'static self, make: impl FnOnce(usize) -> T) -> Result<usize, Error> {
        let index = self.take_slot()?;
        let slot = self.slot(index).expect("the segment was allocated above");
        let mut state = lock(&slot.state);
        let handle = Self::encode(index, state.generation);
        state.value = Some(Arc::new(make(handle)));
        Ok(handle)
    }

    /// The live object behind `handle`.
    pub(crate) fn get(&self, handle: usize) -> Result<Arc<T>, Error> {
        let (index, generation) = Self::decode(handle);
        let slot = self.slot(index).ok_or_else(|| self.invalid(handle))?;
        let state = lock(&slot.state);
        match &state.value {
            Some(v) if state.generation == generation => Ok(Arc::clone(v)),
            _ => Err(self.invalid(handle)),
        }
    }

    /// Runs `f` on the live object behind `handle` while holding its slot
    /// (no reference count traffic). `f` must not call into C nor use this
    /// table's slot of the same handle.
    pub(crate) fn with<R>(
        &self,
        handle: usize,
        f: impl FnOnce(&Arc<T>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let (index, generation) = Self::decode(handle);
        let slot = self.slot(index).ok_or_else(|| self.invalid(handle))?;
        let state = lock(&slot.state);
        match &state.value {
            Some(v) if state.generation == generation => f(v),
            _ => Err(self.invalid(handle)),
        }
    }

    /// Removes the object behind `handle` if `pred` holds for it (checked
    /// under the slot's lock): `Ok(Ok(object))`; otherwise the handle stays
    /// live and the object is returned as a lookup would (`Ok(Err(it))`),
    /// so that a caller that must wait first needs no second lookup.
    pub(crate) fn remove_if(
        &'static self,
        handle: usize,
        pred: impl FnOnce(&T) -> bool,
    ) -> Result<Result<Arc<T>, Arc<T>>, Error> {
        let (index, generation) = Self::decode(handle);
        let slot = self.slot(index).ok_or_else(|| self.invalid(handle))?;
        let (value, reusable) = {
            let mut state = lock(&slot.state);
            match &state.value {
                Some(v) if state.generation == generation => {
                    if !pred(v) {
                        return Ok(Err(Arc::clone(v)));
                    }
                }
                _ => return Err(self.invalid(handle)),
            }
            let value = state.value.take().expect("checked above");
            state.generation = state.generation.wrapping_add(1);
            (value, state.generation != 0)
        };
        if reusable {
            self.put_slot(index);
        }
        Ok(Ok(value))
    }

    /// Removes the object behind `handle` (the caller drops it, outside
    /// any lock) and makes the handle stale.
    pub(crate) fn remove(&'static self, handle: usize) -> Result<Arc<T>, Error> {
        let (index, generation) = Self::decode(handle);
        let slot = self.slot(index).ok_or_else(|| self.invalid(handle))?;
        let (value, reusable) = {
            let mut state = lock(&slot.state);
            if state.generation != generation || state.value.is_none() {
                return Err(self.invalid(handle));
            }
            let value = state.value.take().expect("checked above");
            state.generation = state.generation.wrapping_add(1);
            (value, state.generation != 0)
        };
        if reusable {
            self.put_slot(index);
        }
        Ok(value)
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
}
