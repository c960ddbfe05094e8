//! Small-block allocation: terroir's node-local slab pool
//! ([`NodeLocalAlloc`]) against the system allocator ([`System`], glibc
//! malloc on Linux), both called through [`GlobalAlloc`], in the same run.
//!
//! Patterns (each one criterion group; sizes 64, 128 and 256 bytes; one
//! iteration is a batch of 1,000 blocks, so time per block is the reported
//! time divided by 1,000):
//!
//! - `same_thread`: allocate 1,000 blocks (writing a word into each), then
//!   free them in allocation order, on one thread.
//! - `cross_thread`: producer/consumer. The benchmark thread allocates
//!   batches of 1,000 blocks (writing a word into each) and sends them over
//!   a bounded channel (4 batches) to a consumer thread, which frees them
//!   and sends the emptied vector back for reuse. An iteration is one batch;
//!   the clock stops when the consumer has freed every batch. This is the
//!   pattern of task frames allocated by one worker and freed by another.
//!
//! - `locate`: where the pages of a placed 512 KiB and 8 MiB vector are:
//!   a full page query (`move_pages` on every page), a sampled one (every
//!   16th page, Drebes §4.4), and `NodeVec::home` (what `Place::data` uses,
//!   no system call). Throughput is in pages.
//!
//! Run it with:
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench memory
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench --bench memory -- cross_thread   # one group
//! ```
//!
//! Sample sizes and times are set so that the whole run takes under a
//! minute on a 2-core machine.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use terroir::numa::Sample;
use terroir::pool::{NodeLocalAlloc, NodeVec};

const BATCH: usize = 1000;
const SIZES: [usize; 3] = [64, 128, 256];
/// Batches in flight between producer and consumer.
const QUEUE: usize = 4;

static SLAB: NodeLocalAlloc = NodeLocalAlloc;
static SYSTEM: System = System;

/// The allocators compared, by name.
fn allocators() -> [(&'static str, &'static (dyn GlobalAlloc + Sync)); 2] {
    [("slab", &SLAB), ("system", &SYSTEM)]
}

/// Allocates a block and writes its first word, as a user would.
#[inline(always)]
fn alloc_one(a: &dyn GlobalAlloc, layout: Layout) -> *mut u8 {
    // SAFETY: `layout` has a non-zero size.
    let p = unsafe { a.alloc(layout) };
    assert!(!p.is_null(), "allocation of {layout:?} failed");
    // SAFETY: the block holds at least 64 bytes, aligned to 8.
    unsafe { p.cast::<u64>().write(p as u64) };
    p
}

fn same_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("same_thread");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(BATCH as u64));
    for size in SIZES {
        let layout = Layout::from_size_align(size, 8).unwrap();
        for (name, a) in allocators() {
            let mut blocks: Vec<*mut u8> = Vec::with_capacity(BATCH);
            group.bench_with_input(BenchmarkId::new(name, size), &layout, |b, &layout| {
                b.iter(|| {
                    for _ in 0..BATCH {
                        blocks.push(alloc_one(a, layout));
                    }
                    for p in blocks.drain(..) {
                        // SAFETY: allocated just above with `layout`.
                        unsafe { a.dealloc(black_box(p), layout) };
                    }
                })
            });
        }
    }
    group.finish();
}

/// A thread freeing the batches it receives and sending the vectors back.
struct Consumer {
    to: Option<SyncSender<Vec<usize>>>,
    back: Receiver<Vec<usize>>,
    thread: Option<JoinHandle<()>>,
}

impl Consumer {
    fn new(a: &'static (dyn GlobalAlloc + Sync), layout: Layout) -> Consumer {
        let (to, from) = sync_channel::<Vec<usize>>(QUEUE);
        let (back_tx, back) = channel::<Vec<usize>>();
        let thread = thread::spawn(move || {
            for mut batch in from {
                for p in batch.drain(..) {
                    // SAFETY: the producer allocated it with `layout` and
                    // gave it up by sending it.
                    unsafe { a.dealloc(p as *mut u8, layout) };
                }
                if back_tx.send(batch).is_err() {
                    break;
                }
            }
        });
        Consumer {
            to: Some(to),
            back,
            thread: Some(thread),
        }
    }

    /// Produces `batches` batches; returns when all are freed.
    fn run(&self, a: &dyn GlobalAlloc, layout: Layout, batches: u64) -> Duration {
        let to = self.to.as_ref().expect("consumer running");
        let mut spare: Vec<Vec<usize>> = Vec::new();
        let start = Instant::now();
        let mut in_flight = 0;
        for _ in 0..batches {
            let mut batch = spare
                .pop()
                .or_else(|| self.back.try_recv().ok().inspect(|_| in_flight -= 1))
                .unwrap_or_else(|| Vec::with_capacity(BATCH));
            for _ in 0..BATCH {
                batch.push(alloc_one(a, layout) as usize);
            }
            to.send(batch).expect("consumer alive");
            in_flight += 1;
        }
        while in_flight > 0 {
            spare.push(self.back.recv().expect("consumer alive"));
            in_flight -= 1;
        }
        start.elapsed()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        drop(self.to.take());
        if let Some(t) = self.thread.take() {
            t.join().expect("consumer panicked");
        }
    }
}

fn cross_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("cross_thread");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(BATCH as u64));
    for size in SIZES {
        let layout = Layout::from_size_align(size, 8).unwrap();
        for (name, a) in allocators() {
            let consumer = Consumer::new(a, layout);
            group.bench_with_input(BenchmarkId::new(name, size), &layout, |b, &layout| {
                b.iter_custom(|iters| consumer.run(a, layout, iters))
            });
        }
    }
    group.finish();
}

/// Page-location queries on a placed vector: a full `move_pages` query,
/// a sampled one (every 16th page, the default), and the home-node lookup
/// a data place uses (no system call).
fn locate(c: &mut Criterion) {
    let node = terroir::numa::mems_allowed()
        .expect("mems_allowed")
        .iter()
        .next()
        .map(terroir::numa::NodeId::new)
        .expect("at least one allowed node");
    let mut group = c.benchmark_group("locate");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for kib in [512usize, 8 << 10] {
        let v = NodeVec::from_elem_on(1u8, kib << 10, node).expect("placed vector");
        let pages = v.locate(Sample::All).expect("full query").pages();
        group.throughput(Throughput::Elements(pages as u64));
        group.bench_with_input(BenchmarkId::new("full", format!("{kib}KiB")), &v, |b, v| {
            b.iter(|| black_box(v.locate(Sample::All).unwrap().majority()))
        });
        group.bench_with_input(
            BenchmarkId::new("every16", format!("{kib}KiB")),
            &v,
            |b, v| b.iter(|| black_box(v.locate(Sample::default()).unwrap().majority())),
        );
        group.bench_with_input(BenchmarkId::new("home", format!("{kib}KiB")), &v, |b, v| {
            b.iter(|| black_box(black_box(v).home()))
        });
    }
    group.finish();
}

criterion_group!(benches, same_thread, cross_thread, locate);
criterion_main!(benches);
