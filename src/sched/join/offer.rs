//! Offers: work a running batch leaves on the table while it runs, split
//! off only if a thief asks (the loop layer's third hook, README §9).
//!
//! A loop runs its units in batches and, between batches, splits when a
//! thief has asked ([`WorkerThread::split_wanted`]). A batch whose items
//! run nested loops (a `flat_map` to a parallel iterator, a `par_iter`
//! inside a `for_each`) may run for a long time, and the requests that
//! come meanwhile reach the *innermost* loop, which has only a small part
//! of the work to give. So a loop runs each batch through
//! [`offer_during`]: the rest of its units after the batch is linked on
//! the worker as an [`OfferFrame`], and when a request is served (by any
//! poll on this thread: a nested loop's or a `join`'s) the *oldest*
//! candidate goes first, whether a private `join` continuation or an
//! offer, as chili's heartbeat promotes its oldest frame: the thief gets
//! the biggest piece there is.
//!
//! Serving an offer happens on the owning thread, inside a poll of the
//! code the batch runs, so the rest is never touched by two threads: the
//! owner's `split` closure cuts the rest in two, keeps the first part in
//! the frame and publishes a job for the second on the deque. When the
//! batch returns the owner finds out which: the rest untouched (it goes on
//! with it), or split (it goes on with its part nested in this call, then
//! waits for the other part as `join` waits for a promoted continuation).
//!
//! Offers and private `join` nodes live in frames of the same thread's
//! stack, so their age is their address: the stack grows down on every
//! target terroir builds for, and a frame further from the top is older
//! ([`older`]).

use std::cell::{Cell, UnsafeCell};

use super::split::WaitGuard;
use crate::sched::job::{JobRef, StackJob};
use crate::sched::latch::WorkerLatch;
use crate::sched::worker::WorkerThread;

/// A running batch's offer: a node of an intrusive list through the stack
/// frames of the running [`offer_during`] calls of one worker, newest
/// first. Only the owning worker reads or writes it.
pub(crate) struct OfferFrame {
    prev: *const OfferFrame,
    /// Not split yet, and not refused (a rest too small to split).
    open: Cell<bool>,
    /// The owner's closure that splits the rest, erased.
    data: *const (),
    split: unsafe fn(*const ()) -> Option<JobRef>,
}

/// Calls the erased closure of an [`OfferFrame`].
///
/// # Safety
/// `data` points to a live `F`.
unsafe fn call<F: Fn() -> Option<JobRef>>(data: *const ()) -> Option<JobRef> {
    // SAFETY: the caller's contract.
    unsafe { (*(data as *const F))() }
}

/// The list of a worker's offers (head: the newest), a stack that follows
/// the worker's call stack, as the private `join` list does.
pub(crate) struct OfferList {
    head: Cell<*const OfferFrame>,
}

impl OfferList {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        OfferList {
            head: Cell::new(std::ptr::null()),
        }
    }

    /// The oldest offer still open, if any. Closed frames are the oldest
    /// end of the list (only the oldest open frame is ever closed, and new
    /// frames are linked as the newest), so the walk stops at the first.
    pub(crate) fn oldest_open(&self) -> Option<&OfferFrame> {
        let mut oldest = None;
        let mut p = self.head.get();
        // SAFETY: every frame of the list lives in an `offer_during` call of
        // this thread that has not returned (it unlinks its frame first,
        // also when it unwinds: `Linked`).
        while let Some(f) = unsafe { p.as_ref() } {
            if !f.open.get() {
                break;
            }
            oldest = Some(f);
            p = f.prev;
        }
        oldest
    }
}

impl OfferFrame {
    /// Splits the offer (once: the frame is closed after), returning the
    /// job to publish, or `None` if its rest is too small.
    pub(crate) fn split(&self) -> Option<JobRef> {
        self.open.set(false);
        // SAFETY: `data` is the closure `split` was made for, alive while
        // the frame is linked (`offer_during`).
        unsafe { (self.split)(self.data) }
    }
}

