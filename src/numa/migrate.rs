//! Moving a region's pages to a node: [`migrate`] and the [`Migration`] it
//! reports, page by page.
//!
//! `move_pages` answers per page in a status array, but not always: when a
//! batch of pages could not all be moved (a page pinned for I/O, a page
//! whose references the kernel cannot drop), Linux 4.17 and later return the
//! number of pages not moved and leave the status of that batch, and of
//! every page after it, unwritten. So statuses start at a sentinel
//! ([`sys::STATUS_UNWRITTEN`], which no node number or errno equals), and
//! after such a call the pages whose status is still the sentinel are
//! located again (`move_pages` without target nodes): there, or not moved.
//! Pages that did not move are tried again while rounds make progress, and a
//! few times more when they do not.
//!
//! The calls go through [`PageMover`], so that the tests can play the
//! kernel's part, including the answers this machine's kernel never gives.

use std::io;

use super::memory::{page_addrs, region, syscall_error};
use super::sys::{self, STATUS_UNWRITTEN};
use super::{mems_allowed, NodeId, NumaError};

/// A `move_pages` status: a node number, or a negative errno.
type Status = libc::c_int;

/// Rounds in a row that may move no page before the pages still waiting
/// are reported.
const STALLED_ROUNDS: usize = 3;

/// What a page that did not move, and for which the kernel gave no errno,
/// is reported as: it was in use (`EBUSY`).
const NOT_MOVED: Status = -libc::EBUSY;

/// Why a page did not move in a [`migrate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PageStatus {
    /// In use through several attempts: the kernel could not isolate it
    /// (`EBUSY`) or could not move it (it holds a reference the kernel
    /// cannot drop: a page pinned for I/O, spliced into a pipe, ...). Try
    /// again later.
    Busy,
    /// Never touched: there is no page to move (`ENOENT`).
    NotPresent,
    /// Mapped by other processes too (`EACCES`).
    Shared,
    /// The shared zero page or a special mapping (`EFAULT`).
    NotMovable,
    /// The target node is out of memory (`ENOMEM`).
    OutOfMemory,
    /// Another errno.
    Other(i32),
}

impl PageStatus {
    fn from_errno(e: i32) -> PageStatus {
        match e {
            libc::EBUSY => PageStatus::Busy,
            libc::ENOENT => PageStatus::NotPresent,
            libc::EACCES => PageStatus::Shared,
            libc::EFAULT => PageStatus::NotMovable,
            libc::ENOMEM => PageStatus::OutOfMemory,
            other => PageStatus::Other(other),
        }
    }
}

/// The outcome of a [`migrate`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Migration {
    pages: usize,
    moved: usize,
    already_there: usize,
    failed: Vec<(usize, PageStatus)>,
    still_elsewhere: usize,
}

impl Migration {
    /// Pages in the region.
    pub fn pages(&self) -> usize {
        self.pages
    }
    /// Pages that moved to the target node.
    pub fn moved(&self) -> usize {
        self.moved
    }
    /// Pages that were on the target node before.
    pub fn already_there(&self) -> usize {
        self.already_there
    }
    /// Pages that did not move, by page index in the region, and why.
    pub fn failed(&self) -> &[(usize, PageStatus)] {
        &self.failed
    }
    /// Pages the kernel reports on another node after the call without an
    /// error (kernels before 4.17 report a page they declined to move so).
    pub fn still_elsewhere(&self) -> usize {
        self.still_elsewhere
    }
    /// Whether every page is on the target node now.
    pub fn complete(&self) -> bool {
        self.failed.is_empty() && self.still_elsewhere == 0
    }
}

/// Moves the pages of `data` to node `to` (`move_pages`), contents intact,
/// and reports per page what happened. The region's policy is not changed:
/// pages touched later follow the old policy (containers of the pool layer
/// change both).
///
/// ```
/// use terroir::numa::{migrate, NodeId};
/// let node = NodeId::new(terroir::numa::mems_allowed().unwrap().iter().next().unwrap());
/// let data = vec![1u8; 64 << 10];
/// let m = migrate(&data, node).unwrap();
/// assert!(m.complete());
/// assert_eq!(m.moved() + m.already_there(), m.pages());
/// ```
///
/// # Errors
/// [`NumaError::NodeNotAllowed`] naming `to` and the allowed nodes;
/// [`NumaError::EmptyRegion`]; [`NumaError::NotSupported`];
/// [`NumaError::NotPermitted`]. Per-page failures are not errors: see
/// [`Migration::failed`].
pub fn migrate<T>(data: &[T], to: NodeId) -> Result<Migration, NumaError> {
    let (addr, len) = region(data);
    migrate_raw(addr, len, to)
}

/// [`migrate`] on a raw address range.
pub(crate) fn migrate_raw(addr: usize, len: usize, to: NodeId) -> Result<Migration, NumaError> {
    if len == 0 {
        return Err(NumaError::EmptyRegion { call: "move_pages" });
    }
    let allowed = mems_allowed()?;
    if !allowed.contains(to.os_index()) {
        return Err(NumaError::NodeNotAllowed { node: to, allowed });
    }
    let (pages, addrs) = page_addrs(addr, len, 1);
    // Node numbers are below 1024 (checked against mems_allowed).
    let target = to.os_index() as Status;
    let (before, after) = move_all(&mut Kernel, &addrs, target).map_err(|e| {
        syscall_error(
            "move_pages",
            format!("move_pages({} pages at {addr:#x} to {to})", addrs.len()),
            e,
        )
    })?;
    Ok(tally(pages, &before, &after, target))
}

