//! Sequences of slab pool and `NodeVec` operations, checked against a
//! model: blocks of random sizes and alignments allocated, reallocated and
//! freed by three threads (each op runs on the thread it names, so blocks
//! cross threads and caches), and `NodeVec`s of small and of larger-than-a-
//! page elements pushed, extended, truncated and cleared beside a `Vec`.
//!
//! The threads live as long as the process (threads started and ended for
//! each input make LeakSanitizer report the thread-locals of the standard
//! library that their exit frees late), so blocks stay in their caches
//! from one input to the next, as they would in a program.
//!
//! Checked: every block is aligned, within the slabs on the thread's node
//! when it is small, never overlaps a live block, and keeps its contents
//! until freed (also across `realloc`); a `NodeVec` always equals its `Vec`
//! and drops each element once.

#![no_main]

use std::alloc::{GlobalAlloc, Layout};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::thread;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use terroir::numa::{mems_allowed, NodeId};
use terroir::pool::{flush_thread_cache, thread_node, NodeLocalAlloc, NodeVec, SlabPool};

const THREADS: usize = 3;

#[derive(Arbitrary, Debug)]
enum Op {
    /// `size` is spread over 0..256 KiB, `align` is `1 << (align % 18)`.
    Alloc {
        thread: u8,
        size: u32,
        align: u8,
        zeroed: bool,
    },
    Free {
        thread: u8,
        which: u16,
    },
    Realloc {
        thread: u8,
        which: u16,
        size: u32,
    },
    /// `SlabPool::alloc_on` the first node, from any thread.
    AllocOn {
        thread: u8,
        size: u16,
    },
    Flush {
        thread: u8,
    },
    Push {
        big: bool,
        value: u8,
    },
    Extend {
        big: bool,
        n: u8,
        value: u8,
    },
    Truncate {
        big: bool,
        len: u8,
    },
    Pop {
        big: bool,
    },
    Clear {
        big: bool,
    },
}

/// A live block: address (as a pointer), layout, fill byte.
#[derive(Clone, Copy, Debug)]
struct Block(*mut u8, Layout, u8);

// SAFETY: a block may be used and freed by any thread; one op at a time
// touches it.
unsafe impl Send for Block {}

fn spread(size: u32) -> usize {
    // Mostly small, sometimes a few slab classes up, rarely large.
    match size % 16 {
        0..=9 => (size >> 4) as usize % 257,
        10..=14 => (size >> 4) as usize % 65_537,
        _ => (size >> 4) as usize % (256 << 10),
    }
}

/// What a thread is asked to do.
enum Job {
    Alloc(Layout, bool, u8),
    AllocOn(NodeId, Layout, u8),
    Free(Block),
    Realloc(Block, usize, u8),
    Flush,
}

/// The worker threads: where to send jobs, and where they answer.
struct Workers {
    jobs: Vec<mpsc::Sender<Job>>,
    done: Mutex<mpsc::Receiver<Option<Block>>>,
}

fn workers() -> &'static Workers {
    static WORKERS: OnceLock<Workers> = OnceLock::new();
    WORKERS.get_or_init(|| {
        let (done_tx, done) = mpsc::channel();
        let jobs = (0..THREADS)
            .map(|_| {
                let (tx, rx) = mpsc::channel();
                let done_tx = done_tx.clone();
                thread::spawn(move || worker(rx, done_tx));
                tx
            })
            .collect();
        Workers {
            jobs,
            done: Mutex::new(done),
        }
    })
}

/// Runs `job` on worker `thread` and waits for its answer.
fn run(thread: u8, job: Job) -> Option<Block> {
    let w = workers();
    let done = w.done.lock().unwrap();
    w.jobs[thread as usize % THREADS].send(job).unwrap();
    done.recv().expect("a worker failed a check")
}

/// Records a new live block; it must not overlap another.
fn insert(ranges: &mut BTreeMap<usize, usize>, b: Block) {
    let start = b.0.addr();
    let end = start + b.1.size().max(1);
    if let Some((&s, &e)) = ranges.range(..end).next_back() {
        assert!(e <= start, "{start:#x}..{end:#x} overlaps {s:#x}..{e:#x}");
    }
    ranges.insert(start, end);
}

