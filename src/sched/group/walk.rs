//! The check that refuses a wait that could never end: a walk from the
//! caller's frame and entered list (`frame.rs`) through everything that
//! waits for the caller's work, on this thread and on the workers that run
//! the batches it belongs to.
//!
//! # What is reached, and why it stays put
//!
//! From a frame the walk goes to its parent (the work that waits for the
//! frame's work), to its batch's node in the list of the batch's runner
//! (the runner cannot return below that node before the batch ends, and
//! the batch waits for the frame's task), and to the node below the frame:
//! on the list of the worker that runs the frame's work (that worker cannot
//! return below it before the frame's work ends), or, for the frame of a
//! C join's branch taken by another thread, on the list of the thread that
//! made the join, at the join (the join cannot return before the branch
//! ends). From a node it goes to the frame
//! of the work the node stands for and to the node below it. Each step
//! leads to work that waits, directly or not, for the caller's work: none
//! of it can end, and so none of its frames and nodes (locals of the
//! functions that run it) can go, while the caller's wait runs. Frames are
//! never written after they are made, nodes never after they are linked,
//! and both were written before the work that leads from them to the
//! caller was handed to the thread that runs it (a job push and steal: a
//! Release and an Acquire). So the walk reads a structure that is alive
//! and fixed for as long as the caller waits: it needs no lock, and its
//! answer stays right for the whole wait (what the waiter runs meanwhile
//! is stacked above the caller, where the walk does not go).
//!
//! # Cost
//!
//! Each frame and node is looked at once: a chain or a list is left at
//! the first frame or node seen already (the rest of it was walked from
//! there), so a walk is linear in what it reaches. The addresses seen are
//! kept inline (a few words on the stack, compared one by one) and in a
//! hash set beyond that, so the usual shallow walk allocates nothing.
//!
//! There is no budget: a bound would have to either let a wait through
//! unchecked (a hang, if it could never end) or refuse it (a wrong error
//! for a wait that would end). What the walk reaches is work alive in the
//! pool, nested by the program itself, and a wait from a task nested `d`
//! groups deep costs time linear in `d` (plus what it reaches through
//! other workers' stacks).

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::mem::MaybeUninit;

use super::core::GroupCore;
use super::frame::{Entered, Frame};
use super::WouldDeadlock;
use crate::sched::worker::WorkerThread;

/// Where a wait for `group` from `wt`, the calling thread's worker, would
/// stand if it could never end, or `None`. Asked by every wait for a busy
/// group, before it does anything; a caller with no frame and an empty
/// list (work that no task or batch of a group is under: the usual
/// top-level wait) has nothing to follow and is answered at once.
///
/// - [`WouldDeadlock::InsideOwnTask`]: a frame of the group in the
///   caller's chain (one of its tasks, or work such a task waits for).
/// - [`WouldDeadlock::StackedOnGroup`]: a node of the group below the
///   caller on this thread's stack (its task or batch, under work this
///   worker took while they waited), or a frame or node of the group
///   reached through the batches the caller's work belongs to, on the
///   workers that run them.
#[inline]
pub(crate) fn stacked(wt: &WorkerThread, group: &GroupCore) -> Option<WouldDeadlock> {
    let (frame, head) = (wt.group_frame.get(), wt.group_entered.get());
    if frame.is_null() && head.is_null() {
        return None;
    }
    walk(group, frame, head)
}

#[inline(never)]
fn walk(group: &GroupCore, frame: *const Frame, head: *const Entered) -> Option<WouldDeadlock> {
    let mut walk = Walk {
        group,
        seen: Seen::new(),
        todo: Todo::new(),
    };
    // The caller's chain first, alone: a frame of the group there is its
    // own task (or work such a task waits for).
    if walk.frames(frame) {
        return Some(WouldDeadlock::InsideOwnTask);
    }
    let mut next = head;
    loop {
        if walk.nodes(next) {
            return Some(WouldDeadlock::StackedOnGroup);
        }
        next = walk.todo.pop()?;
    }
}

struct Walk {
    group: *const GroupCore,
    /// The frames and nodes looked at.
    seen: Seen,
    /// The nodes of batches found and not followed yet.
    todo: Todo,
}

