//! A group's task: a `'static` closure, type-erased, kept inline (no
//! allocation) when it captures at most [`INLINE_WORDS`] words, as a C
//! task (a function and its argument) does, and boxed otherwise.

use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::ptr;

use super::TaskGroup;

/// Words of captured state a task keeps inline.
const INLINE_WORDS: usize = 3;

type Storage = MaybeUninit<[usize; INLINE_WORDS]>;

/// What a task's storage holds, erased: how to run it and how to drop it.
struct VTable {
    /// Moves the closure out of the storage and calls it.
    call: unsafe fn(*mut Storage, &TaskGroup),
    /// Drops the closure in the storage without calling it.
    drop: unsafe fn(*mut Storage),
}

/// A task spawned into a group and not run yet.
pub(crate) struct Task {
    storage: Storage,
    vtable: &'static VTable,
}

// SAFETY: a `Task` is only made from `F: Send` closures (`Task::new`), and
// the storage is only touched by whoever owns the `Task`.
unsafe impl Send for Task {}

/// The vtables of closure type `F`: inline or boxed.
struct Erased<F>(PhantomData<F>);

impl<F: FnOnce(&TaskGroup) + Send + 'static> Erased<F> {
    const FITS: bool = mem::size_of::<F>() <= mem::size_of::<Storage>()
        && mem::align_of::<F>() <= mem::align_of::<Storage>();

    const INLINE: VTable = VTable {
        call: Self::call_inline,
        drop: Self::drop_inline,
    };

    const BOXED: VTable = VTable {
        call: Self::call_boxed,
        drop: Self::drop_boxed,
    };

    /// # Safety
    /// `s` holds an `F` (written by `Task::new`), read once.
    unsafe fn call_inline(s: *mut Storage, group: &TaskGroup) {
        // SAFETY: the caller's contract; the storage is not used again.
        let f = unsafe { s.cast::<F>().read() };
        f(group);
    }

    /// # Safety
    /// As [`Self::call_inline`].
    unsafe fn drop_inline(s: *mut Storage) {
        // SAFETY: as in `call_inline`.
        unsafe { s.cast::<F>().drop_in_place() };
    }

    /// # Safety
    /// `s` holds a `Box<F>`'s pointer (written by `Task::new`), read once.
    unsafe fn call_boxed(s: *mut Storage, group: &TaskGroup) {
        // SAFETY: the caller's contract: a pointer from `Box::into_raw`.
        let f = unsafe { Box::from_raw(s.cast::<*mut F>().read()) };
        f(group);
    }

    /// # Safety
    /// As [`Self::call_boxed`].
    unsafe fn drop_boxed(s: *mut Storage) {
        // SAFETY: as in `call_boxed`.
        drop(unsafe { Box::from_raw(s.cast::<*mut F>().read()) });
    }
}

/// The vtable of a task that was taken (or never held one): runs and
/// drops nothing.
static EMPTY: VTable = VTable {
    call: |_, _| {},
    drop: |_| {},
};

impl Task {
    /// Erases `f`: inline when it fits, boxed otherwise.
    #[inline]
    pub(crate) fn new<F>(f: F) -> Task
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        let mut task = mem::MaybeUninit::<Task>::uninit();
        // SAFETY: `write` initialises every field.
        unsafe {
            Task::write(task.as_mut_ptr(), f);
            task.assume_init()
        }
    }

    /// Erases `f` straight into `*slot` (uninitialised, overwritten
    /// without a drop): the closure's words are stored once, where the
    /// task will stay, rather than built on the stack and copied (a copy
    /// with wide loads of words just stored narrowly stalls).
    ///
    /// # Safety
    /// `slot` is valid for writes of a `Task`.
    #[inline(always)]
    pub(crate) unsafe fn write<F>(slot: *mut Task, f: F)
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        // SAFETY: the caller's promise; the field pointers stay in `*slot`.
        unsafe {
            let storage = ptr::addr_of_mut!((*slot).storage);
            let vtable = if Erased::<F>::FITS {
                // `F` fits the storage's size and alignment (checked).
                storage.cast::<F>().write(f);
                &Erased::<F>::INLINE
            } else {
                // A pointer fits the storage (three words).
                storage.cast::<*mut F>().write(Box::into_raw(Box::new(f)));
                &Erased::<F>::BOXED
            };
            ptr::addr_of_mut!((*slot).vtable).write(vtable);
        }
    }

    /// A task that runs nothing (what a taken task leaves behind).
    #[inline]
    pub(crate) fn empty() -> Task {
        Task {
            storage: Storage::uninit(),
            vtable: &EMPTY,
        }
    }

    /// Whether this is a task that runs nothing.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        ptr::eq(self.vtable, &EMPTY)
    }

    /// Runs the task, with `group` as the group it was spawned into.
    #[inline]
    pub(crate) fn run(self, group: &TaskGroup) {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: the storage holds the closure `vtable` was made for, and
        // `this` is never dropped, so it is read exactly once.
        unsafe { (this.vtable.call)(&mut this.storage, group) };
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        // SAFETY: a task that is dropped was never run (`run` consumes it
        // without dropping), so the storage still holds its closure (or
        // nothing, for the empty task, whose `drop` reads nothing).
        unsafe { (self.vtable.drop)(&mut self.storage) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn view_group() -> TaskGroup {
        let pool = crate::ThreadPoolBuilder::new()
            .num_threads(1)
            .pin(false)
            .build()
            .unwrap();
        TaskGroup::new(&pool)
    }

    #[test]
    fn small_and_large_closures_run_once_and_drop_what_they_own() {
        let group = view_group();
        let ran = Arc::new(AtomicUsize::new(0));
        let (a, b) = (Arc::clone(&ran), Arc::clone(&ran));
        let small = Task::new(move |_| {
            a.fetch_add(1, Ordering::Relaxed);
        });
        let big_state = [7u64; 16];
        let large = Task::new(move |_| {
            b.fetch_add(big_state.iter().sum::<u64>() as usize, Ordering::Relaxed);
        });
        small.run(&group);
        large.run(&group);
        assert_eq!(ran.load(Ordering::Relaxed), 1 + 7 * 16);
        // Both closures (and their Arcs) are gone.
        assert_eq!(Arc::strong_count(&ran), 1);
        let (c, d) = (Arc::clone(&ran), Arc::clone(&ran));
        drop(Task::new(move |_| drop(c)));
        drop(Task::new(move |_| {
            let _ = (&d, [0u64; 8]);
        }));
        assert_eq!(
            Arc::strong_count(&ran),
            1,
            "a dropped task leaked its closure"
        );
    }
}