/// Runs jobs on this thread; answers with the new block (if any).
fn worker(jobs: mpsc::Receiver<Job>, done: mpsc::Sender<Option<Block>>) {
    let a = NodeLocalAlloc;
    for job in jobs {
        let out = match job {
            Job::Alloc(l, zeroed, fill) => {
                // SAFETY: a valid layout of non-zero size or not: the
                // allocator accepts both.
                let p = unsafe {
                    if zeroed {
                        a.alloc_zeroed(l)
                    } else {
                        a.alloc(l)
                    }
                };
                assert!(!p.is_null(), "alloc {l:?}");
                if zeroed {
                    // SAFETY: `l.size()` bytes at `p` are ours.
                    let s = unsafe { std::slice::from_raw_parts(p, l.size()) };
                    assert!(s.iter().all(|&b| b == 0), "alloc_zeroed {l:?}");
                }
                check_new(p, l);
                Some(fill_block(p, l, fill))
            }
            Job::AllocOn(node, l, fill) => {
                let p = SlabPool::global()
                    .alloc_on(node, l)
                    .expect("alloc_on")
                    .as_ptr();
                check_new(p, l);
                assert_eq!(SlabPool::global().node_of(p), Some(node));
                Some(fill_block(p, l, fill))
            }
            Job::Free(b) => {
                check_intact(b, b.1.size());
                // SAFETY: allocated with this layout, dropped from the model.
                unsafe { a.dealloc(b.0, b.1) };
                None
            }
            Job::Realloc(b, size, fill) => {
                check_intact(b, b.1.size());
                // SAFETY: allocated with `b.1`; the new layout is valid (the
                // size is at most 256 KiB, the alignment at most 128 KiB).
                let q = unsafe { a.realloc(b.0, b.1, size) };
                assert!(!q.is_null(), "realloc {:?} to {size}", b.1);
                let l = Layout::from_size_align(size, b.1.align()).unwrap();
                check_new(q, l);
                check_intact(Block(q, l, b.2), b.1.size().min(size));
                Some(fill_block(q, l, fill))
            }
            Job::Flush => {
                flush_thread_cache();
                None
            }
        };
        done.send(out).unwrap();
    }
}

fn check_new(p: *mut u8, l: Layout) {
    assert_eq!(p.addr() % l.align(), 0, "{p:?} for {l:?}");
    if SlabPool::block_size(l).is_some() {
        assert_eq!(SlabPool::global().node_of(p), Some(thread_node()), "{p:?}");
    }
}

fn fill_block(p: *mut u8, l: Layout, fill: u8) -> Block {
    // SAFETY: the block holds at least `l.size()` bytes and is ours.
    unsafe { p.write_bytes(fill, l.size()) };
    Block(p, l, fill)
}

fn check_intact(b: Block, len: usize) {
    // SAFETY: the block holds at least `len` bytes and is ours.
    let s = unsafe { std::slice::from_raw_parts(b.0, len) };
    assert!(
        s.iter().all(|&x| x == b.2),
        "block {:?} {:?} changed",
        b.0,
        b.1
    );
}

static MADE: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);

/// An element larger than a page, which counts how many are made and
/// dropped.
#[derive(Debug, PartialEq)]
struct Big([u8; 4500]);

impl Big {
    fn new(value: u8) -> Big {
        MADE.fetch_add(1, Ordering::Relaxed);
        Big([value; 4500])
    }
}

impl Clone for Big {
    fn clone(&self) -> Big {
        MADE.fetch_add(1, Ordering::Relaxed);
        Big(self.0)
    }
}

impl Drop for Big {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// A NodeVec and its model.
struct Pair<T> {
    v: NodeVec<T>,
    m: Vec<T>,
}

impl<T: Clone + PartialEq + std::fmt::Debug> Pair<T> {
    fn new(node: NodeId) -> Self {
        Pair {
            v: NodeVec::with_capacity_on(0, node).unwrap(),
            m: Vec::new(),
        }
    }

    fn push(&mut self, x: T) {
        self.v.try_push(x.clone()).unwrap();
        self.m.push(x);
    }

