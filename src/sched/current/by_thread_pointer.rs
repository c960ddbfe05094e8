//! The thread-pointer table of `current.rs` (its module docs say why
//! and how), on x86-64 Linux.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use super::WorkerThread;

/// Home entries of the table: a power of two. A thread's entry is one of
/// [`PROBES`] from its home on; a thread that finds them all taken (more
/// than a few hundred workers in a process, or a crowd of alike hashes)
/// has none, and reads the `thread_local!`.
pub(super) const SLOTS: usize = 1024;
/// The entries a thread may hold, from its home on.
pub(super) const PROBES: usize = 4;
const BITS: u32 = SLOTS.trailing_zeros();
const _: () = assert!(SLOTS.is_power_of_two() && PROBES >= 1);

/// The calling thread's thread pointer (never 0).
#[inline(always)]
pub(super) fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: x86-64 Linux keeps the thread pointer at `%fs:0` (TLS
    // variant II), readable by the thread itself for its whole life;
    // it never changes, so the read may be merged (`pure, nomem`).
    unsafe {
        std::arch::asm!(
            "mov {tp}, qword ptr fs:[0]",
            tp = out(reg) tp,
            options(nostack, preserves_flags, pure, nomem),
        );
    }
    tp
}

/// The home entry of thread pointer `tp`: Fibonacci hashing (thread
/// pointers differ in their middle bits: one stack apart).
#[inline(always)]
pub(super) fn index(tp: usize) -> usize {
    tp.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (usize::BITS - BITS)
}

/// One thread's entry: its thread pointer (0: free) and its worker (null
/// while free, and from a claim's compare-and-swap until its store).
#[repr(align(16))]
pub(super) struct Entry {
    tp: AtomicUsize,
    wt: AtomicPtr<WorkerThread>,
}

/// The table (module docs of `current.rs`). Its protocol is written
/// with the thread pointer as an argument, so that tests can act as
/// threads whose pointers collide. Page-aligned, so that its pages are
/// its own (`wiped_on_fork`).
#[repr(C, align(4096))]
pub(super) struct Table {
    /// `SLOTS` homes, and room for the last ones' probes (no wrapping).
    entries: [Entry; SLOTS + PROBES - 1],
}

pub(super) static TABLE: Table = Table::new();

impl Table {
    pub(super) const fn new() -> Table {
        Table {
            entries: [const {
                Entry {
                    tp: AtomicUsize::new(0),
                    wt: AtomicPtr::new(ptr::null_mut()),
                }
            }; SLOTS + PROBES - 1],
        }
    }

    /// The entries thread pointer `tp` may hold.
    #[inline(always)]
    fn window(&self, tp: usize) -> &[Entry; PROBES] {
        // `index` shifts right by `BITS` less than the width, so its value
        // is below `SLOTS`, and the window within the `SLOTS + PROBES - 1`
        // entries: the compiler sees it too, and no check is left.
        match self.entries[index(tp)..].first_chunk() {
            Some(w) => w,
            None => unreachable!("a home past the table"),
        }
    }

    /// The worker of the thread whose pointer is `tp` (never null), if
    /// that thread holds an entry. Called by that thread, also from a
    /// signal handler.
    #[inline(always)]
    pub(super) fn find(&self, tp: usize) -> Option<*const WorkerThread> {
        for e in self.window(tp) {
            // Equal only if the caller claimed it (module docs): the worker
            // is the caller's own write, or null while the caller is
            // inside its claim (a signal handler that interrupted it) or
            // its free.
            if e.tp.load(Ordering::Relaxed) == tp {
                let wt = e.wt.load(Ordering::Relaxed);
                return if wt.is_null() { None } else { Some(wt) };
            }
        }
        None
    }