impl WorkerThread {
    /// For a loop that keeps work published without being asked: if this
    /// worker has open offers (older loops' rests, bigger than anything the
    /// loop could split off), publishes a part of the oldest one unless a
    /// job already waits on the deque; returns whether offers took care of
    /// it (`false`: no open offer, the loop splits itself).
    pub(crate) fn publish_offer(&self) -> bool {
        if self.offers.oldest_open().is_none() {
            return false;
        }
        if !self.deque.is_empty() {
            return true;
        }
        while let Some(offer) = self.offers.oldest_open() {
            if let Some(job) = offer.split() {
                self.push(job);
                return true;
            }
        }
        false
    }
}

/// Whether the frame at `a` is older than the frame at `b`, both in the
/// calling thread's stack (see the module docs).
#[inline]
pub(crate) fn older(a: *const (), b: *const ()) -> bool {
    // The stack grows down: an older frame has the higher address.
    (a as usize) > (b as usize)
}

/// Unlinks a linked frame when dropped (also when the batch unwinds).
struct Linked<'a> {
    wt: &'a WorkerThread,
    frame: &'a OfferFrame,
}

impl Drop for Linked<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        let list = &self.wt.offers;
        if !std::ptr::eq(list.head.get(), self.frame) {
            // Frames are unlinked in the order of the call stack (every
            // `offer_during` of a nested batch returns or unwinds first); if
            // not, the list points into frames that are gone.
            crate::sched::unwind::abort_with("offer frames unlinked out of order");
        }
        list.head.set(self.frame.prev);
    }
}

/// What [`offer_during`] did.
pub(crate) enum Offered<RA, T, RK, RB> {
    /// Nobody asked: the batch's result and the rest, whole.
    Kept(RA, T),
    /// The rest was split: the result of `then` (the batch's result and
    /// the first part) and of `theirs` (the second part).
    Split(RK, RB),
}

/// Runs `batch` on `wt` with `rest` on offer (see the module docs). If a
/// request is served with this offer while `batch` runs, `cut(&mut rest)`
/// (called on this thread) cuts off a second part, or returns `None` when
/// `rest` is too small; the part runs as `theirs(part)` wherever it is
/// taken. Then, on this thread, `then(batch's result, first part)` runs,
/// and this returns both results once both are done. Otherwise this
/// returns the batch's result and the rest as they were.
///
/// # Panics
/// A panic of `batch` or `then` propagates after the second part, if one
/// was cut, has finished (its own panic, if any, is dropped). A panic of
/// `theirs` propagates after `then` returned.
#[inline(always)]
pub(crate) fn offer_during<T, RA, RK, RB>(
    wt: &WorkerThread,
    rest: T,
    cut: impl Fn(&mut T) -> Option<T>,
    batch: impl FnOnce() -> RA,
    then: impl FnOnce(RA, T) -> RK,
    theirs: impl FnOnce(T) -> RB + Send,
) -> Offered<RA, T, RK, RB>
where
    T: Send,
    RB: Send,
{
    let rest = UnsafeCell::new(rest);
    let part = Part(UnsafeCell::new(None));
    let part = &part;
    let job = StackJob::new(
        move |_| {
            // SAFETY: written by the owner before the job was published, and
            // the owner does not touch it again until the job's latch is set.
            let t = unsafe { (*part.0.get()).take() }.expect("an offered part");
            theirs(t)
        },
        WorkerLatch::new(wt, false),
    );
    let published = Cell::new(false);
    let split = || -> Option<JobRef> {
        // SAFETY: called by `OfferFrame::split` on this thread while `batch`
        // runs, which does not touch `rest`; nothing else borrows it then.
        let r = unsafe { &mut *rest.get() };
        let t = cut(r)?;
        // SAFETY: the job is not published yet: nobody else reads `part`.
        unsafe { *part.0.get() = Some(t) };
        published.set(true);
        Some(job.as_job_ref())
    };
    let frame = OfferFrame {
        prev: wt.offers.head.get(),
        open: Cell::new(true),
        data: &split as *const _ as *const (),
        split: erased(&split),
    };
    let ra = {
        wt.offers.head.set(&frame);
        let _linked = Linked { wt, frame: &frame };
        // If `batch` unwinds after the rest was split, the part (which may
        // borrow what the caller's frames hold) must finish first.
        let guard = WaitIfPublished {
            wt,
            latch: &job.latch,
            published: &published,
        };
        let ra = batch();
        std::mem::forget(guard);
        ra
    };
    let rest = rest.into_inner();
    if !published.get() {
        return Offered::Kept(ra, rest);
    }
    let guard = WaitGuard {
        wt,
        latch: &job.latch,
    };
    let rk = then(ra, rest);
    std::mem::forget(guard);
    wt.wait_until(&job.latch);
    Offered::Split(rk, job.into_result())
}

