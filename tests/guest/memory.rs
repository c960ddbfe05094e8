//! Multi-node memory tests (included by `tests/numa_guest.rs`): binding,
//! page location, migration, interleaving, slab memory of pinned workers
//! and placed tasks, on the guest's real (emulated) nodes.

use std::alloc::Layout;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use terroir::numa::{
    bind_memory, current_cpu_and_node, memory_policy, BindFlags, MemPolicy, NodeId, NodeSet,
    NumaError, Sample,
};
use terroir::pool::{NodeVec, Placement, SlabPool};
use terroir::{Place, Policy, ThreadPoolBuilder};

use super::guest;

const MIB: usize = 1 << 20;

fn node(i: usize) -> NodeId {
    NodeId::new(i as u32)
}

fn all_nodes(n: usize) -> NodeSet {
    (0..n as u32).collect()
}

#[test]
fn a_node_vec_has_every_page_on_its_node() {
    let Some(layout) = guest() else { return };
    for k in 0..layout.nodes() {
        let v = NodeVec::from_elem_on(1u8, 4 * MIB, node(k)).unwrap();
        let loc = v.locate(Sample::All).unwrap();
        assert_eq!(
            loc.on_node(node(k)),
            loc.pages(),
            "NodeVec on node {k}: pages per node {:?}",
            loc.per_node()
        );
        assert_eq!(loc.majority(), Some(node(k)));
        assert_eq!(
            memory_policy(&v[..]).unwrap(),
            MemPolicy::bind_to(node(k)),
            "the policy of a NodeVec on node {k}"
        );
    }
}

#[test]
fn migration_moves_every_page_and_locate_agrees() {
    let Some(_layout) = guest() else { return };
    let mut v = NodeVec::from_elem_on(7u64, 4 * MIB / 8, node(0)).unwrap();
    let pages = v.locate(Sample::All).unwrap().pages();
    let m = v.migrate_to(node(1)).unwrap();
    assert_eq!(
        (m.pages(), m.moved(), m.complete()),
        (pages, pages, true),
        "migrating node 0 -> 1: {m:?}"
    );
    let loc = v.locate(Sample::All).unwrap();
    assert_eq!(
        loc.on_node(node(1)),
        pages,
        "after migration: {:?}",
        loc.per_node()
    );
    assert!(v.iter().all(|&x| x == 7), "the data survived the move");
    let again = v.migrate_to(node(1)).unwrap();
    assert_eq!(again.already_there(), pages, "second migration: {again:?}");

    // A plain Vec, first touched here, moved with the free function.
    let plain = vec![3u8; 2 * MIB];
    let m = terroir::numa::migrate(&plain, node(1)).unwrap();
    assert!(m.complete(), "{m:?}");
    let loc = terroir::numa::locate(&plain, Sample::All).unwrap();
    assert_eq!(loc.majority(), Some(node(1)), "{:?}", loc.per_node());
}

#[test]
fn binding_to_a_missing_node_is_a_typed_error_and_changes_nothing() {
    let Some(layout) = guest() else { return };
    let v = NodeVec::from_elem_on(1u8, MIB, node(0)).unwrap();
    let missing = node(layout.nodes());
    let err = bind_memory(&v[..], &MemPolicy::bind_to(missing), BindFlags::MOVE).unwrap_err();
    assert!(
        matches!(err, NumaError::NodeNotAllowed { node, .. } if node == missing),
        "binding to {missing}: {err:?}"
    );
    assert!(err.to_string().contains(&missing.to_string()), "{err}");
    assert_eq!(memory_policy(&v[..]).unwrap(), MemPolicy::bind_to(node(0)));
    let m = terroir::numa::migrate(&v[..], missing).unwrap_err();
    assert!(matches!(m, NumaError::NodeNotAllowed { .. }), "{m:?}");
}