    /// Appends `n` copies through the spare capacity, after pushes that
    /// grow it enough (popped again).
    fn extend(&mut self, n: usize, x: T) {
        let mut pushed = 0;
        while self.v.capacity() - self.v.len() < n {
            self.v.try_push(x.clone()).unwrap();
            pushed += 1;
        }
        for _ in 0..pushed {
            let _ = self.v.pop();
        }
        let spare = self.v.spare_capacity_mut();
        for slot in &mut spare[..n] {
            slot.write(x.clone());
        }
        // SAFETY: `n` more elements are initialised, within the capacity.
        unsafe { self.v.set_len(self.v.len() + n) };
        self.m.extend(std::iter::repeat_n(x, n));
    }

    fn truncate(&mut self, len: usize) {
        while self.v.len() > len {
            assert_eq!(self.v.pop(), self.m.pop());
        }
    }

    fn check(&self) {
        assert_eq!(&self.v[..], &self.m[..]);
        assert!(self.v.capacity() >= self.v.len());
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let node = NodeId::new(mems_allowed().unwrap().iter().next().unwrap());
    let mut live: Vec<Block> = Vec::new();
    let mut ranges: BTreeMap<usize, usize> = BTreeMap::new();
    let mut small = Pair::<u32>::new(node);
    let (made, dropped) = (
        MADE.load(Ordering::Relaxed),
        DROPPED.load(Ordering::Relaxed),
    );
    let mut big = Pair::<Big>::new(node);
    for (i, op) in ops.into_iter().enumerate() {
        let fill = i as u8 | 1;
        match op {
            Op::Alloc {
                thread,
                size,
                align,
                zeroed,
            } => {
                let l = Layout::from_size_align(spread(size), 1 << (align % 18)).unwrap();
                let b = run(thread, Job::Alloc(l, zeroed, fill)).unwrap();
                insert(&mut ranges, b);
                live.push(b);
            }
            Op::AllocOn { thread, size } => {
                let l = Layout::from_size_align(size as usize, 8).unwrap();
                let b = run(thread, Job::AllocOn(node, l, fill)).unwrap();
                insert(&mut ranges, b);
                live.push(b);
            }
            Op::Free { thread, which } if !live.is_empty() => {
                let b = live.swap_remove(which as usize % live.len());
                ranges.remove(&b.0.addr());
                run(thread, Job::Free(b));
            }
            Op::Realloc {
                thread,
                which,
                size,
            } if !live.is_empty() => {
                let k = which as usize % live.len();
                let b = live[k];
                ranges.remove(&b.0.addr());
                let nb = run(thread, Job::Realloc(b, spread(size), fill)).unwrap();
                insert(&mut ranges, nb);
                live[k] = nb;
            }
            Op::Flush { thread } => {
                run(thread, Job::Flush);
            }
            Op::Push { big: false, value } => small.push(u32::from(value)),
            Op::Push { big: true, value } => big.push(Big::new(value)),
            Op::Extend {
                big: false,
                n,
                value,
            } => small.extend(n as usize, u32::from(value)),
            Op::Extend {
                big: true,
                n,
                value,
            } => big.extend(n as usize % 8, Big::new(value)),
            Op::Truncate { big: false, len } => small.truncate(len as usize),
            Op::Truncate { big: true, len } => big.truncate(len as usize),
            Op::Pop { big: false } => assert_eq!(small.v.pop(), small.m.pop()),
            Op::Pop { big: true } => assert_eq!(big.v.pop(), big.m.pop()),
            Op::Clear { big: false } => {
                small.v.clear();
                small.m.clear();
            }
            Op::Clear { big: true } => {
                big.v.clear();
                big.m.clear();
            }
            _ => {}
        }
        small.check();
        big.check();
    }
    for (k, b) in live.drain(..).enumerate() {
        run(k as u8, Job::Free(b));
    }
    drop(big);
    // Every Big made was dropped, once.
    assert_eq!(
        MADE.load(Ordering::Relaxed) - made,
        DROPPED.load(Ordering::Relaxed) - dropped,
        "Bigs made and dropped"
    );
});