    /// The thread whose pointer is `tp` takes a free entry of its window
    /// for `wt` (first giving back any it holds); whether it found one.
    /// Not re-entrant, nor is [`free`](Self::free): a claim or free from
    /// a signal handler that interrupted one of the same thread's could
    /// write an entry the thread no longer holds (a worker starts and
    /// stops in `WorkerThread::run`, never in a handler).
    pub(super) fn claim(&self, tp: usize, wt: *const WorkerThread) -> bool {
        debug_assert!(tp != 0 && !wt.is_null());
        self.free(tp);
        for e in self.window(tp) {
            // Acquire: the last holder's free cleared the worker before its
            // Release of the thread pointer; from here until the store
            // below, a `find` of ours sees null, a miss.
            if e.tp
                .compare_exchange(0, tp, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                e.wt.store(wt.cast_mut(), Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// The thread whose pointer is `tp` gives back what it holds: the
    /// worker cleared first (a `find` in between misses), then the thread
    /// pointer, Release, for the next holder's claim (or a new thread with
    /// the same pointer) to come after.
    pub(super) fn free(&self, tp: usize) {
        for e in self.window(tp) {
            if e.tp.load(Ordering::Relaxed) == tp {
                e.wt.store(ptr::null_mut(), Ordering::Relaxed);
                e.tp.store(0, Ordering::Release);
            }
        }
    }

    /// How many entries are held (for tests).
    #[cfg(all(test, not(loom)))]
    pub(super) fn held(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.tp.load(Ordering::Relaxed) != 0)
            .count()
    }

    /// Frees every entry (for tests: what a `fork` child's wiped pages
    /// hold).
    #[cfg(all(test, not(loom)))]
    pub(super) fn free_all(&self) {
        for e in &self.entries {
            e.wt.store(ptr::null_mut(), Ordering::Relaxed);
            e.tp.store(0, Ordering::Relaxed);
        }
    }
}

/// Frees the thread's entry at the thread's end, if it still holds
/// one (a worker that never stopped being one).
struct FreeAtExit(Cell<bool>);

impl Drop for FreeAtExit {
    fn drop(&mut self) {
        if self.0.get() {
            let tp = thread_pointer();
            #[cfg(all(test, not(loom)))]
            let held = TABLE.find(tp).is_some();
            TABLE.free(tp);
            #[cfg(all(test, not(loom)))]
            super::tests::freed_at_exit(tp, held, TABLE.find(tp).is_some());
        }
    }
}

thread_local! {
    static FREE_AT_EXIT: FreeAtExit = const { FreeAtExit(Cell::new(false)) };
}

/// Whether the table's pages are wiped in a `fork` child: 0 not known
/// yet, 1 yes, 2 no (the kernel does not know the advice: before Linux
/// 4.14, or an emulator).
static WIPED_ON_FORK: AtomicU8 = AtomicU8::new(0);

/// Marks the table's pages `MADV_WIPEONFORK` (once; a race of two first
/// workers asks twice, which is harmless): the child of a `fork` (or of
/// any other copy of the address space: `_Fork`, a raw `clone`) finds
/// them zeroed, every entry free, before any of its code runs. No
/// `pthread_atfork` handler could promise that: the child runs handlers
/// registered before ours first, and a thread one of them starts may have
/// a dead worker's thread pointer. Whether the table may be used.
fn wiped_on_fork() -> bool {
    match WIPED_ON_FORK.load(Ordering::Acquire) {
        1 => return true,
        2 => return false,
        _ => {}
    }
    let advise = |advice| {
        // SAFETY: the table's own pages (`Table` is page-aligned and
        // page-padded), private and anonymous (zero-initialised, in
        // `.bss`); advice changes what a child sees of them, nothing here.
        let rc = unsafe {
            libc::madvise(
                ptr::addr_of!(TABLE).cast_mut().cast(),
                std::mem::size_of::<Table>(),
                advice,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().raw_os_error())
        }
    };
    // An emulator that accepts advice it does not apply (qemu-user) also
    // accepts advice that does not exist: then the wipe is not trusted.
    let verdict = match (advise(-1), advise(libc::MADV_WIPEONFORK)) {
        (Err(_), Ok(())) => 1,
        (Ok(()), _) | (_, Err(Some(libc::EINVAL))) => 2,
        // Another error (`ENOMEM`, `EAGAIN`: the mapping could not be
        // split): not now, maybe at the next worker's start.
        (Err(_), Err(_)) => return false,
    };
    WIPED_ON_FORK.store(verdict, Ordering::Release);
    verdict == 1
}

/// [`super::set`]'s part: claims the thread's entry if both ways an
/// entry could outlive its thread are covered (the thread's exit frees
/// it: its destructor is registered; a fork child finds the table wiped);
/// else the thread has none.
pub(super) fn claim(wt: &WorkerThread) {
    if !wiped_on_fork() {
        return;
    }
    // `try_with` fails while the thread's locals are being destroyed.
    if FREE_AT_EXIT.try_with(|f| f.0.set(true)).is_ok() {
        TABLE.claim(thread_pointer(), wt);
    }
}

/// The calling thread's worker, if it holds its entry.
#[inline(always)]
pub(super) fn find_current() -> Option<*const WorkerThread> {
    #[cfg(all(test, not(loom)))]
    if super::tests::missing() {
        return None;
    }
    TABLE.find(thread_pointer())
}

/// [`super::clear`]'s part.
pub(super) fn free() {
    TABLE.free(thread_pointer());
}