#[test]
fn interleaved_and_blocked_vectors_spread_their_pages() {
    let Some(layout) = guest() else { return };
    let n = layout.nodes();
    let v: NodeVec<u8> =
        NodeVec::from_elem_on(0u8, 8 * MIB, Placement::Interleave(all_nodes(n))).unwrap();
    let loc = v.locate(Sample::All).unwrap();
    // Transparent huge pages are interleaved whole: each node's share is
    // even to within one 2 MiB page.
    let huge = 2 * MIB / terroir::numa::page_size();
    for k in 0..n {
        let got = loc.on_node(node(k));
        let want = loc.pages() / n;
        assert!(
            got.abs_diff(want) <= huge,
            "interleaved: node {k} has {got} pages, expected {want} ± {huge}: {:?}",
            loc.per_node()
        );
    }
    let b: NodeVec<u8> =
        NodeVec::from_elem_on(0u8, 8 * MIB, Placement::Blocked(all_nodes(n))).unwrap();
    let page = terroir::numa::page_size();
    for i in (0..b.len()).step_by(MIB / 2) {
        let want = b
            .node_of(i)
            .expect("a blocked vector knows each element's node");
        let at = terroir::numa::locate(&b[i..i + 1], Sample::All).unwrap();
        assert_eq!(at.majority(), Some(want), "element {i} (page {})", i / page);
    }
    // Sampling agrees with the full query on the majority.
    let full = b.locate(Sample::All).unwrap().majority();
    let sampled = b.locate(Sample::default()).unwrap().majority();
    assert_eq!(full, sampled);
}

#[test]
fn pinned_workers_allocate_slab_memory_on_their_node() {
    let Some(layout) = guest() else { return };
    let pool = ThreadPoolBuilder::new().build().unwrap();
    let n = pool.current_num_threads();
    assert_eq!(n, layout.all_cpus().count());
    let started = AtomicUsize::new(0);
    let seen = Mutex::new(Vec::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    pool.scope(|s| {
        for _ in 0..n {
            s.spawn(|_| {
                started.fetch_add(1, Ordering::SeqCst);
                while started.load(Ordering::SeqCst) < n && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let w = terroir::current_thread_index().unwrap();
                let want = pool.topology().nodes()[pool.worker_node_index(w).unwrap()].id();
                let l = Layout::from_size_align(4096, 4096).unwrap();
                let p = SlabPool::global().alloc(l).unwrap();
                // SAFETY: a fresh 4 KiB block we own.
                let block = unsafe {
                    p.as_ptr().write_bytes(1, 4096);
                    std::slice::from_raw_parts(p.as_ptr(), 4096)
                };
                let home = SlabPool::global().node_of(p.as_ptr());
                let at = terroir::numa::locate(block, Sample::All)
                    .unwrap()
                    .majority();
                // SAFETY: allocated above with this layout, not used after.
                unsafe { SlabPool::global().dealloc(p, l) };
                seen.lock()
                    .unwrap()
                    .push((w, want, terroir::pool::thread_node(), home, at));
            });
        }
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), n);
    for (w, want, thread_node, home, at) in seen {
        assert_eq!(
            (thread_node, home, at),
            (want, Some(want), Some(want)),
            "worker {w} on {want}: (thread_node, slab home, page location)"
        );
    }
}

#[test]
fn placed_tasks_run_on_their_node() {
    let Some(layout) = guest() else { return };
    let strict = ThreadPoolBuilder::new()
        .policy(Policy::StrictLocality)
        .build()
        .unwrap();
    for k in 0..layout.nodes() {
        let place = strict.node(k).unwrap();
        for _ in 0..10 {
            let (tx, rx) = std::sync::mpsc::channel();
            strict.spawn_on(&place, move || {
                tx.send(current_cpu_and_node().unwrap()).unwrap()
            });
            let (cpu, got) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
            assert_eq!(
                got,
                node(k),
                "strict task for node {k} ran on cpu {cpu} ({got})"
            );
        }
    }
    // Hints with a data place, one at a time: the node is free each time.
    let hints = ThreadPoolBuilder::new()
        .policy(Policy::Locality)
        .build()
        .unwrap();
    let data = NodeVec::from_elem_on(1u64, MIB / 8, node(layout.nodes() - 1)).unwrap();
    let place = Place::data(&data);
    let mut on_node = 0;
    for _ in 0..100 {
        let (tx, rx) = std::sync::mpsc::channel();
        hints.spawn_on(&place, move || {
            tx.send(current_cpu_and_node().unwrap().1).unwrap()
        });
        on_node +=
            usize::from(rx.recv_timeout(Duration::from_secs(30)).unwrap() == data.home().unwrap());
    }
    assert!(
        on_node >= 90,
        "{on_node} of 100 data-placed hints ran on the data's node"
    );
}
