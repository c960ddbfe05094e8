//! The NUMA memory layer on this machine: bad input gives typed errors and
//! leaves the region as it was; location queries (full and sampled) and
//! placed containers agree. Multi-node behaviour (binding to node 1,
//! migrating between nodes) is tested in the QEMU guest
//! (`tests/numa_guest.rs`, run by `tests/vm/run.sh`).

use terroir::numa::{
    bind_memory, locate, memory_policy, mems_allowed, migrate, page_size, set_thread_policy,
    thread_policy, BindFlags, MemPolicy, NodeId, NodeSet, NumaError, Sample,
};
use terroir::pool::{NodeBox, NodeVec, Placement};

mod common;
use common::first_node;

/// A node number this process may not use.
fn bad_node() -> NodeId {
    let allowed = mems_allowed().unwrap();
    NodeId::new((0..).find(|n| !allowed.contains(*n)).unwrap())
}

/// Page-aligned, page-sized buffer of fresh pages (its own mapping), so
/// that policy changes cannot leak into other tests' data.
fn fresh_pages(pages: usize) -> NodeVec<u8> {
    let mut v =
        NodeVec::with_capacity_on(pages * page_size(), Placement::Node(first_node())).unwrap();
    for _ in 0..pages * page_size() {
        v.try_push(1).unwrap();
    }
    v
}

#[test]
fn invalid_nodes_are_named_and_change_nothing() {
    let bad = bad_node();
    let data = fresh_pages(4);
    let before = memory_policy(&data).unwrap();
    for policy in [
        MemPolicy::bind_to(bad),
        MemPolicy::Preferred(bad),
        MemPolicy::Interleave(
            [first_node().os_index(), bad.os_index()]
                .into_iter()
                .collect(),
        ),
    ] {
        let err = bind_memory(&data, &policy, BindFlags::MOVE).unwrap_err();
        match &err {
            NumaError::NodeNotAllowed { node, allowed } => {
                assert_eq!(*node, bad);
                assert_eq!(*allowed, mems_allowed().unwrap());
            }
            other => panic!("{policy}: {other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains(&bad.to_string()) && msg.contains("allowed"),
            "{msg}"
        );
        assert_eq!(
            memory_policy(&data).unwrap(),
            before,
            "{policy}: region unchanged"
        );
    }
    assert!(matches!(
        migrate(&data, bad),
        Err(NumaError::NodeNotAllowed { .. })
    ));
    assert!(matches!(
        NodeVec::<u8>::with_capacity_on(1, bad),
        Err(NumaError::NodeNotAllowed { .. })
    ));
    assert!(matches!(
        NodeBox::new_on(1u8, bad),
        Err(NumaError::NodeNotAllowed { .. })
    ));
    std::thread::spawn(move || {
        let before = thread_policy().unwrap();
        assert!(matches!(
            set_thread_policy(&MemPolicy::bind_to(bad)),
            Err(NumaError::NodeNotAllowed { .. })
        ));
        assert_eq!(thread_policy().unwrap(), before);
    })
    .join()
    .unwrap();
    assert!(matches!(
        bind_memory(&data, &MemPolicy::Bind(NodeSet::new()), BindFlags::NONE),
        Err(NumaError::EmptyNodeSet { policy: "bind" })
    ));
}

#[test]
fn zero_length_regions() {
    let v: Vec<u32> = Vec::new();
    assert!(matches!(
        bind_memory(&v, &MemPolicy::Local, BindFlags::NONE),
        Err(NumaError::EmptyRegion { .. })
    ));
    assert!(matches!(
        migrate(&v, first_node()),
        Err(NumaError::EmptyRegion { .. })
    ));
    assert!(matches!(
        memory_policy(&v),
        Err(NumaError::EmptyRegion { .. })
    ));
    let loc = locate(&v, Sample::All).unwrap();
    assert_eq!((loc.pages(), loc.majority()), (0, None));
    // Zero-sized elements are zero bytes too.
    let units = vec![(); 1000];
    assert!(matches!(
        bind_memory(&units, &MemPolicy::Local, BindFlags::NONE),
        Err(NumaError::EmptyRegion { .. })
    ));
}

/// An unaligned slice inside a page binds that whole page: documented
/// widening, visible on a neighbouring byte of the same page.
#[test]
fn unaligned_regions_widen_to_whole_pages() {
    let ps = page_size();
    let data = fresh_pages(3);
    let middle = &data[ps + 100..ps + 200];
    let node = first_node();
    bind_memory(
        middle,
        &MemPolicy::Interleave([node.os_index()].into_iter().collect()),
        BindFlags::NONE,
    )
    .unwrap();
    let neighbour = &data[ps + 4000..ps + 4001];
    assert_eq!(
        memory_policy(neighbour).unwrap(),
        MemPolicy::Interleave([node.os_index()].into_iter().collect())
    );
    // The pages before and after keep the container's binding.
    assert_eq!(memory_policy(&data[..1]).unwrap(), MemPolicy::bind_to(node));
    assert_eq!(
        memory_policy(&data[2 * ps..]).unwrap(),
        MemPolicy::bind_to(node)
    );
    // A slice straddling a boundary counts both pages.
    assert_eq!(
        locate(&data[ps - 1..ps + 1], Sample::All).unwrap().pages(),
        2
    );
}

#[test]
fn full_and_sampled_queries_agree() {
    let node = first_node();
    let v = NodeVec::from_elem_on(3u64, 8 << 20, node).unwrap(); // 64 MiB
    let pages = v.len() * 8 / page_size();
    let full = v.locate(Sample::All).unwrap();
    let sampled = v.locate(Sample::default()).unwrap();
    assert_eq!(full.pages(), pages);
    assert_eq!(full.queried(), pages);
    assert_eq!(full.on_node(node), pages);
    assert_eq!(sampled.pages(), pages);
    assert_eq!(sampled.queried(), pages.div_ceil(16));
    assert_eq!(sampled.majority(), Some(node));
    let every_4 = locate(&v, Sample::Every(4.try_into().unwrap())).unwrap();
    assert_eq!(every_4.queried(), pages.div_ceil(4));
}

#[test]
fn heap_and_static_data_can_be_located_and_migrated_in_place() {
    static TABLE: [u64; 4096] = [7; 4096];
    let node = first_node();
    let loc = locate(&TABLE[..], Sample::All).unwrap();
    assert!(loc.pages() >= 8);
    let heap = vec![5u8; 1 << 20];
    let m = migrate(&heap, node).unwrap();
    assert!(m.complete(), "{m:?}");
    assert_eq!(m.already_there(), m.pages());
    assert!(heap.iter().all(|&b| b == 5));
}

#[test]
fn containers_know_their_home_without_a_syscall() {
    let node = first_node();
    let mut v = NodeVec::from_fn_on(10_000, node, |i| i).unwrap();
    assert_eq!(v.home(), Some(node));
    assert_eq!(v.node_of(9_999), Some(node));
    assert_eq!(v.node_of(10_000), None);
    let m = v.migrate_to(node).unwrap();
    assert_eq!((m.moved(), m.already_there()), (0, m.pages()));
    assert_eq!(*v.placement(), Placement::Node(node));
    let il =
        NodeVec::from_elem_on(0u8, 10, Placement::Interleave(mems_allowed().unwrap())).unwrap();
    if mems_allowed().unwrap().len() > 1 {
        assert_eq!(il.home(), None);
    }
}