/// The erased caller of `split`.
fn erased<F: Fn() -> Option<JobRef>>(_: &F) -> unsafe fn(*const ()) -> Option<JobRef> {
    call::<F>
}

/// The cut-off part, handed from the owner to the job's runner.
struct Part<T>(UnsafeCell<Option<T>>);

// SAFETY: the owner writes the part before publishing the job, and only the
// job's runner reads it after taking the job (the deque's push and steal
// order the two); `T: Send` moves it across.
unsafe impl<T: Send> Sync for Part<T> {}

/// [`WaitGuard`] when a part was published.
struct WaitIfPublished<'a> {
    wt: &'a WorkerThread,
    latch: &'a WorkerLatch,
    published: &'a Cell<bool>,
}

impl Drop for WaitIfPublished<'_> {
    fn drop(&mut self) {
        if self.published.get() {
            self.wt.wait_until(self.latch);
        }
    }
}

/// The list on its own (no worker, so under Miri too): the oldest open
/// frame is found past newer ones, a split closes it and runs its
/// closure once, and the walk stops at the closed oldest end.
#[cfg(test)]
mod tests {
    use super::*;

    fn frame<F: Fn() -> Option<JobRef>>(prev: *const OfferFrame, hook: &F) -> OfferFrame {
        OfferFrame {
            prev,
            open: Cell::new(true),
            data: hook as *const F as *const (),
            split: erased(hook),
        }
    }

    #[test]
    fn the_oldest_open_frame_is_split_first_and_once() {
        let calls = [Cell::new(0u32), Cell::new(0u32), Cell::new(0u32)];
        let calls = &calls;
        let make = |i: usize| {
            move || -> Option<JobRef> {
                calls[i].set(calls[i].get() + 1);
                None
            }
        };
        let hooks = [make(0), make(1), make(2)];
        let list = OfferList::new();
        let oldest = frame(std::ptr::null(), &hooks[0]);
        list.head.set(&oldest);
        let middle = frame(&oldest, &hooks[1]);
        list.head.set(&middle);
        let newest = frame(&middle, &hooks[2]);
        list.head.set(&newest);

        for (i, want) in [&oldest, &middle, &newest].into_iter().enumerate() {
            let f = list.oldest_open().expect("an open frame");
            assert!(std::ptr::eq(f, want), "frame {i} is the oldest open one");
            assert!(f.split().is_none());
            assert_eq!(calls[i].get(), 1);
        }
        assert!(list.oldest_open().is_none(), "all closed");
        assert_eq!(calls.iter().map(Cell::get).sum::<u32>(), 3);
    }

    #[test]
    fn older_means_a_higher_address() {
        let a = [0u8; 2];
        assert!(older(
            &a[1] as *const u8 as *const (),
            &a[0] as *const u8 as *const ()
        ));
        assert!(!older(
            &a[0] as *const u8 as *const (),
            &a[1] as *const u8 as *const ()
        ));
    }
}
