//! The status handling of [`migrate`](super::migrate) against a kernel
//! played by [`Fake`], which answers `move_pages` as Linux 4.17+'s
//! `do_pages_move` does, including the cases this machine cannot produce
//! (one node; no page a test can pin reliably).

use super::*;

const PAGE: usize = 4096;
const BASE: usize = 0x7f00_0000_0000;

/// A page of the fake process.
#[derive(Clone, Copy, Debug)]
struct Page {
    /// Its node, or a negative errno (`-ENOENT`: never touched).
    node: Status,
    /// Calls left in which moving it fails (locked, under writeback, a
    /// reference the kernel cannot drop): `u32::MAX` for a pinned page.
    stuck_for: u32,
    /// Calls left in which isolating it fails (`-EBUSY` in its status).
    busy_for: u32,
}

/// `move_pages` on pages `BASE + i * PAGE`, answering as `do_pages_move`:
/// pages are queued in a batch until one cannot be queued (already on the
/// target, or an error), whose status is written before the batch is moved;
/// a batch with a page that would not move ends the call, returning the
/// pages not moved plus the pages after it, and leaves the statuses of that
/// batch and of every later page unwritten.
struct Fake {
    pages: Vec<Page>,
    move_calls: usize,
}

impl Fake {
    fn new(nodes: &[Status]) -> Fake {
        Fake {
            pages: nodes
                .iter()
                .map(|&node| Page {
                    node,
                    stuck_for: 0,
                    busy_for: 0,
                })
                .collect(),
            move_calls: 0,
        }
    }

    fn addrs(&self) -> Vec<usize> {
        (0..self.pages.len()).map(|i| BASE + i * PAGE).collect()
    }

    fn index(addr: usize) -> usize {
        (addr - BASE) / PAGE
    }

    /// Moves the queued pages; `Err(not moved)` if any would not.
    fn flush(&mut self, queued: &mut Vec<usize>, target: Status) -> Result<(), usize> {
        let mut failed = 0;
        for i in queued.drain(..) {
            let p = &mut self.pages[i];
            if p.stuck_for > 0 {
                if p.stuck_for != u32::MAX {
                    p.stuck_for -= 1;
                }
                failed += 1;
            } else {
                self.pages[i].node = target;
            }
        }
        if failed > 0 {
            Err(failed)
        } else {
            Ok(())
        }
    }
}

impl PageMover for Fake {
    fn locate(&mut self, pages: &[usize], status: &mut [Status]) -> io::Result<()> {
        for (s, &a) in status.iter_mut().zip(pages) {
            *s = self.pages[Fake::index(a)].node;
        }
        Ok(())
    }

    fn move_to(
        &mut self,
        pages: &[usize],
        node: Status,
        status: &mut [Status],
    ) -> io::Result<usize> {
        self.move_calls += 1;
        let mut queued: Vec<usize> = Vec::new(); // page indexes
        let mut slots: Vec<usize> = Vec::new(); // their positions in `status`
        for (k, &a) in pages.iter().enumerate() {
            let i = Fake::index(a);
            let p = &mut self.pages[i];
            let err = if p.node < 0 {
                p.node
            } else if p.node == node {
                0
            } else if p.busy_for > 0 {
                p.busy_for -= 1;
                -libc::EBUSY
            } else {
                queued.push(i);
                slots.push(k);
                continue;
            };
            status[k] = if err == 0 { node } else { err };
            if let Err(failed) = self.flush(&mut queued, node) {
                return Ok(failed + pages.len() - k - 1);
            }
            for &s in &slots {
                status[s] = node;
            }
            slots.clear();
        }
        if let Err(failed) = self.flush(&mut queued, node) {
            return Ok(failed);
        }
        for &s in &slots {
            status[s] = node;
        }
        Ok(0)
    }
}

fn run(fake: &mut Fake, target: Status) -> Migration {
    let addrs = fake.addrs();
    let (before, after) = move_all(fake, &addrs, target).unwrap();
    tally(addrs.len(), &before, &after, target)
}

/// The case the sentinel is for: moving to node 0, a pinned page makes the
/// kernel return 1 and leave every status unwritten; read as 0, every page
/// looked moved to node 0.
#[test]
fn a_page_that_will_not_move_to_node_0_is_failed_not_moved() {
    let mut fake = Fake::new(&[1; 8]);
    fake.pages[2].stuck_for = u32::MAX;
    let m = run(&mut fake, 0);
    assert_eq!(
        (
            m.moved(),
            m.already_there(),
            m.failed(),
            m.still_elsewhere()
        ),
        (7, 0, &[(2, PageStatus::Busy)][..], 0),
        "{m:?}"
    );
    assert!(!m.complete());
    assert_eq!(fake.pages[2].node, 1, "the pinned page stayed");
    assert!(fake
        .pages
        .iter()
        .enumerate()
        .all(|(i, p)| i == 2 || p.node == 0));
}