/// The two uses of `move_pages` a migration makes: the seam through which
/// the tests play the kernel.
trait PageMover {
    /// Where each page is (`move_pages` without target nodes): a node or a
    /// negative errno in `status`, whose entries start at
    /// [`STATUS_UNWRITTEN`].
    fn locate(&mut self, pages: &[usize], status: &mut [Status]) -> io::Result<()>;

    /// Moves each page to `node`; returns how many pages did not move. When
    /// that is positive, statuses of the failing batch and of the pages
    /// after it may be left at [`STATUS_UNWRITTEN`].
    fn move_to(
        &mut self,
        pages: &[usize],
        node: Status,
        status: &mut [Status],
    ) -> io::Result<usize>;
}

/// The real thing.
struct Kernel;

impl PageMover for Kernel {
    fn locate(&mut self, pages: &[usize], status: &mut [Status]) -> io::Result<()> {
        sys::move_pages(pages, None, status, 0).map(drop)
    }

    fn move_to(
        &mut self,
        pages: &[usize],
        node: Status,
        status: &mut [Status],
    ) -> io::Result<usize> {
        let nodes = vec![node; pages.len()];
        sys::move_pages(pages, Some(&nodes), status, sys::MPOL_MF_MOVE as Status)
    }
}

/// Where each page of `addrs` was before (`before`), and what became of it
/// (`after`): `target` when it is there now, a negative errno when it did
/// not move, another node when the kernel says it is there without an
/// error. Pages that could not move (the kernel gave no errno, or `EBUSY`)
/// are tried again.
fn move_all(
    mover: &mut impl PageMover,
    addrs: &[usize],
    target: Status,
) -> io::Result<(Vec<Status>, Vec<Status>)> {
    let mut before = vec![STATUS_UNWRITTEN; addrs.len()];
    mover.locate(addrs, &mut before)?;
    // Pages already there and pages without memory (never touched, the
    // zero page: `move_pages` would answer the same errno) stay as found.
    let mut after = before.clone();
    let mut pending: Vec<usize> = (0..addrs.len())
        .filter(|&i| before[i] != target && (before[i] >= 0 || before[i] == STATUS_UNWRITTEN))
        .collect();
    let mut stalled = 0;
    let mut one_by_one = false;
    while !pending.is_empty() && stalled < STALLED_ROUNDS {
        if stalled > 0 {
            std::thread::yield_now();
        }
        let batch: Vec<usize> = pending.iter().map(|&i| addrs[i]).collect();
        let (status, aborted) = if one_by_one {
            // A page that keeps failing stops the kernel before the pages
            // after its batch: give every page a call of its own.
            let mut all = Vec::with_capacity(batch.len());
            for addr in &batch {
                all.extend(attempt(mover, std::slice::from_ref(addr), target)?.0);
            }
            (all, false)
        } else {
            attempt(mover, &batch, target)?
        };
        let waiting = pending.len();
        for (&i, &s) in pending.iter().zip(&status) {
            after[i] = s;
        }
        pending.retain(|&i| after[i] == NOT_MOVED);
        if pending.len() < waiting {
            stalled = 0;
        } else {
            stalled += 1;
        }
        one_by_one = aborted && pending.len() == waiting;
    }
    Ok((before, after))
}

/// One `move_pages` call to move `addrs` to `target`, with the statuses the
/// kernel left unwritten filled in by locating those pages again. Returns
/// the statuses and whether the kernel stopped early.
fn attempt(
    mover: &mut impl PageMover,
    addrs: &[usize],
    target: Status,
) -> io::Result<(Vec<Status>, bool)> {
    let mut status = vec![STATUS_UNWRITTEN; addrs.len()];
    let not_moved = mover.move_to(addrs, target, &mut status)?;
    let unwritten: Vec<usize> = (0..status.len())
        .filter(|&k| status[k] == STATUS_UNWRITTEN)
        .collect();
    if not_moved == 0 && unwritten.is_empty() {
        return Ok((status, false));
    }
    let again: Vec<usize> = unwritten.iter().map(|&k| addrs[k]).collect();
    let mut found = vec![STATUS_UNWRITTEN; again.len()];
    mover.locate(&again, &mut found)?;
    for (&k, &now) in unwritten.iter().zip(&found) {
        status[k] = settle(now, target);
    }
    Ok((status, not_moved > 0))
}

/// The status of a page whose move the kernel did not report, from where
/// the page is now: moved when it is on `target`, the kernel's errno when it
/// has one (the page went away meanwhile), else not moved.
fn settle(now: Status, target: Status) -> Status {
    if now == target || (now < 0 && now != STATUS_UNWRITTEN) {
        now
    } else {
        NOT_MOVED
    }
}

/// Counts what happened to each of the `pages` pages (in region order) from
/// where they were (`before`) and what [`move_all`] made of them (`after`).
fn tally(pages: usize, before: &[Status], after: &[Status], target: Status) -> Migration {
    let mut m = Migration {
        pages,
        ..Migration::default()
    };
    for (i, (&b, &a)) in before.iter().zip(after).enumerate() {
        if b == target {
            m.already_there += 1;
        } else if a == target {
            m.moved += 1;
        } else if a == STATUS_UNWRITTEN {
            m.failed.push((i, PageStatus::Busy));
        } else if a < 0 {
            m.failed.push((i, PageStatus::from_errno(-a)));
        } else {
            m.still_elsewhere += 1;
        }
    }
    m
}

#[cfg(test)]
mod tests;