impl Walk {
    /// The frames from `p` outwards, up to the first one seen already:
    /// whether one of them is of the group. Queues their batches' nodes
    /// and the nodes below them on their runners' lists.
    #[inline(always)]
    fn frames(&mut self, mut p: *const Frame) -> bool {
        // SAFETY: a frame reached by the walk is alive and unchanging (see
        // the module docs).
        while let Some(f) = unsafe { p.as_ref() } {
            if !self.seen.insert(p as usize) {
                break;
            }
            if f.group == self.group {
                return true;
            }
            // SAFETY: the frame's batch waits for the frame's task: alive,
            // and its node is never written after the batch starts.
            if let Some(batch) = unsafe { f.batch.as_ref() } {
                self.todo.push(batch.entered());
            }
            if !f.below.is_null() {
                self.todo.push(f.below);
            }
            p = f.parent;
        }
        false
    }

    /// The nodes from `p` down a thread's list, up to the first one seen
    /// already: whether one of them, or a frame reached from one, is of
    /// the group.
    fn nodes(&mut self, mut p: *const Entered) -> bool {
        // SAFETY: a node reached by the walk is alive and unchanging (see
        // the module docs).
        while let Some(n) = unsafe { p.as_ref() } {
            if !self.seen.insert(p as usize) {
                break;
            }
            if n.group == self.group || self.frames(n.frame) {
                return true;
            }
            p = n.below;
        }
        false
    }
}

/// Addresses kept inline before [`Seen`] moves to a hash set: a task
/// nested a few groups deep reaches fewer.
const INLINE_SEEN: usize = 16;

/// A set of addresses (frames and nodes: distinct objects, so distinct
/// addresses): inline, looked for one by one, while it is small.
struct Seen {
    /// How many of `inline` are written; above `INLINE_SEEN` once the
    /// addresses are in `more`.
    len: usize,
    /// Not zeroed: a walk that sees two addresses writes two words.
    inline: [MaybeUninit<usize>; INLINE_SEEN],
    more: Option<HashSet<usize, BuildHasherDefault<AddrHasher>>>,
}

impl Seen {
    #[inline(always)]
    fn new() -> Seen {
        Seen {
            len: 0,
            inline: [MaybeUninit::uninit(); INLINE_SEEN],
            more: None,
        }
    }

    /// The addresses kept inline.
    #[inline(always)]
    fn written(&self) -> &[usize] {
        // SAFETY: the first `len` entries are written (`insert`), and
        // `MaybeUninit<usize>` has the layout of `usize`.
        unsafe { std::slice::from_raw_parts(self.inline.as_ptr().cast::<usize>(), self.len) }
    }

    /// Adds `addr`; `false` when it was in the set already.
    #[inline(always)]
    fn insert(&mut self, addr: usize) -> bool {
        if self.len >= INLINE_SEEN {
            return self.insert_more(addr);
        }
        if self.written().contains(&addr) {
            return false;
        }
        self.inline[self.len] = MaybeUninit::new(addr);
        self.len += 1;
        true
    }

    /// [`insert`](Self::insert) once `inline` is full: into the hash set,
    /// made (from `inline`) on the first call.
    #[cold]
    #[inline(never)]
    fn insert_more(&mut self, addr: usize) -> bool {
        if self.len == INLINE_SEEN {
            let mut more = HashSet::with_capacity_and_hasher(4 * INLINE_SEEN, Default::default());
            more.extend(self.written());
            self.more = Some(more);
            self.len += 1;
        }
        self.more
            .as_mut()
            .expect("made when `inline` filled up")
            .insert(addr)
    }
}

/// A hash of an address: a multiply, folded so that the low bits (which
/// pick the bucket) depend on the high ones.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// Nodes kept inline before [`Todo`] allocates.
const INLINE_TODO: usize = 8;

/// A stack of nodes to follow: inline while it is short.
struct Todo {
    /// How many of `inline` are written.
    len: usize,
    inline: [MaybeUninit<*const Entered>; INLINE_TODO],
    /// The nodes pushed while `inline` was full (popped first).
    more: Vec<*const Entered>,
}

impl Todo {
    #[inline(always)]
    fn new() -> Todo {
        Todo {
            len: 0,
            inline: [MaybeUninit::uninit(); INLINE_TODO],
            more: Vec::new(),
        }
    }

    #[inline(always)]
    fn push(&mut self, node: *const Entered) {
        if self.len < INLINE_TODO {
            self.inline[self.len] = MaybeUninit::new(node);
            self.len += 1;
        } else {
            self.more.push(node);
        }
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<*const Entered> {
        if let Some(node) = self.more.pop() {
            return Some(node);
        }
        self.len = self.len.checked_sub(1)?;
        // SAFETY: the first `len` entries (before this pop) are written
        // (`push`).
        Some(unsafe { self.inline[self.len].assume_init() })
    }
}