#[test]
fn the_same_to_another_node() {
    let mut fake = Fake::new(&[0, 0, 0, 0]);
    fake.pages[3].stuck_for = u32::MAX;
    let m = run(&mut fake, 1);
    assert_eq!((m.moved(), m.failed()), (3, &[(3, PageStatus::Busy)][..]));
}

/// A page whose isolation fails twice (`-EBUSY` in its status) moves on a
/// retry: the retry used to look for `-EBUSY` only in statuses that the
/// kernel leaves unwritten in exactly the calls that have busy pages.
#[test]
fn a_busy_page_moves_on_a_retry() {
    let mut fake = Fake::new(&[1, 1, 1, 1, 1]);
    fake.pages[1].busy_for = 2;
    let m = run(&mut fake, 0);
    assert_eq!((m.moved(), m.failed()), (5, &[][..]), "{m:?}");
    assert!(m.complete());
    assert_eq!(fake.move_calls, 3);
    // Busy for good: reported after the retries, and nothing else fails.
    let mut fake = Fake::new(&[1, 1, 1]);
    fake.pages[0].busy_for = 100;
    let m = run(&mut fake, 0);
    assert_eq!((m.moved(), m.failed()), (2, &[(0, PageStatus::Busy)][..]));
    assert_eq!(
        fake.move_calls,
        1 + STALLED_ROUNDS,
        "the first call moved two"
    );
}

/// A page locked for a moment (under writeback, ...) fails its move with
/// the rest of its batch moved and, again, no status written: it used to be
/// reported where the status array said (never retried: no `-EBUSY` was
/// ever written); it moves on the retry now.
#[test]
fn a_page_locked_for_a_moment_moves_on_a_retry() {
    for target in [0, 1] {
        let mut fake = Fake::new(&[2, 2, 2, 2]);
        fake.pages[1].stuck_for = 1;
        let m = run(&mut fake, target);
        assert_eq!((m.moved(), m.failed()), (4, &[][..]), "to {target}: {m:?}");
        assert!(m.complete());
        assert!(fake.pages.iter().all(|p| p.node == target));
        assert_eq!(fake.move_calls, 2);
    }
}

/// The kernel stops at a failing batch: pages after it were never tried.
/// Here page 2 (already there) ends the first batch, whose pinned page 0
/// stops the call before pages 3..6.
#[test]
fn pages_after_a_failing_batch_are_tried_again() {
    let mut fake = Fake::new(&[1, 1, 0, 1, 1, 1]);
    fake.pages[0].stuck_for = u32::MAX;
    let m = run(&mut fake, 0);
    assert_eq!(
        (m.moved(), m.already_there(), m.failed()),
        (4, 1, &[(0, PageStatus::Busy)][..]),
        "{m:?}"
    );
    assert!(fake.pages[3..].iter().all(|p| p.node == 0));
}

/// A page that stays busy ahead of a pinned one splits every call at the
/// same place: no round makes progress, so each page gets a call of its own.
#[test]
fn a_pinned_page_ahead_of_a_busy_one_cannot_starve_the_rest() {
    let mut fake = Fake::new(&[1, 1, 1, 1, 1, 1]);
    fake.pages[0].stuck_for = u32::MAX;
    fake.pages[1].busy_for = 1000;
    let m = run(&mut fake, 0);
    assert_eq!(
        (m.moved(), m.failed()),
        (4, &[(0, PageStatus::Busy), (1, PageStatus::Busy)][..]),
        "{m:?}"
    );
    assert!(fake.pages[2..].iter().all(|p| p.node == 0));
}

#[test]
fn untouched_pages_are_reported_with_the_kernels_errno() {
    let mut fake = Fake::new(&[1, -libc::ENOENT, 0, -libc::EFAULT, 1]);
    let m = run(&mut fake, 0);
    assert_eq!(
        (m.moved(), m.already_there(), m.failed()),
        (
            2,
            1,
            &[(1, PageStatus::NotPresent), (3, PageStatus::NotMovable)][..]
        )
    );
}

#[test]
fn settle_reads_the_node_a_page_is_on_now() {
    assert_eq!(settle(0, 0), 0, "on the target: moved");
    assert_eq!(settle(1, 0), NOT_MOVED, "elsewhere: not moved");
    assert_eq!(settle(-libc::ENOENT, 0), -libc::ENOENT);
    assert_eq!(
        settle(STATUS_UNWRITTEN, 0),
        NOT_MOVED,
        "no answer: not moved"
    );
}

#[test]
fn tally_counts_each_page_once() {
    let u = STATUS_UNWRITTEN;
    let before = [0, 1, 1, 1, -libc::ENOENT, 1, 1];
    let after = [0, 0, -libc::EBUSY, 2, -libc::ENOENT, u, -libc::EACCES];
    let m = tally(7, &before, &after, 0);
    assert_eq!((m.pages(), m.already_there(), m.moved()), (7, 1, 1));
    assert_eq!(m.still_elsewhere(), 1, "status 2 without an error");
    assert_eq!(
        m.failed(),
        &[
            (2, PageStatus::Busy),
            (4, PageStatus::NotPresent),
            (5, PageStatus::Busy),
            (6, PageStatus::Shared)
        ]
    );
}
