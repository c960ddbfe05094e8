//! `NodeLocalAlloc` as the process allocator: this whole test binary (the
//! test harness, its threads, the executor) allocates through the slab
//! pool. Heavy Vec/String/HashMap work, cross-thread frees, threads that
//! exit (their caches go back to the node), thread-locals freed during
//! thread exit, and the executor's own allocations.

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;

mod common;
use common::first_node;

use terroir::pool::{thread_node, NodeLocalAlloc, SlabPool};

#[global_allocator]
static ALLOC: NodeLocalAlloc = NodeLocalAlloc;

#[test]
fn the_process_allocates_from_the_slab_pool() {
    let b = Box::new([7u8; 100]);
    let node = thread_node();
    assert_eq!(node, first_node(), "this machine has one node");
    assert_eq!(SlabPool::global().node_of(b.as_ptr()), Some(node));
    let s = SlabPool::global().stats(node);
    assert!(s.reservations >= 1 && s.blocks_handed_out > 0, "{s:?}");
    let big = vec![1u64; 1 << 20]; // 8 MiB: a large block
    assert_eq!(SlabPool::global().node_of(big.as_ptr().cast()), None);
    assert_eq!(big.iter().sum::<u64>(), 1 << 20);
    assert!(SlabPool::global().stats(node).large_allocs >= 1);
}

#[test]
fn collections_heavy_work() {
    let mut map: HashMap<String, Vec<u32>> = HashMap::new();
    for i in 0..50_000u32 {
        map.entry(format!("key-{}", i % 5_000)).or_default().push(i);
    }
    assert_eq!(map.len(), 5_000);
    assert!(map.values().all(|v| v.len() == 10));
    let mut words: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    words.sort();
    words.dedup();
    assert_eq!(words.len(), 100_000);
    let joined = words.concat();
    assert!(joined.len() > 400_000);
    // Growth through every class and into large blocks.
    let mut v: Vec<u8> = Vec::new();
    for i in 0..3_000_000u32 {
        v.push(i as u8);
    }
    assert!(v.iter().enumerate().all(|(i, &b)| b == i as u8));
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(v, (0..10).collect::<Vec<u8>>());
}

#[test]
fn strings_freed_on_another_thread() {
    let (tx, rx) = mpsc::sync_channel::<Vec<String>>(4);
    let consumer = thread::spawn(move || {
        let mut total = 0usize;
        for batch in rx {
            total += batch.iter().map(String::len).sum::<usize>();
        }
        total
    });
    let mut expected = 0;
    for round in 0..200 {
        let batch: Vec<String> = (0..500).map(|i| format!("{round}:{i}")).collect();
        expected += batch.iter().map(String::len).sum::<usize>();
        tx.send(batch).unwrap();
    }
    drop(tx);
    assert_eq!(consumer.join().unwrap(), expected);
}

struct NoisyDrop(Vec<String>);

impl Drop for NoisyDrop {
    fn drop(&mut self) {
        // Allocates and frees while the thread is exiting.
        let s: String = self.0.concat();
        assert!(s.len() >= self.0.len());
    }
}

thread_local! {
    static LATE: std::cell::RefCell<Option<NoisyDrop>> = const { std::cell::RefCell::new(None) };
}

#[test]
fn threads_that_exit_give_their_memory_back() {
    let node = first_node();
    let before = SlabPool::global().stats(node);
    for round in 0..100 {
        thread::spawn(move || {
            // About 2.6 MB of 128-byte blocks, all freed before exit (the
            // thread-local at exit), cached by this thread meanwhile.
            let v: Vec<Vec<u64>> = (0..20_000).map(|i| vec![i as u64; 16]).collect();
            let sum: u64 = v.iter().map(|x| x[0]).sum();
            assert_eq!(sum, 199_990_000);
            LATE.with(|l| {
                *l.borrow_mut() = Some(NoisyDrop(
                    (0..100).map(|i| format!("{round}-{i}")).collect(),
                ))
            });
            drop(v);
        })
        .join()
        .unwrap();
    }
    let after = SlabPool::global().stats(node);
    // Without reuse the 100 threads would need about 130 reservations; with
    // it, two. The other tests of this binary, running meanwhile, need
    // fewer than 20.
    assert!(
        after.reservations - before.reservations <= 24,
        "before {before:?}, after {after:?}"
    );
    assert!(after.blocks_returned > before.blocks_returned);
}

#[test]
fn many_threads_at_once() {
    let handles: Vec<_> = (0..16)
        .map(|t| {
            thread::spawn(move || {
                let mut m: HashMap<u64, String> = HashMap::new();
                for i in 0..20_000u64 {
                    m.insert(i, format!("{t}/{i}"));
                    if i % 3 == 0 {
                        m.remove(&(i / 2));
                    }
                }
                m.len()
            })
        })
        .collect();
    let lens: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(lens.iter().all(|&l| l == lens[0]));
}

#[test]
fn the_executor_runs_on_it() {
    fn build(depth: u32) -> Vec<Vec<u64>> {
        if depth == 0 {
            return vec![vec![1; 3]];
        }
        let (mut a, b) = terroir::join(|| build(depth - 1), || build(depth - 1));
        a.extend(b);
        a
    }
    let pool = terroir::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let v = pool.install(|| build(14));
    assert_eq!(v.len(), 1 << 14);
    assert_eq!(v.iter().map(|b| b[2]).sum::<u64>(), 1 << 14);
    drop(pool);
}
